// The structs shared between the host and the kernels. Every struct here has a #[repr(C)] twin
// (the accel records in src/accel/, the rest in src/gpu/upload.rs), and tests/gpu_layout.rs
// checks with naga that their sizes and member offsets are equal.

// Twin of accel::QbvhNode: bounds, first child / first primitive reference, leaf bit + count.
struct QbvhNode {
    bounds_min: vec3<f32>,
    first: u32,
    bounds_max: vec3<f32>,
    meta_bits: u32, // `meta` on the Rust side (a reserved word in WGSL)
}

// Twin of accel::WideNode: the 8-wide compressed node (src/accel/wide.rs has the encoding).
struct WideNode {
    origin: vec3<f32>,
    exps_imask: u32,
    child_base: u32,
    prim_base: u32,
    meta_bits: vec2<u32>, // `meta` on the Rust side: one byte per slot
    q: array<vec4<u32>, 3>, // lo_x, lo_y, lo_z, hi_x, hi_y, hi_z: two words each
}

// Twin of accel::MeshRecord.
struct MeshRecord {
    vertex_offset: u32,
    vertex_count: u32,
    triangle_offset: u32,
    triangle_count: u32,
    quad_offset: u32,
    quad_count: u32,
    node_offset: u32,
    node_count: u32,
    prim_ref_offset: u32,
    vd_patch_offset: u32,
    flags: u32,
    depth: u32,
}

// Twin of accel::InstanceRecord: rows of the 3x4 object-to-world and world-to-object matrices.
struct Instance {
    object_to_world: array<vec4<f32>, 3>,
    world_to_object: array<vec4<f32>, 3>,
    mesh: u32,
    material: u32,
    light: u32, // the area light whose surface it is, NONE for none
    members: u32, // a merged group's first scene instance in merged_members, NONE for a scene instance
}

// Twin of accel::VdPatchRecord.
struct VdPatch {
    bounds_min: vec3<f32>,
    map: u32,
    bounds_max: vec3<f32>,
    mesh: u32,
    quad: u32,
    _pad: array<u32, 3>,
}

// Twin of gpu::upload::GpuMaterial. kind: 0 diffuse, 1 mirror, 2 dielectric, 3 emissive,
// 4 conductor. color: albedo, reflectance, tint (dielectric, conductor) or radiance; texture:
// index or 0xffffffff; flags: MATERIAL_FRESNEL_SCHLICK; eta, k: a conductor's complex index;
// eta.w: a rough conductor's, dielectric's or plastic coat's GGX width α (0: smooth;
// shared/rough.wgsl); a plastic (kind 5, shared/plastic.wgsl): color its base albedo, k.x and
// k.y its base constants.
// Every emitter is a light (a quad light's surface or an emissive instance), black to gather rays.
struct Material {
    kind: u32,
    texture: u32,
    ior: f32,
    flags: u32,
    color: vec4<f32>,
    eta: vec4<f32>,
    k: vec4<f32>,
}

const MATERIAL_MIRROR: u32 = 1u;
const MATERIAL_DIELECTRIC: u32 = 2u;
const MATERIAL_CONDUCTOR: u32 = 4u;
const MATERIAL_PLASTIC: u32 = 5u;
const MATERIAL_FRESNEL_SCHLICK: u32 = 1u;
const LIGHT_MESH: u32 = 4u;
const LIGHT_MESH_TRIANGLE: u32 = 5u;
const LIGHT_ENVIRONMENT: u32 = 6u;
const LIGHT_SPHERE: u32 = 7u;

// Twin of gpu::upload::GpuLight. kind: 0 point, 1 spot, 2 directional, 3 quad, 4 mesh, 5 one
// triangle of a mesh light (after the first params.light_count records), 6 environment, 7 sphere.
// point/spot: position, color = intensity (power / 4pi), direction = unit spot axis;
// directional: direction = unit direction towards the light, color = irradiance;
// quad: position = corner, direction = edge_u, edge_v, normal = unit normal (w = area), color = radiance;
// mesh: its triangles are records first .. first + count, normal.w = area, color = radiance;
// mesh triangle: position = p0, direction = e1, edge_v = e2, normal = unit normal (w = the area
// fraction up to and including it);
// environment: first = the map's texel offset, count = width, _pad.x = height, direction /
// edge_v / normal = the columns of map-to-world, color = scale (shared/environment.wgsl);
// sphere (7): position = centre (w = radius), normal.w = area, color = radiance.
struct Light {
    kind: u32,
    samples: u32,
    cos_outer: f32,
    cos_inner: f32,
    first: u32,
    count: u32,
    _pad: vec2<u32>,
    position: vec4<f32>,
    direction: vec4<f32>,
    edge_v: vec4<f32>,
    normal: vec4<f32>,
    color: vec4<f32>,
}

// Twin of gpu::upload::GpuTexture: texels[offset .. offset + width * height], rows from the top,
// looked up at uv * uv_scale + uv_offset.
struct Texture {
    offset: u32,
    width: u32,
    height: u32,
    _pad: u32,
    uv_scale: vec2<f32>,
    uv_offset: vec2<f32>,
}

// Twin of gpu::upload::FrameParams: the camera model, the film and the state of one dispatch.
struct FrameParams {
    origin: vec4<f32>,   // w: lens radius
    right: vec4<f32>,    // w: half width of the image plane at distance 1
    up: vec4<f32>,       // w: half height
    forward: vec4<f32>,  // w: focus distance
    width: u32,
    height: u32,
    spp: u32,
    max_depth: u32,
    seed_lo: u32,
    seed_hi: u32,
    light_count: u32,
    epsilon: f32,
    ray_count: u32,
    bounce: u32,
    centre_rays: u32,
    ray_capacity: u32,
    shadow_capacity: u32,
    top_node_count: u32,
    vd_max_level: u32,
    vd_pixel_spread: f32, // the camera pixel's angle per unit distance (VD levels of detail)
    ray_offset: u32,     // first ray of this dispatch (the shade stage runs in chunks)
    shadows_per_hit: u32, // most shadow rays one diffuse hit can emit
    vd_record_capacity: u32, // VD records the trace kernels may append
    sampler: u32,        // camera samples: SAMPLER_SOBOL or SAMPLER_INDEPENDENT (shared/rng.wgsl)
    sample_offset: u32,  // the pass's first sample: camera ray s of a pixel is sample_offset + s
    pass_spp: u32,       // samples per pixel in this pass (spp is the frame's)
    tile_offset: u32,    // the pass's first 8x8 tile
    crop_x0: u32,        // the pixels [crop_x0, crop_x1) x [crop_y0, crop_y1) get camera rays
    crop_y0: u32,
    crop_x1: u32,
    crop_y1: u32,
    _pad2: u32,
}

// Twin of gpu::upload::GpuRay: a ray of the wavefront; ray i of a bounce is node i of that
// bounce's level of the shade trees. pixel = 0xffffffff marks a padding ray that does nothing.
// dimension: next dimension of the (pixel, sample) stream.
struct Ray {
    origin: vec3<f32>,
    pixel: u32,
    dir: vec3<f32>,
    sample: u32,
    dimension: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

// Twin of gpu::upload::GpuHit: the closest hit of a ray; instance = 0xffffffff for a miss.
struct Hit {
    t: f32,
    instance: u32,
    prim: u32,
    normal: u32,          // VD patch hits: octahedral object-space normal (vd/common.wgsl); else 0
    st: vec2<f32>,
}

// Twin of gpu::upload::GpuShadowRay: origin + t * dir for t in (0, t_max), in the slot
// k * chunk + node of its shade chunk (whitted/shade.wgsl's shadow_slot); `contribution` is the irradiance it brings to its
// node when nothing blocks it (shadow.wgsl zeroes it when something does); _pad 1: it brings
// f cos already, to be added unscaled (a plastic's, whitted/direct.wgsl).
struct ShadowRay {
    origin: vec3<f32>,
    node: u32,
    dir: vec3<f32>,
    t_max: f32,
    contribution: vec3<f32>,
    _pad: u32,
}

// Twin of gpu::upload::GpuShadeNode: one node of a shade tree, one per ray (paper 003 section
// 5.1.2). link: the hit state in bits 30-31 (NODE_LEAF: a miss, an emitter or a light seen, or a
// specular hit at the last bounce; NODE_DIFFUSE; NODE_ONE_CHILD: a mirror, a total internal
// reflection or a lone refraction; NODE_TWO_CHILDREN: a dielectric's reflected child followed by
// its refracted child) and in bits 0-29 the index of the first child in the next level.
// own: what the node emits or receives directly (emission; direct light after direct.wgsl), and
// after accumulate.wgsl the node's colour. weight: diffuse, albedo/pi; one child, the child's
// weight; two children, the tint. fresnel: two children, the reflected child's weight (the
// refracted one's is (1 - fresnel) * tint); a diffuse node of a plastic, its coat child's weight
// (0: no child).
struct ShadeNode {
    own: vec3<f32>,
    link: u32,
    weight: vec3<f32>,
    fresnel: f32,
}

const NODE_LEAF: u32 = 0u;
const NODE_DIFFUSE: u32 = 1u;
const NODE_ONE_CHILD: u32 = 2u;
const NODE_TWO_CHILDREN: u32 = 3u;
const NODE_STATE_SHIFT: u32 = 30u;
const NODE_CHILD_MASK: u32 = 0x3fffffffu;

// Twin of gpu::upload::GpuFirstHit: what one camera sample saw first, for the AOV layers
// (all zero for a miss; `hit` is 1 for a hit).
struct FirstHit {
    albedo: vec3<f32>,
    hit: f32,
    normal: vec3<f32>,
    _pad0: u32,
    geometric: vec3<f32>,
    _pad1: u32,
    position: vec3<f32>,
    _pad2: u32,
}

// Twin of gpu::upload::GpuBenchRay: a ray of the ray-throughput benchmark.
struct BenchRay {
    origin: vec3<f32>,
    t_max: f32,
    dir: vec3<f32>,
    any_hit: u32,
}
