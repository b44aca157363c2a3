//! Photon mapping's second half on the GPU: the structs shared with the kernels (the stages
//! themselves are in `gpu::seeding`, `gpu::irradiance` and the pipeline).

use bytemuck::{Pod, Zeroable};
use glam::Vec3;

use crate::render::gather::{IrradianceSample, ShadingPoint};

/// A diffuse hit of a shade tree. Twin of `ShadingPoint` in `shaders/shared/gather_types.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuShadingPoint {
    pub position: [f32; 3],
    /// `y · width + x` of the path's pixel.
    pub pixel: u32,
    /// The shading normal turned towards the viewer.
    pub normal: [f32; 3],
    /// The shade node (`level << 26 | index`), for the pipeline.
    pub node: u32,
}

impl GpuShadingPoint {
    pub fn from_point(p: &ShadingPoint, node: u32) -> GpuShadingPoint {
        GpuShadingPoint {
            position: p.position.to_array(),
            pixel: p.pixel,
            normal: p.normal.to_array(),
            node,
        }
    }
}

/// An irradiance sample. Twin of `IrradianceSample` in `shaders/shared/gather_types.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuIrradianceSample {
    pub position: [f32; 3],
    pub radius: f32,
    pub normal: [f32; 3],
    pub _pad0: u32,
    pub irradiance: [f32; 3],
    pub _pad1: u32,
}

impl From<&IrradianceSample> for GpuIrradianceSample {
    fn from(s: &IrradianceSample) -> GpuIrradianceSample {
        GpuIrradianceSample {
            position: s.position.to_array(),
            radius: s.radius,
            normal: s.normal.to_array(),
            _pad0: 0,
            irradiance: s.irradiance.to_array(),
            _pad1: 0,
        }
    }
}

impl From<&GpuIrradianceSample> for IrradianceSample {
    fn from(s: &GpuIrradianceSample) -> IrradianceSample {
        IrradianceSample {
            position: Vec3::from_array(s.position),
            normal: Vec3::from_array(s.normal),
            irradiance: Vec3::from_array(s.irradiance),
            radius: s.radius,
        }
    }
}
