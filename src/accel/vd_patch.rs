//! VD patches in the middle level: their records and conservative bounds, and the Morton and
//! complete-tree helpers shared with the bottom level ([`super::vd_bottom`]).

use bytemuck::{Pod, Zeroable};
use glam::Vec3;

use super::aabb::Aabb;
use crate::scene::VdMap;

/// One VD patch; 48 bytes, three vec4s.
///
/// ```text
/// offset  0: bounds_min: vec3<f32>   conservative object-space bounds (base quad AABB grown by
/// offset 12: map: u32                  the map's largest displacement + padding): what the
/// offset 16: bounds_max: vec3<f32>     middle level holds; map: index into the scene's VD maps
/// offset 28: mesh: u32               mesh index
/// offset 32: quad: u32               quad index within the mesh (prim = triangle count + quad)
/// offset 36: _pad: [u32; 3]
/// ```
/// WGSL twin: `struct VdPatch { bounds_min: vec3<f32>, map: u32, bounds_max: vec3<f32>,
/// mesh: u32, quad: u32, _pad: array<u32, 3> }`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct VdPatchRecord {
    pub bounds_min: [f32; 3],
    pub map: u32,
    pub bounds_max: [f32; 3],
    pub mesh: u32,
    pub quad: u32,
    pub _pad: [u32; 3],
}

impl VdPatchRecord {
    pub fn bounds(&self) -> Aabb {
        Aabb::new(
            Vec3::from_array(self.bounds_min),
            Vec3::from_array(self.bounds_max),
        )
    }
}

/// The conservative bounds of a VD patch (paper 000 section 1.5.2): the base quad's AABB grown
/// in every direction by `reach`, the largest displacement of its surface (the map's over the
/// patch's UVs, [`VdMap::max_displacement`], or a neighbour's that defines part of its boundary,
/// see [`super::vd_seams`]), plus the map's padding.
pub fn vd_patch_bounds(map: &VdMap, corners: &[Vec3; 4], reach: f32) -> Aabb {
    let margin = reach + map.padding.max(0.0);
    Aabb::from_points(corners.iter().copied()).expanded(margin)
}

/// Number of nodes of a complete 4-ary tree with `levels` levels below the root.
pub fn complete_tree_nodes(levels: u32) -> usize {
    ((1usize << (2 * (levels + 1))) - 1) / 3
}

/// Splits a Morton code into its (even bits, odd bits) as cell coordinates.
pub fn morton_decode(m: u32) -> (u32, u32) {
    fn compact(mut v: u32) -> u32 {
        v &= 0x5555_5555;
        v = (v | (v >> 1)) & 0x3333_3333;
        v = (v | (v >> 2)) & 0x0f0f_0f0f;
        v = (v | (v >> 4)) & 0x00ff_00ff;
        (v | (v >> 8)) & 0x0000_ffff
    }
    (compact(m), compact(m >> 1))
}
