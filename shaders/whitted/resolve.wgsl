// The pixels: one invocation per pixel averages the colours of its spp camera nodes (level 0 of
// the shade trees after accumulate.wgsl), found through the 8x8 Morton tiles of primary.wgsl.
//!include "shared/types.wgsl"
//!include "shared/math.wgsl"

const TILE_PIXELS: u32 = 64u;

@group(0) @binding(0) var<uniform> params: FrameParams;
@group(0) @binding(22) var<storage, read> nodes: array<ShadeNode>;
@group(0) @binding(34) var<storage, read_write> pixels: array<vec4<f32>>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let p = gid.x + gid.y * groups.x * 64u;
    if p >= params.width * params.height {
        return;
    }
    let px = p % params.width;
    let py = p / params.width;
    let tiles_x = (params.width + 7u) / 8u;
    let tile = (py / 8u) * tiles_x + px / 8u;
    let m = morton_encode(vec2<u32>(px % 8u, py % 8u));
    let first = (tile * TILE_PIXELS + m) * params.spp;
    var sum = vec3<f32>(0.0);
    for (var s = 0u; s < params.spp; s++) {
        sum += nodes[first + s].own;
    }
    pixels[p] = vec4<f32>(sum / f32(params.spp), 0.0);
}
