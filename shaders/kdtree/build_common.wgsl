// Shared by the point kd-tree build kernels (`caustica::gpu::kdtree`): the constants of
// `caustica::accel::kdtree`, the uniform every build kernel reads, the heap node record, and
// the coordinate, key and cost functions that must match the CPU twin bit for bit.
//!include "prims/common.wgsl"

const KD_LEAF: u32 = 0xc0000000u;
const KD_INDEX_MASK: u32 = 0x3fffffffu;
const KD_MAX_BRANCH_DEPTH: u32 = 64u;
const KD_SMALL_NODE: u32 = 32u;
const KD_EMPTY_CUT_FRACTION: f32 = 0.25;
const KD_VVH_TRAVERSAL_COST: f32 = 4.0;
// An owner entry of a position whose node is no longer split in the large stage.
const INACTIVE: u32 = 0xffffffffu;

// The build's nodes live in an implicit binary heap: level k holds 2^k slots starting at heap
// index 2^k - 1, and the children of slot h are 2h + 1 and 2h + 2. Each slot has NODE_WORDS
// words in `heap_nodes` and BOX_WORDS floats in `heap_boxes`.
const NODE_WORDS: u32 = 8u;
const NODE_START: u32 = 0u;      // first position of the node in the lists
const NODE_COUNT: u32 = 1u;      // points
const NODE_INFO: u32 = 2u;       // kind | axis << 2 | cut mask << 4
const NODE_SPLIT: u32 = 3u;      // split coordinate bits (large split nodes)
const NODE_SIZE: u32 = 5u;       // words of the node's subtree in the output (after the build)
const NODE_OFFSET: u32 = 6u;     // word of the subtree in the output (written top-down)
const BOX_WORDS: u32 = 12u;      // inherited lo.xyz, hi.xyz, then tight lo.xyz, hi.xyz

const KIND_DEAD: u32 = 0u;       // no node in this slot
const KIND_LARGE: u32 = 1u;      // a large node (split at the median once processed)
const KIND_SMALL: u32 = 2u;      // a small root, built by build_small
const KIND_EQUAL: u32 = 3u;      // a large node whose points are all equal: one leaf

// Twin of `caustica::gpu::kdtree::KdParams`.
struct KdParams {
    // points
    n: u32,
    // the large level being processed (or written)
    level: u32,
    // heap index of the level's first slot (2^level - 1)
    level_base: u32,
    // slots on the level (2^level)
    level_slots: u32,
    // workgroups of BLOCK_SIZE entries covering the three lists (3n entries)
    num_blocks: u32,
    // slots in the whole heap
    heap_slots: u32,
    // large levels in all (build_medium)
    levels: u32,
    // 1 when the lists of level `level` are the `_b` buffer (build_medium)
    lists_in_b: u32,
}

// The coordinate the build uses (twin of `kd_coord`): NaN -> 0, +-inf -> +-MAX, subnormals
// and -0 -> +0, with integer operations only (WGSL may assume that floats are finite).
fn kd_coord(c: f32) -> f32 {
    let bits = bitcast<u32>(c);
    let exponent = bits & 0x7f800000u;
    if exponent == 0x7f800000u {
        if (bits & 0x007fffffu) != 0u {
            return 0.0;
        }
        return bitcast<f32>((bits & 0x80000000u) | 0x7f7fffffu);
    }
    if exponent == 0u {
        return 0.0;
    }
    return c;
}

// Order-preserving key of kd_coord(c) (twin of `kd_key`).
fn kd_key(c: f32) -> u32 {
    let bits = bitcast<u32>(kd_coord(c));
    return select(bits | 0x80000000u, ~bits, (bits & 0x80000000u) != 0u);
}

// x with its five lowest mantissa bits cleared (twin of `kd_truncate_mantissa`).
fn kd_truncate_mantissa(x: f32) -> f32 {
    return bitcast<f32>(bitcast<u32>(x) & 0xffffffe0u);
}

// N_L (s - lo) + N_R (hi - s) with exact products, so that a fused multiply-add rounds the same
// way as the CPU's separate operations (twin of `small_split_cost`).
fn small_split_cost(n_left: u32, n_right: u32, s: f32, lo: f32, hi: f32) -> f32 {
    return f32(n_left) * kd_truncate_mantissa(s - lo) + f32(n_right) * kd_truncate_mantissa(hi - s);
}

// gap > C_e * extent (twin of `empty_side_is_cut`).
fn empty_side_is_cut(gap: f32, inherited_extent: f32) -> bool {
    return gap > KD_EMPTY_CUT_FRACTION * inherited_extent;
}

// Where the stable partition of a node (first position `start`, `count` points, the first
// count / 2 going left) moves the entry at `position`, which has `left_before` left entries of
// its node before it and goes left when `left` is 1: (its new position, its child's point count,
// 0 for the left child or 1 for the right).
fn partition_move(start: u32, count: u32, position: u32, left_before: u32, left: u32) -> vec3<u32> {
    let left_count = count / 2u;
    if left != 0u {
        return vec3<u32>(start + left_before, left_count, 0u);
    }
    return vec3<u32>(start + left_count + (position - start - left_before), count - left_count, 1u);
}

// The heap level of slot h: floor(log2(h + 1)).
fn heap_level(h: u32) -> u32 {
    return u32(firstLeadingBit(h + 1u));
}
