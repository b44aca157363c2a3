// The structs of the batched VD bottom-level stage (shaders/vd/). Rust twins in
// src/gpu/vd_batch.rs; tests/gpu_layout.rs checks their sizes and offsets.

// One VD patch: the quad corners v0 v1 v2 v3 and the UVs its map is read at (scene/vdmap.rs
// conventions), the map that displaces it, the window of texels it reads (texel (x, y) of the
// window is texels[tile_offset + y * tile_stride + x], row 0 at the top, RGB in xyz; width 0:
// not displaced), and its conservative bounds (the box the level of detail is chosen from and
// that records were found with), all in the patch mesh's object space. 128 bytes.
struct VdBatchPatch {
    v0: vec3<f32>,
    map: u32,
    v1: vec3<f32>,
    tile_offset: u32,
    v2: vec3<f32>,
    tile_stride: u32,
    v3: vec3<f32>,
    tile_width: u32,
    uv0: vec2<f32>,
    uv1: vec2<f32>,
    uv2: vec2<f32>,
    uv3: vec2<f32>,
    bounds_min: vec3<f32>,
    tile_height: u32,
    bounds_max: vec3<f32>,
    _pad0: u32,
}

// One VD map's conventions: space 0 = object, 1 = tangent; channel_* pick the file channels of
// the displacement components; displacement = (texel[channels] - midlevel) * scale. 32 bytes.
struct VdBatchMap {
    space: u32,
    channel_x: u32,
    channel_y: u32,
    channel_z: u32,
    scale: f32,
    midlevel: f32,
    padding: f32,
    _pad0: u32,
}

// One ray in the object space of the patches it is recorded against, t in (0, t_max); `spread`
// is its footprint's growth per unit of t (cone angle × |dir|, for the level of detail) and `hit` the hit slot it competes
// for (several object-space copies of one world ray, one per instance, share a slot). 48 bytes.
struct VdBatchRay {
    origin: vec3<f32>,
    t_max: f32,
    dir: vec3<f32>,
    spread: f32,
    hit: u32,
    // The instance the ray was carried into the object space of (the pipeline's records).
    instance: u32,
    _pad1: u32,
    _pad2: u32,
}

// The closest hit of one record (ray, patch), written by the one invocation that traced it;
// cell = 0xffffffff when the ray missed the patch. 32 bytes.
struct VdRecordHit {
    normal: vec3<f32>,
    t: f32,
    st: vec2<f32>,
    cell: u32,
    patch_index: u32,
}

// Who defines a patch's boundary (accel/vd_seams.rs, the watertight rule): per edge the owner
// patch and a code (bits 0..2 the owner's edge, bit 2 the owner runs it the other way, bits 3..
// the edge's id into the edge levels); per corner the owner patch << 2 | the owner's corner.
// 48 bytes.
struct VdSeams {
    edge_owner: vec4<u32>,
    edge_code: vec4<u32>,
    corner_owner: vec4<u32>,
}

// The stage's uniform. 32 bytes.
struct VdBatchParams {
    // Largest subdivision level (scratch slices are sized for it; at most 8).
    max_level: u32,
    // Bit 0: trace (else build only, for timing). Bit 1: read each patch's level from
    // `levels` (else choose it from the job's rays and store it there). Bit 2: choose the
    // levels only (no build, no trace).
    mode: u32,
    // u32 words of one workgroup's scratch slice, and where its nodes and its edge points start
    // inside it.
    slice_words: u32,
    node_words_offset: u32,
    record_count: u32,
    edge_words_offset: u32,
    // Patches in the scene (vd/edge_levels.wgsl).
    patch_count: u32,
    _pad2: u32,
}
