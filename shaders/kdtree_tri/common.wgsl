// Shared by the triangle kd-tree's build kernels (kdtree_tri/*.wgsl; host side
// caustica::gpu::tri_kdtree, CPU twin caustica::accel::tri_kdtree::build_kdtree): the
// parameters, the layouts of pairs and nodes, and the orders the CPU twin uses.
//
// A pair is one primitive's box clipped to one node's cell, in two vec4<u32>: (lo bits xyz,
// primitive) and (hi bits xyz, the node's index in its level). A level's pairs are grouped by
// node, the nodes in level order, each node's primitives ascending.

// Invocations per workgroup of the pair and node kernels.
const KT_WG_SIZE: u32 = 256u;
// The small stage's workgroup: one invocation per primitive of a small root.
const KT_SMALL_NODE: u32 = 64u;
// caustica::accel::tri_kdtree constants.
const KT_MAX_DEPTH: u32 = 64u;
const KT_EMPTY_CUT_FRACTION: f32 = 0.25;
const KT_TRAVERSAL_COST: u32 = 1u;
const KT_LEAF: u32 = 0xc0000000u;
const KT_HEADER_WORDS: u32 = 16u;
// A leaf in the small stage's logs (the other entries are the candidate a node split at).
const KT_LOG_LEAF: u32 = 0xffffu;
// Decision codes (tri_kdtree::Decision) and fate kinds (tri_kdtree::Fate).
const KT_LEAF_CODE: u32 = 0u;
const KT_SMALL_CODE: u32 = 1u;
const KT_SPLIT_CODE: u32 = 2u;

// Twin of caustica::gpu::tri_kdtree::KdBuildParams (layout checked by a test).
struct KdBuildParams {
    // Pairs of the level.
    pairs: u32,
    // Nodes of the level.
    nodes: u32,
    // Small roots.
    roots: u32,
    // Where the references start in the words.
    refs_at: u32,
}

// A node of the current level: its cell, and (first pair, pairs, depth, 0).
struct LevelNode {
    lo: vec4<f32>,
    hi: vec4<f32>,
    span: vec4<u32>,
}

// The builtins of a kernel that works by workgroups (tight.wgsl, small.wgsl); with SUBGROUPS
// also the subgroup's and the invocation's place in it.
//!if SUBGROUPS
struct KtGroupInputs {
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(subgroup_id) sg_id: u32,
    @builtin(subgroup_invocation_id) sg_lane: u32,
    @builtin(num_subgroups) num_sg: u32,
}
//!else
struct KtGroupInputs {
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
}
//!endif

// The linear invocation index of a grid that may spill into y (`Kernel::grid_for`).
fn kt_index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * KT_WG_SIZE;
}

// An order-preserving key of a float's bits: the order of f32::total_cmp (-0 before +0).
fn kt_key(bits: u32) -> u32 {
    return bits ^ select(0x80000000u, 0xffffffffu, (bits & 0x80000000u) != 0u);
}

fn kt_unkey(key: u32) -> u32 {
    return key ^ select(0xffffffffu, 0x80000000u, (key & 0x80000000u) != 0u);
}

// A small root (small.wgsl, small_replay.wgsl): its cell, and where its items and its subtree
// go.
struct SmallRoot {
    lo: vec4<f32>,
    hi: vec4<f32>,
    // (first item, items, depth, slot)
    span: vec4<u32>,
    // (node index of the subtree's node 1, first reference, 0, 0)
    place: vec4<u32>,
}

// The mask of a small root's n items (n <= 64), two words.
fn kt_all_items(n: u32) -> vec2<u32> {
    if n < 32u {
        return vec2<u32>((1u << n) - 1u, 0u);
    } else if n < 64u {
        return vec2<u32>(0xffffffffu, (1u << (n - 32u)) - 1u);
    }
    return vec2<u32>(0xffffffffu, 0xffffffffu);
}
