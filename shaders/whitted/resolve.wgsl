// The film: one invocation per pixel of the pass's tiles adds the colours of its pass_spp
// camera nodes (level 0 of the shade trees after accumulate.wgsl), found through the 8x8 Morton
// tiles of primary.wgsl, divided by the frame's spp: the passes of a frame (render::plan) sum
// to the mean of all its samples. params.ray_count is the pass's camera-ray slots. The film's w
// counts the samples whose camera ray hit something (shade.wgsl's first_hits): the coverage.
//!include "shared/film.wgsl"

@group(0) @binding(0) var<uniform> params: FrameParams;
@group(0) @binding(22) var<storage, read> nodes: array<ShadeNode>;
@group(0) @binding(27) var<storage, read> first_hits: array<FirstHit>;
@group(0) @binding(34) var<storage, read_write> pixels: array<vec4<f32>>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let p = gid.x + gid.y * groups.x * 64u;
    let first = film_first_slot(params, p);
    if first == FILM_NO_SLOT {
        return;
    }
    var sum = vec3<f32>(0.0);
    var hits = 0.0;
    for (var s = 0u; s < params.pass_spp; s++) {
        sum += nodes[first + s].own;
        hits += first_hits[first + s].hit;
    }
    pixels[p] += vec4<f32>(sum / f32(params.spp), hits);
}
