// Binned SAH, last step: one invocation per position k < n writes leaf k (node n - 1 + k): the
// box of primitive order[k], no children, its place, count 1. Its parent link was written by
// the split that made it (or bvh/sah_init.wgsl, for a lone leaf). Twin: the last loop of
// caustica::accel::sah_build::build_sah.
//!include "bvh/sah_common.wgsl"

@group(0) @binding(0) var<uniform> params: SahParams;
@group(0) @binding(1) var<storage, read> order: array<u32>;
@group(0) @binding(2) var<storage, read> boxes: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> nodes: array<BinaryNodeWords>;

@compute @workgroup_size(SAH_WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = sah_index(gid, nwg, SAH_WG_SIZE);
    let n = params.n;
    if k >= n {
        return;
    }
    let leaf = n - 1u + k;
    let p = order[k];
    nodes[leaf].lo = boxes[2u * p].xyz;
    nodes[leaf].left = BVH_NO_NODE;
    nodes[leaf].hi = boxes[2u * p + 1u].xyz;
    nodes[leaf].right = BVH_NO_NODE;
    nodes[leaf].first = k;
    nodes[leaf].count = 1u;
}
