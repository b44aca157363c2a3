// The albedo, normal and depth layers, on the device: one invocation per pixel of the pass's
// tiles adds the first hits of its pass_spp camera samples (shade.wgsl's first_hits, slot by
// slot as in resolve.wgsl) to the layer sums, in sample order; the pass holding the frame's
// sample 0 writes the depth. The host divides and normalises once the frame is done (what it did
// with each pass's first hits read back, in the same order of additions).
//!include "shared/film.wgsl"

@group(0) @binding(0) var<uniform> params: FrameParams;
@group(0) @binding(27) var<storage, read> first_hits: array<FirstHit>;
// xyz: the sum of the samples' albedo; w: the depth of sample 0.
@group(0) @binding(35) var<storage, read_write> albedo_depth: array<vec4<f32>>;
// xyz: the sum of the samples' normals.
@group(0) @binding(36) var<storage, read_write> normal_sum: array<vec4<f32>>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let p = gid.x + gid.y * groups.x * 64u;
    let first = film_first_slot(params, p);
    if first == FILM_NO_SLOT {
        return;
    }
    var albedo = albedo_depth[p];
    var normal = normal_sum[p].xyz;
    for (var s = 0u; s < params.pass_spp; s++) {
        let hit = first_hits[first + s];
        albedo = vec4<f32>(albedo.xyz + hit.albedo, albedo.w);
        normal += hit.normal;
    }
    if params.sample_offset == 0u {
        albedo.w = first_hits[first].depth;
    }
    albedo_depth[p] = albedo;
    normal_sum[p] = vec4<f32>(normal, 0.0);
}
