// PLOC, first step (after the LBVH's Morton codes and their radix sort): one invocation per
// sorted position k < n writes leaf k (node n - 1 + k): the box of primitive order[k], no
// children, count 1, no parent yet (the merge that takes it sets one; a lone leaf is the root),
// and makes it cluster k of round 0. Twin: the start of caustica::accel::ploc::build_ploc.
//!include "bvh/ploc_common.wgsl"

@group(0) @binding(0) var<uniform> params: PlocParams;
@group(0) @binding(1) var<storage, read> order: array<u32>;
@group(0) @binding(2) var<storage, read> boxes: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> nodes: array<BinaryNodeWords>;
@group(0) @binding(4) var<storage, read_write> clusters: array<u32>;
@group(0) @binding(5) var<storage, read_write> cluster_boxes: array<vec4<u32>>;

@compute @workgroup_size(PLOC_WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = gid.x + gid.y * nwg.x * PLOC_WG_SIZE;
    let n = params.n;
    if k >= n {
        return;
    }
    let leaf = n - 1u + k;
    let prim = order[k];
    let lo = boxes[2u * prim].xyz;
    let hi = boxes[2u * prim + 1u].xyz;
    nodes[leaf] = BinaryNodeWords(lo, BVH_NO_NODE, hi, BVH_NO_NODE, 0u, 1u, BVH_NO_NODE, 0u);
    clusters[k] = leaf;
    cluster_boxes[2u * k] = vec4<u32>(lo, 1u);
    cluster_boxes[2u * k + 1u] = vec4<u32>(hi, 0u);
}
