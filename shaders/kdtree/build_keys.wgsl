// Point kd-tree build, initialization: the sort keys of the three association lists (entry
// a * n + i holds point i's key on axis a, the axis as the high key word, and i as the value),
// and every position's owner for the first large level (the root, when it is large).
//!include "kdtree/build_common.wgsl"

@group(0) @binding(0) var<uniform> params: KdParams;
@group(0) @binding(1) var<storage, read> points: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> keys_lo: array<u32>;
@group(0) @binding(3) var<storage, read_write> keys_hi: array<u32>;
@group(0) @binding(4) var<storage, read_write> values: array<u32>;
@group(0) @binding(5) var<storage, read_write> owner: array<u32>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let g = element_index(gid, nwg);
    let n = params.n;
    if g >= 3u * n {
        return;
    }
    let axis = g / n;
    let i = g - axis * n;
    keys_lo[g] = kd_key(points[i][axis]);
    keys_hi[g] = axis;
    values[g] = i;
    if axis == 0u {
        owner[i] = select(INACTIVE, 0u, n > KD_SMALL_NODE);
    }
}
