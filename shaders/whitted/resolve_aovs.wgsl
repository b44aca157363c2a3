// The first-hit layers, on the device: one invocation per pixel of the pass's tiles adds the
// first hits of its pass_spp camera samples (shade.wgsl's first_hits, slot by slot as in
// resolve.wgsl, which counts the hits into the film's w) to the sums, in sample order: the
// albedo sums and the normal and position sums where the frame asked for them (otherwise their
// buffers are one-element stand-ins). The host divides and normalises once the frame is done
// (render::frame::FirstHitSums, which the CPU twin fills in the same order of additions).
//!include "shared/film.wgsl"

@group(0) @binding(0) var<uniform> params: FrameParams;
@group(0) @binding(27) var<storage, read> first_hits: array<FirstHit>;
// xyz: the sum of the samples' albedo.
@group(0) @binding(35) var<storage, read_write> albedo_sum: array<vec4<f32>>;
// xyz: the sum of the samples' shading normals.
@group(0) @binding(36) var<storage, read_write> normal_sum: array<vec4<f32>>;
// xyz: the sum of the samples' geometric normals.
@group(0) @binding(37) var<storage, read_write> geometric_sum: array<vec4<f32>>;
// xyz: the sum of the samples' first-hit positions (world space).
@group(0) @binding(38) var<storage, read_write> position_sum: array<vec4<f32>>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let p = gid.x + gid.y * groups.x * 64u;
    let first = film_first_slot(params, p);
    if first == FILM_NO_SLOT {
        return;
    }
    if arrayLength(&albedo_sum) > p {
        var albedo = albedo_sum[p].xyz;
        for (var s = 0u; s < params.pass_spp; s++) {
            albedo += first_hits[first + s].albedo;
        }
        albedo_sum[p] = vec4<f32>(albedo, 0.0);
    }
    if arrayLength(&position_sum) > p {
        var normal = normal_sum[p].xyz;
        var geometric = geometric_sum[p].xyz;
        var position = position_sum[p].xyz;
        for (var s = 0u; s < params.pass_spp; s++) {
            let hit = first_hits[first + s];
            normal += hit.normal;
            geometric += hit.geometric;
            position += hit.position;
        }
        normal_sum[p] = vec4<f32>(normal, 0.0);
        geometric_sum[p] = vec4<f32>(geometric, 0.0);
        position_sum[p] = vec4<f32>(position, 0.0);
    }
}
