// Morton order of points, first step: for element i < n, the 30-bit Morton code of the point
// points[i * stride] (xyz) in the cube [lo, lo + 1024 / scale)³ (10 bits an axis, clamped) as the
// key and i as the value, for the radix sort that orders them. Twin of
// caustica::accel::knn::morton_code.
//!include "prims/common.wgsl"
//!include "shared/morton.wgsl"

struct MortonParams {
    n: u32,
    stride: u32,
    _pad0: u32,
    _pad1: u32,
    // xyz: the cube's low corner.
    lo: vec4<f32>,
    // x: cells per unit length.
    scale: vec4<f32>,
}

@group(0) @binding(0) var<uniform> params: MortonParams;
@group(0) @binding(1) var<storage, read> points: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> keys: array<u32>;
@group(0) @binding(3) var<storage, read_write> values: array<u32>;

fn cell(v: f32, lo: f32) -> u32 {
    let c = (v - lo) * params.scale.x;
    return u32(clamp(c, 0.0, 1023.0));
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = element_index(gid, nwg);
    if i >= params.n {
        return;
    }
    let p = points[i * params.stride].xyz;
    keys[i] = spread_bits(cell(p.x, params.lo.x)) | (spread_bits(cell(p.y, params.lo.y)) << 1u) | (spread_bits(cell(p.z, params.lo.z)) << 2u);
    values[i] = i;
}
