// LBVH, third step (after the codes and their radix sort): one invocation per sorted position
// k < n. It writes leaf k (node n - 1 + k): the box of primitive order[k], first = k, count = 1,
// no children; and, for k < n - 1, internal node k of Karras's radix tree over the sorted codes:
// its children (whose parent it sets), its range of positions as first/count, bounds pending
// (LBVH_PENDING, for lbvh_bounds.wgsl), and its arrival counter zeroed. The root's parent is
// BVH_NO_NODE. Twin of caustica::accel::lbvh::lbvh_internal_node and build_lbvh.
//!include "bvh/lbvh_common.wgsl"

@group(0) @binding(0) var<uniform> params: LbvhParams;
@group(0) @binding(1) var<storage, read> codes: array<u32>;
@group(0) @binding(2) var<storage, read> order: array<u32>;
@group(0) @binding(3) var<storage, read> boxes: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read_write> nodes: array<BinaryNodeWords>;
@group(0) @binding(5) var<storage, read_write> counters: array<u32>;

// Karras's δ: the common prefix of the keys at sorted positions i and j, a key being the code
// followed by the position (so that equal codes still differ); -1 when j is outside 0..n.
fn delta(i: i32, j: i32) -> i32 {
    if j < 0 || j >= i32(params.n) {
        return -1;
    }
    let ci = codes[u32(i)];
    let cj = codes[u32(j)];
    if ci != cj {
        return i32(countLeadingZeros(ci ^ cj));
    }
    return 32 + i32(countLeadingZeros(u32(i) ^ u32(j)));
}

@compute @workgroup_size(LBVH_WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = lbvh_index(gid, nwg);
    let n = params.n;
    if k >= n {
        return;
    }
    // Leaf k, every field but its parent (which its parent's invocation writes).
    let leaf = n - 1u + k;
    let prim = order[k];
    nodes[leaf].lo = boxes[2u * prim].xyz;
    nodes[leaf].left = BVH_NO_NODE;
    nodes[leaf].hi = boxes[2u * prim + 1u].xyz;
    nodes[leaf].right = BVH_NO_NODE;
    nodes[leaf].first = k;
    nodes[leaf].count = 1u;
    nodes[leaf]._pad = 0u;
    if n == 1u {
        // The leaf is the root.
        nodes[0].parent = BVH_NO_NODE;
        return;
    }
    if k == n - 1u {
        return;
    }

    // Internal node k: the direction of its range, towards the neighbour sharing more.
    let i = i32(k);
    let d = select(-1, 1, delta(i, i + 1) > delta(i, i - 1));
    // An upper bound of the range's length, then its other end by binary search.
    let delta_min = delta(i, i - d);
    var l_max = 2;
    while delta(i, i + l_max * d) > delta_min {
        l_max *= 2;
    }
    var l = 0;
    for (var t = l_max / 2; t >= 1; t /= 2) {
        if delta(i, i + (l + t) * d) > delta_min {
            l += t;
        }
    }
    let j = i + l * d;
    // The split: the last position (from i) sharing more than the range's common prefix.
    let delta_node = delta(i, j);
    var s = 0;
    var t = l;
    loop {
        t = (t + 1) / 2;
        if delta(i, i + (s + t) * d) > delta_node {
            s += t;
        }
        if t <= 1 {
            break;
        }
    }
    let gamma = i + s * d + min(d, 0);
    let first = min(i, j);
    let last = max(i, j);
    let left = select(u32(gamma), n - 1u + u32(gamma), first == gamma);
    let right = select(u32(gamma + 1), n + u32(gamma), last == gamma + 1);

    nodes[k].lo = vec3<u32>(LBVH_PENDING);
    nodes[k].left = left;
    nodes[k].hi = vec3<u32>(LBVH_PENDING);
    nodes[k].right = right;
    nodes[k].first = u32(first);
    nodes[k].count = u32(last - first) + 1u;
    nodes[k]._pad = 0u;
    if k == 0u {
        nodes[0].parent = BVH_NO_NODE;
    }
    nodes[left].parent = k;
    nodes[right].parent = k;
    counters[k] = 0u;
}
