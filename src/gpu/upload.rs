//! Scene upload: the prepared arrays, materials, lights, textures and frame parameters as GPU
//! structs and storage buffers, each struct the `#[repr(C)]` twin of one in `shaders/shared/types.wgsl`.
//!
//! The accel records ([`QbvhNode`], [`MeshRecord`], [`InstanceRecord`], [`VdPatchRecord`])
//! are uploaded unchanged; the structs below are the GPU-only ones.
//! `tests/gpu_layout.rs` checks every pair against naga's layout of the WGSL file.

use std::collections::HashMap;

use super::kernel::{storage_buffer, write_storage};
use super::pool::GpuBuffer;
use bytemuck::{Pod, Zeroable};
use glam::Vec3;

use super::context::{GpuContext, GpuError};
use crate::accel::prepared::MESH_WALKED;
use crate::accel::{BvhLayout, DeviceBuild, Prepared};
use crate::render::gather::{IrradianceSample, ShadingPoint};
use crate::render::CameraModel;
use crate::scene::{EnvMap, FresnelMode, LightKind, MaterialKind, Sampler, Scene};

/// `GpuMaterial::kind` of a diffuse material.
pub const MATERIAL_DIFFUSE: u32 = 0;
/// `GpuMaterial::kind` of a mirror.
pub const MATERIAL_MIRROR: u32 = 1;
/// `GpuMaterial::kind` of a dielectric.
pub const MATERIAL_DIELECTRIC: u32 = 2;
/// `GpuMaterial::kind` of an emitter.
pub const MATERIAL_EMISSIVE: u32 = 3;
/// `GpuMaterial::kind` of a conductor.
pub const MATERIAL_CONDUCTOR: u32 = 4;
/// `GpuMaterial::kind` of a plastic.
pub const MATERIAL_PLASTIC: u32 = 5;
/// `GpuMaterial::flags` bit: the dielectric uses Schlick's Fresnel approximation.
pub const MATERIAL_FRESNEL_SCHLICK: u32 = 1;

/// `GpuLight::kind` values.
pub const LIGHT_POINT: u32 = 0;
pub const LIGHT_SPOT: u32 = 1;
pub const LIGHT_DIRECTIONAL: u32 = 2;
pub const LIGHT_QUAD: u32 = 3;
pub const LIGHT_MESH: u32 = 4;
/// A record after the lights that holds one triangle of a mesh light.
pub const LIGHT_MESH_TRIANGLE: u32 = 5;
/// An environment light; its map lies in the texel array ([`environment_texels`]).
pub const LIGHT_ENVIRONMENT: u32 = 6;
/// An emissive analytic sphere: `position` = centre (w = radius), `normal.w` = its area.
pub const LIGHT_SPHERE: u32 = 7;

/// "No index" in the GPU structs (no texture, a miss, a padding ray).
pub const NONE: u32 = u32::MAX;

/// A material; 64 bytes. WGSL twin: `struct Material` in shaders/shared/types.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuMaterial {
    pub kind: u32,
    pub texture: u32,
    pub ior: f32,
    /// `MATERIAL_FRESNEL_SCHLICK` or 0.
    pub flags: u32,
    /// Albedo, reflectance, tint (dielectric and conductor) or radiance (w unused).
    pub color: [f32; 4],
    /// A conductor's index, real part per channel (zero for other kinds); w: a rough
    /// conductor's, dielectric's or plastic coat's GGX width ([`MaterialKind::alpha`], 0 when
    /// smooth).
    pub eta: [f32; 4],
    /// A conductor's index, imaginary part per channel (w unused); a plastic's
    /// [`MaterialKind::plastic_constants`] in x and y; zero for other kinds.
    pub k: [f32; 4],
}

/// A light with the constants shading needs precomputed on the host (so that both backends
/// use the same `cos`, normalisations and areas); 112 bytes.
/// WGSL twin: `struct Light` in shaders/shared/types.wgsl (which documents the fields per kind).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuLight {
    pub kind: u32,
    pub samples: u32,
    pub cos_outer: f32,
    pub cos_inner: f32,
    /// A mesh light's triangles: records `first .. first + count` of the same array.
    pub first: u32,
    pub count: u32,
    pub _pad: [u32; 2],
    pub position: [f32; 4],
    pub direction: [f32; 4],
    pub edge_v: [f32; 4],
    pub normal: [f32; 4],
    pub color: [f32; 4],
}

/// A texture's place in the texel array; 16 bytes. WGSL twin: `struct Texture`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuTexture {
    pub offset: u32,
    pub width: u32,
    pub height: u32,
    pub _pad: u32,
    pub uv_scale: [f32; 2],
    pub uv_offset: [f32; 2],
}

/// The camera model, the film and the per-dispatch state; 160 bytes, a uniform.
/// WGSL twin: `struct FrameParams` in shaders/shared/types.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct FrameParams {
    /// Camera origin, w = lens radius.
    pub origin: [f32; 4],
    /// Unit right axis, w = half width of the image plane.
    pub right: [f32; 4],
    /// Unit up axis, w = half height.
    pub up: [f32; 4],
    /// Unit forward axis, w = focus distance.
    pub forward: [f32; 4],
    pub width: u32,
    pub height: u32,
    pub spp: u32,
    pub max_depth: u32,
    pub seed_lo: u32,
    pub seed_hi: u32,
    pub light_count: u32,
    /// Offset of secondary ray origins (the CPU tracer's scene-relative epsilon).
    pub epsilon: f32,
    /// Rays in the input queue of this dispatch.
    pub ray_count: u32,
    /// Specular depth of the rays in the input queue (0 for camera rays).
    pub bounce: u32,
    /// 1: camera rays through pixel and lens centres only (the `id` layer); 0: all samples.
    pub centre_rays: u32,
    /// Capacity of the output ray queue.
    pub ray_capacity: u32,
    /// Capacity of the shadow ray queue.
    pub shadow_capacity: u32,
    /// Nodes of the top-level QBVH (0 for an empty scene).
    pub top_node_count: u32,
    /// Deepest VD subdivision level, and the camera pixel's angle per unit distance (the
    /// footprint the VD levels are chosen from).
    pub vd_max_level: u32,
    pub vd_pixel_spread: f32,
    /// First ray of this dispatch (the shade stage runs over chunks of its queue).
    pub ray_offset: u32,
    /// The most shadow rays one diffuse hit emits (1 per point, spot or directional light,
    /// `samples` per quad light).
    pub shadows_per_hit: u32,
    /// Capacity of the VD record queue the trace kernels append to.
    pub vd_record_capacity: u32,
    /// The camera samples' sampler: [`SAMPLER_SOBOL`] or [`SAMPLER_INDEPENDENT`].
    pub sampler: u32,
    /// The pass's first sample (`render::plan::PassPlan::sample_start`): camera ray `s` of a
    /// pixel in this pass is sample `sample_offset + s` of the frame.
    pub sample_offset: u32,
    /// Samples per pixel in this pass (`spp` is the frame's, which the pixels divide by).
    pub pass_spp: u32,
    /// The pass's first tile: its camera rays cover tiles `tile_offset..` of the image.
    pub tile_offset: u32,
    /// The pixels `[crop_x0, crop_x1) × [crop_y0, crop_y1)` that get camera rays (`--crop`;
    /// the whole image without one): the others of the pass's tiles are left out like padding.
    pub crop_x0: u32,
    pub crop_y0: u32,
    pub crop_x1: u32,
    pub crop_y1: u32,
    pub _pad2: u32,
}

/// [`FrameParams::sampler`] for [`Sampler::Sobol`] (WGSL twin: `SAMPLER_SOBOL` in
/// shaders/shared/rng.wgsl).
pub const SAMPLER_SOBOL: u32 = 0;
/// [`FrameParams::sampler`] for [`Sampler::Independent`].
pub const SAMPLER_INDEPENDENT: u32 = 1;

/// A ray of the wavefront (ray `i` of a bounce is node `i` of that bounce's level of the shade
/// trees); 48 bytes. WGSL twin: `struct Ray`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuRay {
    pub origin: [f32; 3],
    /// Pixel index (`y * width + x`), or [`NONE`] for a padding ray.
    pub pixel: u32,
    pub dir: [f32; 3],
    pub sample: u32,
    /// Next dimension of the (pixel, sample) random stream.
    pub dimension: u32,
    pub _pad0: u32,
    pub _pad1: u32,
    pub _pad2: u32,
}

/// The closest hit of a ray; 24 bytes. WGSL twin: `struct Hit`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuHit {
    pub t: f32,
    /// [`NONE`] for a miss.
    pub instance: u32,
    pub prim: u32,
    /// For a VD patch hit, the octahedral unit object-space normal of the triangle hit
    /// (`accel::vd_bottom::oct_encode`); 0 otherwise.
    pub normal: u32,
    pub st: [f32; 2],
}

/// A shadow ray and the irradiance it brings to its shade-tree node when unblocked; 48 bytes.
/// WGSL twin: `struct ShadowRay`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuShadowRay {
    pub origin: [f32; 3],
    /// The node (ray index in its bounce) that receives the contribution.
    pub node: u32,
    pub dir: [f32; 3],
    pub t_max: f32,
    pub contribution: [f32; 3],
    pub _pad: u32,
}

/// Bits 30-31 of [`GpuShadeNode::link`]: a leaf (miss, emitter, light, or a specular hit at the
/// last bounce).
pub const NODE_LEAF: u32 = 0;
/// A diffuse hit: `own` is its direct light.
pub const NODE_DIFFUSE: u32 = 1;
/// One child (mirror, total internal reflection, lone refraction) weighted by `weight`.
pub const NODE_ONE_CHILD: u32 = 2;
/// Two children, reflected then refracted, weighted `fresnel` and `(1 - fresnel) * weight`.
pub const NODE_TWO_CHILDREN: u32 = 3;

/// One node of a shade tree; 32 bytes. WGSL twin: `struct ShadeNode` (which documents the fields).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuShadeNode {
    pub own: [f32; 3],
    /// State (bits 30-31, `NODE_*`) and the first child's index in the next level (bits 0-29).
    pub link: u32,
    pub weight: [f32; 3],
    pub fresnel: f32,
}

/// A ray of the ray-throughput benchmark (`gpu::raybench`); 32 bytes. WGSL twin: `struct BenchRay`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuBenchRay {
    pub origin: [f32; 3],
    pub t_max: f32,
    pub dir: [f32; 3],
    /// 1: any hit (shadow ray); 0: closest hit.
    pub any_hit: u32,
}

/// What one camera sample saw first (all zero for a miss); 64 bytes. WGSL twin:
/// `struct FirstHit`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuFirstHit {
    pub albedo: [f32; 3],
    /// 1 for a hit, 0 for a miss: summed, the pixel's coverage (alpha).
    pub hit: f32,
    /// The shading normal.
    pub normal: [f32; 3],
    pub _pad0: u32,
    pub geometric: [f32; 3],
    pub _pad1: u32,
    pub position: [f32; 3],
    pub _pad2: u32,
}

/// The scene on the GPU: one storage buffer per flat array, named like the WGSL globals.
pub struct SceneBuffers {
    pub positions: GpuBuffer,
    pub normals: GpuBuffer,
    pub uvs: GpuBuffer,
    pub triangles: GpuBuffer,
    pub quads: GpuBuffer,
    pub meshes: GpuBuffer,
    pub mesh_nodes: GpuBuffer,
    pub prim_refs: GpuBuffer,
    /// The three vertices of each triangle, in the order of `prim_refs` (3 × vec4 per reference;
    /// zeros for quads and patches), so that a leaf test reads its triangle without following
    /// the reference and the index triple first.
    pub leaf_triangles: GpuBuffer,
    pub instances: GpuBuffer,
    pub top_nodes: GpuBuffer,
    pub top_instance_refs: GpuBuffer,
    pub merged_prims: GpuBuffer,
    pub merged_members: GpuBuffer,
    pub vd_patches: GpuBuffer,
    /// The two-level grids of the `--accel grid` meshes (`Prepared::grid_cells`).
    pub grid_cells: GpuBuffer,
    pub materials: GpuBuffer,
    pub lights: GpuBuffer,
    pub textures: GpuBuffer,
    pub texels: GpuBuffer,
    /// Bytes of the scene's arrays on the device.
    pub bytes: u64,
    /// Bytes written to the device for them by the call that returned these buffers.
    pub uploaded: u64,
}

impl SceneBuffers {
    /// `(WGSL name, buffer)` for every array: pick the ones a kernel binds with [`SceneBuffers::named`].
    pub fn all(&self) -> [(&'static str, &GpuBuffer); 20] {
        [
            ("positions", &self.positions),
            ("normals", &self.normals),
            ("uvs", &self.uvs),
            ("triangles", &self.triangles),
            ("quads", &self.quads),
            ("meshes", &self.meshes),
            ("mesh_nodes", &self.mesh_nodes),
            ("prim_refs", &self.prim_refs),
            ("leaf_triangles", &self.leaf_triangles),
            ("instances", &self.instances),
            ("top_nodes", &self.top_nodes),
            ("top_instance_refs", &self.top_instance_refs),
            ("merged_prims", &self.merged_prims),
            ("merged_members", &self.merged_members),
            ("vd_patches", &self.vd_patches),
            ("grid_cells", &self.grid_cells),
            ("materials", &self.materials),
            ("lights", &self.lights),
            ("textures", &self.textures),
            ("texels", &self.texels),
        ]
    }

    /// The buffers called `names`, for [`Kernel::bind`](super::Kernel::bind).
    pub fn named<'a>(&'a self, names: &[&str]) -> Vec<(&'static str, &'a GpuBuffer)> {
        self.all()
            .into_iter()
            .filter(|(n, _)| names.contains(n))
            .collect()
    }
}

/// A storage buffer holding `data`, with at least one (zeroed) element so that an empty array
/// still binds with the size of one WGSL element. Refuses arrays over the binding limit.
pub fn upload_array<T: Pod + Zeroable>(
    ctx: &GpuContext,
    label: &str,
    data: &[T],
) -> Result<GpuBuffer, GpuError> {
    let one = [T::zeroed()];
    let data = if data.is_empty() { &one[..] } else { data };
    super::kernel::storage_buffer(ctx, label, data)
}

fn vec4(v: Vec3, w: f32) -> [f32; 4] {
    [v.x, v.y, v.z, w]
}

/// The materials of `scene` as GPU records.
pub fn gpu_materials(scene: &Scene) -> Vec<GpuMaterial> {
    scene
        .materials
        .iter()
        .map(|m| {
            let (kind, texture, ior, color) = match &m.kind {
                MaterialKind::Diffuse { albedo, texture } => {
                    (MATERIAL_DIFFUSE, texture.unwrap_or(NONE), 1.0, *albedo)
                }
                MaterialKind::Mirror { reflectance } => (MATERIAL_MIRROR, NONE, 1.0, *reflectance),
                MaterialKind::Dielectric { ior, tint, .. } => {
                    (MATERIAL_DIELECTRIC, NONE, *ior, *tint)
                }
                MaterialKind::Conductor { tint, texture, .. } => {
                    (MATERIAL_CONDUCTOR, texture.unwrap_or(NONE), 1.0, *tint)
                }
                MaterialKind::Plastic {
                    albedo,
                    texture,
                    ior,
                    ..
                } => (MATERIAL_PLASTIC, texture.unwrap_or(NONE), *ior, *albedo),
                MaterialKind::Emissive { radiance, .. }
                | MaterialKind::LightSurface { radiance } => {
                    (MATERIAL_EMISSIVE, NONE, 1.0, *radiance)
                }
            };
            let flags = match m.kind {
                MaterialKind::Dielectric {
                    fresnel: FresnelMode::Schlick,
                    ..
                } => MATERIAL_FRESNEL_SCHLICK,
                _ => 0,
            };
            let (eta, k) = match m.kind {
                MaterialKind::Conductor { eta, k, .. } => (eta, k),
                _ => match m.kind.plastic_constants() {
                    Some((scale, transmit)) => (Vec3::ZERO, Vec3::new(scale, transmit, 0.0)),
                    None => (Vec3::ZERO, Vec3::ZERO),
                },
            };
            GpuMaterial {
                kind,
                texture,
                ior,
                flags,
                color: vec4(color, 0.0),
                eta: vec4(eta, m.kind.alpha().unwrap_or(0.0)),
                k: vec4(k, 0.0),
            }
        })
        .collect()
}

/// The lights of `scene` as GPU records, with the same derived constants as the CPU tracer.
pub fn gpu_lights(scene: &Scene) -> Vec<GpuLight> {
    let four_pi = 4.0 * std::f32::consts::PI;
    let mut triangles = Vec::new();
    let mut lights: Vec<GpuLight> = scene
        .lights
        .iter()
        .map(|light| match light.kind {
            LightKind::Point { position, power } => GpuLight {
                kind: LIGHT_POINT,
                position: vec4(position, 1.0),
                color: vec4(power / four_pi, 0.0),
                ..Default::default()
            },
            LightKind::Spot {
                position,
                direction,
                power,
                cone_inner_deg,
                cone_outer_deg,
            } => GpuLight {
                kind: LIGHT_SPOT,
                cos_outer: cone_outer_deg.to_radians().cos(),
                cos_inner: cone_inner_deg.to_radians().cos(),
                position: vec4(position, 1.0),
                direction: vec4(direction.normalize_or_zero(), 0.0),
                // The CPU divides power·falloff by 4π; the kernel multiplies this by the falloff.
                color: vec4(power, 0.0),
                ..Default::default()
            },
            LightKind::Directional {
                direction,
                irradiance,
                angle_deg,
            } => GpuLight {
                kind: LIGHT_DIRECTIONAL,
                cos_outer: crate::scene::directional_cos_max(angle_deg),
                direction: vec4(-direction.normalize_or_zero(), 0.0),
                color: vec4(irradiance, 0.0),
                ..Default::default()
            },
            LightKind::Quad {
                corner,
                edge_u,
                edge_v,
                radiance,
                samples,
            } => {
                let normal_area = edge_u.cross(edge_v);
                let area = normal_area.length();
                let unit = if area > 0.0 {
                    normal_area / area
                } else {
                    Vec3::ZERO
                };
                GpuLight {
                    kind: LIGHT_QUAD,
                    samples: samples.max(1),
                    position: vec4(corner, 1.0),
                    direction: vec4(edge_u, 0.0),
                    edge_v: vec4(edge_v, 0.0),
                    normal: vec4(unit, area),
                    color: vec4(radiance, 0.0),
                    ..Default::default()
                }
            }
            LightKind::Mesh {
                ref emitter,
                radiance,
                samples,
                ..
            } => {
                let first = triangles.len() as u32;
                triangles.extend(emitter.triangles.iter().map(|t| GpuLight {
                    kind: LIGHT_MESH_TRIANGLE,
                    position: vec4(t.p0, 1.0),
                    direction: vec4(t.e1, 0.0),
                    edge_v: vec4(t.e2, 0.0),
                    normal: vec4(t.normal, t.cdf),
                    ..Default::default()
                }));
                GpuLight {
                    kind: LIGHT_MESH,
                    samples: samples.max(1),
                    first,
                    count: emitter.triangles.len() as u32,
                    normal: vec4(Vec3::ZERO, emitter.area),
                    color: vec4(radiance, 0.0),
                    ..Default::default()
                }
            }
            LightKind::Sphere {
                sphere,
                radiance,
                samples,
                ..
            } => GpuLight {
                kind: LIGHT_SPHERE,
                samples: samples.max(1),
                position: vec4(sphere.centre, sphere.radius),
                normal: vec4(Vec3::ZERO, sphere.area()),
                color: vec4(radiance, 0.0),
                ..Default::default()
            },
            LightKind::Environment(ref env) => GpuLight {
                kind: LIGHT_ENVIRONMENT,
                samples: env.samples.max(1),
                first: scene.texture_texel_count() as u32,
                count: env.map.width,
                _pad: [env.map.height, 0],
                // The columns of map-to-world: their dot products turn world into map space.
                direction: vec4(env.to_world.x_axis, 0.0),
                edge_v: vec4(env.to_world.y_axis, 0.0),
                normal: vec4(env.to_world.z_axis, 0.0),
                color: vec4(Vec3::splat(env.scale), 0.0),
                ..Default::default()
            },
        })
        .collect();
    // The mesh lights' triangles follow the lights.
    let count = lights.len() as u32;
    for light in &mut lights {
        if light.kind == LIGHT_MESH {
            light.first += count;
        }
    }
    lights.extend(triangles);
    lights
}

/// The textures of `scene`: records and the texels of all of them, concatenated, followed by
/// the environment map's ([`environment_texels`]).
pub fn gpu_textures(scene: &Scene) -> (Vec<GpuTexture>, Vec<[f32; 4]>) {
    let records = gpu_texture_records(scene);
    let mut texels = Vec::with_capacity(scene.texture_texel_count());
    for t in &scene.textures {
        texels.extend(t.image.texels.iter().map(|c| vec4(*c, 1.0)));
    }
    if let Some(env) = scene.environment() {
        texels.extend(environment_texels(&env.map));
    }
    (records, texels)
}

/// An environment map in the texel array, at the offset its light record names: `width ×
/// height` texels (rgb = radiance, w = the row's conditional CDF), then one per row (w = the
/// marginal CDF). Read by `shaders/shared/environment.wgsl`.
pub fn environment_texels(map: &EnvMap) -> impl Iterator<Item = [f32; 4]> + '_ {
    let texels = map
        .texels
        .iter()
        .zip(&map.conditional)
        .map(|(c, cdf)| vec4(*c, *cdf));
    texels.chain(map.marginal.iter().map(|m| [0.0, 0.0, 0.0, *m]))
}

/// The records of [`gpu_textures`] alone: each texture's place in the texels, size and UV
/// transform.
pub fn gpu_texture_records(scene: &Scene) -> Vec<GpuTexture> {
    let mut offset = 0usize;
    scene
        .textures
        .iter()
        .map(|t| {
            let record = GpuTexture {
                offset: offset as u32,
                width: t.image.width,
                height: t.image.height,
                _pad: 0,
                uv_scale: t.uv_scale.to_array(),
                uv_offset: t.uv_offset.to_array(),
            };
            offset += t.image.texels.len();
            record
        })
        .collect()
}

/// The frame parameters of `scene`: camera, film, seed, and the scene-relative offset of
/// secondary rays (`epsilon`, computed like the CPU tracer's). Per-dispatch fields are zero.
pub fn frame_params(scene: &Scene, prepared: &Prepared) -> FrameParams {
    let camera = CameraModel::new(&scene.camera, &scene.film);
    let seed = scene.film.seed;
    let [crop_x0, crop_y0, crop_x1, crop_y1] =
        scene
            .film
            .crop_pixels()
            .unwrap_or([0, 0, camera.width, camera.height]);
    FrameParams {
        crop_x0,
        crop_y0,
        crop_x1,
        crop_y1,
        origin: vec4(camera.origin, camera.lens_radius),
        right: vec4(camera.right, camera.half_width),
        up: vec4(camera.up, camera.half_height),
        forward: vec4(camera.forward, camera.focus_distance),
        width: camera.width,
        height: camera.height,
        spp: scene.film.spp.max(1),
        pass_spp: scene.film.spp.max(1),
        max_depth: scene.film.max_depth,
        seed_lo: seed as u32,
        seed_hi: (seed >> 32) as u32,
        light_count: scene.lights.len() as u32,
        epsilon: prepared.ray_epsilon(),
        top_node_count: prepared.top_node_count() as u32,
        vd_max_level: prepared.vd_max_level,
        vd_pixel_spread: prepared.vd_pixel_spread,
        shadows_per_hit: shadows_per_hit(scene),
        sampler: match scene.film.sampler {
            Sampler::Sobol => SAMPLER_SOBOL,
            Sampler::Independent => SAMPLER_INDEPENDENT,
        },
        ..Default::default()
    }
}

/// The most shadow rays one diffuse hit emits: one per point, spot and directional light,
/// `samples` per quad light of non-zero area, per mesh light and per environment light.
pub fn shadows_per_hit(scene: &Scene) -> u32 {
    scene
        .lights
        .iter()
        .map(|l| match l.kind {
            LightKind::Quad {
                edge_u,
                edge_v,
                samples,
                ..
            } => {
                if edge_u.cross(edge_v).length() > 0.0 {
                    samples.max(1)
                } else {
                    0
                }
            }
            LightKind::Mesh { samples, .. } | LightKind::Sphere { samples, .. } => samples.max(1),
            LightKind::Environment(ref env) => env.samples.max(1),
            _ => 1,
        })
        .sum()
}

/// Uploads every array of `prepared` and the materials, lights and textures of `scene`.
/// An array larger than one storage binding allows is refused with an error naming it.
/// The vertices of each referenced triangle in `prim_refs` order, for [`SceneBuffers::leaf_triangles`].
/// Zeros for the meshes the device builds ([`Prepared::device_builds`]), which it writes itself.
pub fn leaf_triangles(p: &Prepared) -> Vec<[f32; 4]> {
    let mut out = vec![[0.0f32; 4]; p.prim_refs.len() * 3];
    let on_device: std::collections::HashSet<u32> =
        p.device_builds.iter().map(|b| b.mesh).collect();
    for (m, mesh) in p.meshes.iter().enumerate() {
        // A merged mesh's members have no references of their own, nor has a grid (it holds
        // its own).
        if on_device.contains(&(m as u32)) || mesh.node_count == 0 || mesh.flags & MESH_WALKED != 0
        {
            continue;
        }
        let count = (mesh.triangle_count + mesh.quad_count) as usize;
        for slot in mesh.prim_ref_offset as usize..mesh.prim_ref_offset as usize + count {
            let prim = p.prim_refs[slot];
            if prim < mesh.triangle_count {
                let tri = p.triangles[(mesh.triangle_offset + prim) as usize];
                for k in 0..3 {
                    out[slot * 3 + k] = p.positions[tri[k] as usize];
                }
            }
        }
    }
    out
}

/// Whether `prepared`'s kernels trace with the loop of a top level that holds one instance
/// (`ONE_INSTANCE` in `shared/traverse_wide.wgsl`): the wide layout, one instance to enter (a
/// scene of one mesh, or of one file's parts merged into one tree). The loop leaves out the
/// fused loop's top-level state; it finds the same hits.
pub fn one_instance_loop(prepared: &Prepared) -> bool {
    prepared.layout == BvhLayout::Wide && prepared.top_instance_refs.len() == 1
}

/// Whether `prepared`'s kernels need the walks of the middle levels that are not trees (`GRID`
/// in `shared/traverse.wgsl`): some mesh's middle level is a two-level grid or a kd-tree
/// (`--accel grid`, `--accel kdtree`).
pub fn grid_walk(prepared: &Prepared) -> bool {
    prepared.meshes.iter().any(|m| m.flags & MESH_WALKED != 0)
}

/// Uploads `scene` and its hierarchy into fresh buffers (tests and benchmarks; the frame driver
/// keeps a [`ResidentScene`]).
pub fn upload_scene(
    ctx: &GpuContext,
    scene: &Scene,
    prepared: &Prepared,
) -> Result<SceneBuffers, GpuError> {
    ResidentScene::default().update(ctx, scene, prepared)
}

/// The scene's arrays kept on the device from frame to frame: an array is uploaded again only
/// when its bytes changed (compared by their 128-bit XXH3 hash), into the same buffer when its
/// size did not change. An animation whose meshes stay the same uploads only what moved: the
/// instances, the top level, the lights and the materials that changed.
/// Texels are the largest array (a textured scene holds tens of megabytes of them) and the
/// images are shared from frame to frame: while a frame's textures and environment map are the
/// very images of the last (the same `Arc`s, kept here so that none is freed and replaced at its address), the
/// texels are neither gathered nor hashed again.
#[derive(Default)]
pub struct ResidentScene {
    arrays: HashMap<&'static str, (u128, GpuBuffer)>,
    texel_images: Vec<std::sync::Arc<crate::scene::TextureImage>>,
    texel_environment: Option<std::sync::Arc<EnvMap>>,
    /// The trees the device built into `mesh_nodes` and `prim_refs` (or grids into
    /// `grid_cells`), by mesh: the key each was built from and its node and reference offsets.
    /// Forgotten when those arrays (or `leaf_triangles`) are written again.
    device_trees: HashMap<u32, (u128, u32, u32)>,
    /// What `leaf_triangles` was last made from: the hashes of the positions, triangles,
    /// meshes and references it gathers, and the meshes the device builds. While they are the
    /// same, the array is neither made nor hashed again (for the dragon's 871K triangles that
    /// was tens of milliseconds of host time a frame).
    leaf_inputs: Option<u128>,
}

impl ResidentScene {
    /// The scene's buffers for this frame, uploading what changed since the last call. Only
    /// between frames: an array written in place must not be in use on the device.
    pub fn update(
        &mut self,
        ctx: &GpuContext,
        scene: &Scene,
        prepared: &Prepared,
    ) -> Result<SceneBuffers, GpuError> {
        let materials = gpu_materials(scene);
        let lights = gpu_lights(scene);
        let textures = gpu_texture_records(scene);
        let same_images = self.texel_images.len() == scene.textures.len()
            && self
                .texel_images
                .iter()
                .zip(&scene.textures)
                .all(|(kept, t)| std::sync::Arc::ptr_eq(kept, &t.image))
            && match (&self.texel_environment, scene.environment()) {
                (Some(kept), Some(env)) => std::sync::Arc::ptr_eq(kept, &env.map),
                (None, None) => true,
                _ => false,
            };
        let kept_texels = self
            .arrays
            .get("texels")
            .filter(|_| same_images)
            .map(|(_, buffer)| buffer.clone());
        let p = prepared;
        let (mut bytes, mut uploaded) = (0u64, 0u64);
        let mut middle_written = false;
        macro_rules! array {
            ($label:literal, $data:expr) => {{
                let (buffer, written) = self.array(ctx, $label, $data)?;
                bytes += buffer.size();
                uploaded += written;
                if written > 0
                    && matches!(
                        $label,
                        "mesh_nodes" | "prim_refs" | "leaf_triangles" | "grid_cells"
                    )
                {
                    middle_written = true;
                }
                buffer
            }};
        }
        let buffers = SceneBuffers {
            positions: array!("positions", &p.positions),
            normals: array!("normals", &p.normals),
            uvs: array!("uvs", &p.uvs),
            triangles: array!("triangles", &p.triangles),
            quads: array!("quads", &p.quads),
            meshes: array!("meshes", &p.meshes),
            mesh_nodes: match p.layout {
                BvhLayout::Wide => array!("mesh_nodes", &p.mesh_wide),
                BvhLayout::Qbvh | BvhLayout::Binary => array!("mesh_nodes", &p.mesh_nodes),
            },
            prim_refs: array!("prim_refs", &p.prim_refs),
            leaf_triangles: {
                let inputs = self.leaf_inputs_key(p);
                match self.arrays.get("leaf_triangles") {
                    Some((_, buffer)) if self.leaf_inputs == Some(inputs) => {
                        bytes += buffer.size();
                        buffer.clone()
                    }
                    _ => {
                        self.leaf_inputs = Some(inputs);
                        array!("leaf_triangles", &leaf_triangles(p))
                    }
                }
            },
            instances: array!("instances", &p.instances),
            top_nodes: match p.layout {
                BvhLayout::Wide => array!("top_nodes", &p.top_wide),
                BvhLayout::Qbvh | BvhLayout::Binary => array!("top_nodes", &p.top_nodes),
            },
            top_instance_refs: array!("top_instance_refs", &p.top_instance_refs),
            merged_prims: array!("merged_prims", &p.merged_prims),
            merged_members: array!("merged_members", &p.merged_members),
            vd_patches: array!("vd_patches", &p.vd_patches),
            grid_cells: array!("grid_cells", &p.grid_cells),
            materials: array!("materials", &materials),
            lights: array!("lights", &lights),
            textures: array!("textures", &textures),
            texels: match kept_texels {
                Some(buffer) => {
                    bytes += buffer.size();
                    buffer
                }
                None => {
                    let (_, texels) = gpu_textures(scene);
                    self.texel_images = scene.textures.iter().map(|t| t.image.clone()).collect();
                    self.texel_environment = scene.environment().map(|e| e.map.clone());
                    array!("texels", &texels)
                }
            },
            bytes,
            uploaded,
        };
        // Writing `mesh_nodes`, `prim_refs`, `leaf_triangles` or `grid_cells` overwrote the trees the device
        // built itself.
        if middle_written {
            self.device_trees.clear();
        }
        Ok(buffers)
    }

    /// The device builds of `prepared` whose trees the arrays do not hold yet (all of them
    /// after the arrays were written again): the ones [`ResidentScene::device_trees_built`]
    /// has not recorded with the same key and offsets.
    pub fn stale_device_builds<'p>(&self, prepared: &'p Prepared) -> Vec<&'p DeviceBuild> {
        prepared
            .device_builds
            .iter()
            .filter(|b| self.device_trees.get(&b.mesh) != Some(&device_tree(prepared, b)))
            .collect()
    }

    /// Records that the arrays now hold the trees of `builds`.
    pub fn device_trees_built(&mut self, prepared: &Prepared, builds: &[&DeviceBuild]) {
        for b in builds {
            self.device_trees.insert(b.mesh, device_tree(prepared, b));
        }
    }

    /// The buffer of array `label` holding `data` (one zeroed element when empty, so that it
    /// still binds), and the bytes written to the device for it.
    /// The key of what [`leaf_triangles`] reads of `p`, from the hashes [`Self::array`] kept of
    /// the arrays it reads (call it after those are uploaded).
    fn leaf_inputs_key(&self, p: &Prepared) -> u128 {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        for label in ["positions", "triangles", "meshes", "prim_refs"] {
            let hash = self.arrays.get(label).map_or(0, |(hash, _)| *hash);
            h.update(&hash.to_le_bytes());
        }
        for build in &p.device_builds {
            h.update(&build.mesh.to_le_bytes());
        }
        h.digest128()
    }

    fn array<T: Pod + Zeroable>(
        &mut self,
        ctx: &GpuContext,
        label: &'static str,
        data: &[T],
    ) -> Result<(GpuBuffer, u64), GpuError> {
        let one = [T::zeroed()];
        let data = if data.is_empty() { &one[..] } else { data };
        let bytes: &[u8] = bytemuck::cast_slice(data);
        let hash = xxhash_rust::xxh3::xxh3_128(bytes);
        let size = (bytes.len() as u64).max(4).next_multiple_of(4);
        let buffer = match self.arrays.get(label) {
            Some((h, b)) if *h == hash && b.size() == size => return Ok((b.clone(), 0)),
            Some((_, b)) if b.size() == size => {
                let b = b.clone();
                write_storage(ctx, &b, bytes);
                b
            }
            _ => storage_buffer(ctx, label, data)?,
        };
        self.arrays.insert(label, (hash, buffer.clone()));
        Ok((buffer, size))
    }
}

/// What a device-built tree is recorded by: its key and where it lies in the arrays.
fn device_tree(prepared: &Prepared, build: &DeviceBuild) -> (u128, u32, u32) {
    let mesh = &prepared.meshes[build.mesh as usize];
    (build.key, mesh.node_offset, mesh.prim_ref_offset)
}

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
    /// The translational gradient of the red, green and blue irradiance (xyz; w unused).
    pub gradient: [[f32; 4]; 3],
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
            gradient: s.gradient.map(|g| g.extend(0.0).to_array()),
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
            gradient: s.gradient.map(|g| Vec3::new(g[0], g[1], g[2])),
        }
    }
}

/// `apply_components` modes (`compose_mode` in `shaders/gather/compose.wgsl`).
pub const COMPOSE_ADD: u32 = 0;
pub const COMPOSE_CAUSTIC: u32 = 1;
pub const COMPOSE_INDIRECT: u32 = 2;
