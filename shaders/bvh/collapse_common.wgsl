// Shared by the kernels of the collapse of a binary BVH into the 8-wide compressed layout
// (gpu::wide_collapse, CPU twin caustica::accel::wide::collapse_to_cwbvh): its parameters and
// the words of its state.
//!include "shared/bvh_build.wgsl"

// Twin of caustica::gpu::wide_collapse::CollapseParams.
struct CollapseParams {
    // Binary nodes (root = 0) and primitive references of the input.
    binary_count: u32,
    prim_count: u32,
    // Primitives a leaf child may hold (1..=3).
    leaf_max: u32,
    // The most wide nodes the output has room for.
    capacity: u32,
    // Where the tree's nodes and references start in the output buffers (its indices are local).
    node_base: u32,
    prim_base: u32,
    _pad0: u32,
    _pad1: u32,
}

// The words of `state` (gpu::wide_collapse::STATE_*).
const STATE_NODES: u32 = 0u;      // wide nodes allocated
const STATE_PRIMS: u32 = 1u;      // references written
const STATE_BEGIN: u32 = 2u;      // the current level's first node
const STATE_END: u32 = 3u;        // one past its last
const STATE_DEPTH: u32 = 4u;      // levels that held nodes
const STATE_LEVEL: u32 = 5u;      // levels started
const STATE_OVERFLOW: u32 = 6u;   // 1: a node found no room (capacity too small)
const STATE_UNFINISHED: u32 = 7u; // 1: nodes were left for levels past the last dispatched
const STATE_WORDS: u32 = 8u;

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
