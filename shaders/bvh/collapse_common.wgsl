// Shared by the kernels of the collapse of a binary BVH into the 8-wide compressed layout
// (gpu::wide_collapse, CPU twin caustica::accel::wide::collapse_to_cwbvh): its trees, the words
// of its state, and the boxes as the collapse measures them. A batch collapses several trees in
// one chain of levels; its queue holds (tree, wide node, binary node) entries.
//!include "shared/bvh_build.wgsl"

// One tree of a batch. Twin of caustica::gpu::wide_collapse::CollapseMesh.
struct CollapseMesh {
    // Where its binary nodes (root first) and its references start in the batch's arrays.
    binary_base: u32,
    binary_count: u32,
    order_base: u32,
    prim_count: u32,
    // Where its nodes and references start in the output buffers (its indices are local).
    node_base: u32,
    prim_base: u32,
    // The most wide nodes it has room for, and the primitives a leaf child may hold (1..=3).
    capacity: u32,
    leaf_max: u32,
}

// The batch's words of `state` (gpu::wide_collapse::STATE_*), then TREE_WORDS per tree.
const STATE_BEGIN: u32 = 0u;      // the current level's first entry of the queue
const STATE_END: u32 = 1u;        // one past its last
const STATE_QUEUE: u32 = 2u;      // entries of the queue written
const STATE_LEVEL: u32 = 3u;      // levels started
const STATE_UNFINISHED: u32 = 4u; // 1: nodes were left for levels past the last dispatched
const STATE_WORDS: u32 = 8u;
// A tree's words, from STATE_WORDS + TREE_WORDS · tree.
const TREE_NODES: u32 = 0u;       // wide nodes allocated
const TREE_PRIMS: u32 = 1u;       // references written
const TREE_DEPTH: u32 = 2u;       // the deepest level that held its nodes (the root's is 1)
const TREE_OVERFLOW: u32 = 3u;    // 1: a node found no room (its capacity too small)
const TREE_WORDS: u32 = 4u;

// Twins of caustica::accel::wide::normal_box: a denormal coordinate moves outwards to zero or
// to the smallest normal float, decided on the bits (this GPU may flush denormals to zero).
fn is_denormal(bits: u32) -> bool {
    return (bits & 0x7f800000u) == 0u && (bits & 0x007fffffu) != 0u;
}

fn normal_lo(v: vec3<f32>) -> vec3<f32> {
    var out = v;
    for (var a = 0u; a < 3u; a++) {
        let bits = bitcast<u32>(v[a]);
        if is_denormal(bits) {
            out[a] = select(0.0, -bitcast<f32>(0x00800000u), (bits & 0x80000000u) != 0u);
        }
    }
    return out;
}

fn normal_hi(v: vec3<f32>) -> vec3<f32> {
    var out = v;
    for (var a = 0u; a < 3u; a++) {
        let bits = bitcast<u32>(v[a]);
        if is_denormal(bits) {
            out[a] = select(bitcast<f32>(0x00800000u), 0.0, (bits & 0x80000000u) != 0u);
        }
    }
    return out;
}
