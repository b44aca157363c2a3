// Shared by the binned-SAH builder's kernels (bvh/sah_*.wgsl; host side caustica::gpu::sah_build,
// CPU twin caustica::accel::sah_build, whose module text gives the rules): the parameters, the
// state words, the tasks, the accumulators' layout and the SAH's arithmetic, every step as the
// twin takes it.
//!include "bvh/lbvh_common.wgsl"

// Invocations per workgroup of the per-position kernels, and of the per-task ones.
const SAH_WG_SIZE: u32 = 256u;
const SAH_TASK_WG_SIZE: u32 = 64u;

// Twins of caustica::accel::sah_build's constants (checked by a test).
const SAH_BINS: u32 = 16u;
const SAH_SMALL: u32 = 16u;
const SAH_LARGE_MAX_DEPTH: u32 = 24u;
const SAH_MAX_DEPTH: u32 = 32u;
const HYBRID_MORTON_DEPTH: u32 = 8u;

// The state words: the level the large stage is at, the root's split gap, the small tasks
// listed, then the large tasks listed for each level.
const STATE_LEVEL: u32 = 0u;
const STATE_ROOT_GAP: u32 = 1u;
const STATE_SMALL: u32 = 2u;
const STATE_COUNTS: u32 = 3u;

// No task, no parent.
const SAH_NONE: u32 = 0xffffffffu;
// A small task's parent word without a parent (the root); bit 31 is the side.
const SAH_NO_PARENT: u32 = 0x7fffffffu;

// How a large task splits.
const MODE_SAH: u32 = 0u;
const MODE_POSITION: u32 = 1u;

// Words of one large task's accumulators: the centroid box (3 low keys, 3 high keys), then for
// each axis and bin the count, the box's 3 low keys and 3 high keys.
const ACC_BOUNDS: u32 = 6u;
const BIN_WORDS: u32 = 7u;
const ACC_WORDS: u32 = 342u; // ACC_BOUNDS + 3 * SAH_BINS * BIN_WORDS

// Twin of caustica::gpu::sah_build::SahParams (layout checked by a test).
struct SahParams {
    // Primitives.
    n: u32,
    // 1 for the hybrid (the order starts as the Morton order, codes are given).
    hybrid: u32,
    // Large tasks a level holds.
    task_capacity: u32,
    // Small tasks the build holds.
    small_capacity: u32,
}

// One large task (a node of more than SAH_SMALL primitives); the split kernel fills in the
// second half. Twin of caustica::gpu::sah_build::SahTask.
struct SahTask {
    first: u32,
    count: u32,
    depth: u32,
    // The parent's node and whether this is its right child (SAH_NONE: the root).
    parent: u32,
    side: u32,
    // The node's number.
    index: u32,
    mode: u32,
    axis: u32,
    bin: u32,
    // Primitives that go left.
    left: u32,
    // The children's tasks in the next level's list (SAH_NONE: not large).
    left_task: u32,
    right_task: u32,
    // The binned axis's centroid low corner and extent (bits).
    lo: u32,
    extent: u32,
    _pad0: u32,
    _pad1: u32,
}

// The linear invocation index of a grid that may spill into y (`Kernel::grid_for`).
fn sah_index(gid: vec3<u32>, nwg: vec3<u32>, size: u32) -> u32 {
    return gid.x + gid.y * nwg.x * size;
}

// Twin of sah_area.
fn sah_area(lo: vec3<f32>, hi: vec3<f32>) -> f32 {
    if any(lo > hi) {
        return 0.0;
    }
    let d = flush3(flush3(hi) - flush3(lo));
    return flush(flush(flush(d.x * d.y) + flush(d.y * d.z)) + flush(d.z * d.x));
}

// The empty box, as words (+inf low corner, -inf high one): the identity of union_words.
const EMPTY_BOX: BoxWords = BoxWords(vec3<u32>(0x7f800000u), vec3<u32>(0xff800000u));

// sah_area of a box given as words.
fn box_area(b: BoxWords) -> f32 {
    return sah_area(bitcast<vec3<f32>>(b.lo), bitcast<vec3<f32>>(b.hi));
}

// Twin of sah_cost.
fn sah_cost(area_left: f32, n_left: u32, area_right: f32, n_right: u32) -> f32 {
    return flush(flush(area_left * f32(n_left)) + flush(area_right * f32(n_right)));
}

// Twin of cost_key.
// NaN is told by its bits: compilers may assume floats are never NaN.
fn cost_key(cost: f32) -> u32 {
    let bits = bitcast<u32>(cost);
    if (bits & 0x7fffffffu) > 0x7f800000u {
        return 0xffffffffu;
    }
    return bits;
}

// Twin of sah_bin.
fn sah_bin(c: f32, lo: f32, extent: f32) -> u32 {
    var bin = 0u;
    for (var j = 1u; j < SAH_BINS; j++) {
        if c >= flush(flush(extent * (f32(j) * 0.0625)) + lo) {
            bin++;
        }
    }
    return bin;
}

// Twin of axis_open.
fn axis_open(extent: f32) -> bool {
    let bits = bitcast<u32>(extent);
    return bits >= 0x00800000u && bits < 0x7f800000u;
}

// The bits of a total-order key (total_order_key) again.
fn key_bits(key: vec3<u32>) -> vec3<u32> {
    let positive = (key & vec3<u32>(0x80000000u)) != vec3<u32>(0u);
    return select(~key, key ^ vec3<u32>(0x80000000u), positive);
}

// The value an accumulator word starts from: the largest key for a minimum, 0 for a maximum or
// a count.
fn acc_identity(word: u32) -> u32 {
    var w = word;
    if w >= ACC_BOUNDS {
        w = (w - ACC_BOUNDS) % BIN_WORDS;
        if w == 0u {
            return 0u;
        }
        w -= 1u;
    }
    return select(0u, 0xffffffffu, w < 3u);
}

// Internal node numbering (twin of inner_index).
fn inner_index(gap: u32, root_gap: u32, is_root: bool) -> u32 {
    if is_root {
        return 0u;
    }
    if gap < root_gap {
        return gap + 1u;
    }
    return gap;
}

