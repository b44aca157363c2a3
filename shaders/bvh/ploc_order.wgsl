// PLOC, last step, one invocation per leaf k < n (node n - 1 + k) of the finished tree: its
// place in the tree's depth-first order (left child first) is the sum of the counts of the left
// siblings on its way to the root. It becomes the leaf's first, the primitive order there gets
// the leaf's primitive, and each ancestor of which the leaf is the leftmost gets it as its
// first. The walks are as long as the tree is deep (at most the rounds, ploc_rounds). Twin: the
// depth-first walk at the end of caustica::accel::ploc::build_ploc.
//!include "bvh/ploc_common.wgsl"

@group(0) @binding(0) var<uniform> params: PlocParams;
@group(0) @binding(1) var<storage, read> order: array<u32>;
@group(0) @binding(2) var<storage, read_write> nodes: array<BinaryNodeWords>;
@group(0) @binding(3) var<storage, read_write> prim_order: array<u32>;

@compute @workgroup_size(PLOC_WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = gid.x + gid.y * nwg.x * PLOC_WG_SIZE;
    let n = params.n;
    if k >= n {
        return;
    }
    let leaf = n - 1u + k;
    var place = 0u;
    var node = leaf;
    var parent = nodes[node].parent;
    // Bounded, so that no tree can hold the walk.
    var steps = 0u;
    while parent != BVH_NO_NODE && steps <= params.rounds {
        steps++;
        let left = nodes[parent].left;
        if left != node {
            place += nodes[left].count;
        }
        node = parent;
        parent = nodes[node].parent;
    }
    prim_order[place] = order[k];
    nodes[leaf].first = place;
    node = leaf;
    parent = nodes[node].parent;
    steps = 0u;
    while parent != BVH_NO_NODE && nodes[parent].left == node && steps <= params.rounds {
        steps++;
        nodes[parent].first = place;
        node = parent;
        parent = nodes[node].parent;
    }
}
