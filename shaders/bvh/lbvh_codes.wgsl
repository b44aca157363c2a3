// LBVH, first step: for primitive i < n, the 30-bit Morton code of the centroid of its box
// (boxes[2i].xyz, boxes[2i + 1].xyz; the origin for an empty box) in the host's frame, x in the
// highest bit of every triple, as the key, and i as the value, for the radix sort. Twin of
// caustica::accel::lbvh::lbvh_code and lbvh_centroid.
//!include "bvh/lbvh_common.wgsl"
//!include "shared/morton.wgsl"

@group(0) @binding(0) var<uniform> params: LbvhParams;
@group(0) @binding(1) var<storage, read> boxes: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> keys: array<u32>;
@group(0) @binding(3) var<storage, read_write> values: array<u32>;

// floor((c - lo) * scale) clamped to 0..=1023, NaN in cell 0.
fn lbvh_cell(c: f32, lo: f32, scale: f32) -> u32 {
    let t = floor((c - lo) * scale);
    if t >= 1023.0 {
        return 1023u;
    }
    if t > 0.0 {
        return u32(t);
    }
    return 0u;
}

@compute @workgroup_size(LBVH_WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = lbvh_index(gid, nwg);
    if i >= params.n {
        return;
    }
    let lo = boxes[2u * i].xyz;
    let hi = boxes[2u * i + 1u].xyz;
    let c = lbvh_centroid(lo, hi);
    let x = spread_bits(lbvh_cell(c.x, params.lo.x, params.scale.x));
    let y = spread_bits(lbvh_cell(c.y, params.lo.y, params.scale.y));
    let z = spread_bits(lbvh_cell(c.z, params.lo.z, params.scale.z));
    keys[i] = (x << 2u) | (y << 1u) | z;
    values[i] = i;
}
