// The structs of photon mapping's second half shared with the host (twins in src/gpu/gather.rs;
// tests/gpu_layout.rs checks their layouts). No bindings, no includes.

// Twin of gpu::gather::GpuShadingPoint: a diffuse hit of a shade tree. normal: the shading
// normal turned towards the viewer; pixel: y * width + x of the path's pixel; node: which shade
// node it is (level << 26 | index in the level; the pipeline's own reference).
struct ShadingPoint {
    position: vec3<f32>,
    pixel: u32,
    normal: vec3<f32>,
    node: u32,
}

// Twin of gpu::gather::GpuIrradianceSample (render::gather::IrradianceSample).
struct IrradianceSample {
    position: vec3<f32>,
    radius: f32,
    normal: vec3<f32>,
    _pad0: u32,
    irradiance: vec3<f32>,
    _pad1: u32,
    // The translational gradient of the red, green and blue irradiance (xyz; w unused).
    gradient: array<vec4<f32>, 3>,
}

// Twin of gpu::gather::GatherParams.
struct GatherParams {
    seed_count: u32,
    rays_per_seed: u32,
    ray_count: u32,
    step: u32,
    radius_min: f32,
    radius_max: f32,
    // The strata's rows (render::gather::gather_strata); rays_per_seed / rows columns.
    rows: u32,
    // The first seed of this chunk of the gather (seed_count seeds from here).
    seed_offset: u32,
}

// Twin of gpu::gather::GatherPath: a gather ray's throughput (w: 1 while it goes on), the
// radiance it has brought so far, and the distance to its first hit (infinite for a miss).
struct GatherPath {
    weight: vec4<f32>,
    radiance: vec3<f32>,
    first_t: f32,
}

// Twin of gpu::irradiance_photons::PhotonLookupParams: the precomputed irradiance's kernels.
// count: invocations; stride: every stride-th global photon is an irradiance photon;
// photon_count: the irradiance photons; max_dist2: the squared radius of the estimates and the
// lookups; k, filter_code, cone_k: the estimate's (KnnParams').
struct PhotonLookupParams {
    count: u32,
    stride: u32,
    photon_count: u32,
    max_dist2: f32,
    k: u32,
    filter_code: u32,
    cone_k: f32,
    _pad0: u32,
}
