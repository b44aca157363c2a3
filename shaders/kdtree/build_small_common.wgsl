// Shared by the small-node stage's two kernels (build_small.wgsl, an invocation per small root,
// and build_small_group.wgsl, a workgroup per small root): their bindings, the pending node of a
// root's depth-first walk, and the choice among the axes' cheapest candidates.
//!include "kdtree/build_common.wgsl"

@group(0) @binding(0) var<uniform> params: KdParams;
@group(0) @binding(1) var<storage, read> points: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> small_list: array<u32>;
@group(0) @binding(3) var<storage, read_write> heap_nodes: array<u32>;
@group(0) @binding(4) var<storage, read> heap_boxes: array<f32>;
@group(0) @binding(5) var<storage, read_write> scratch: array<u32>;
// [words of the whole tree, nodes, leaves, max branch depth]
@group(0) @binding(6) var<storage, read_write> stats: array<atomic<u32>, 4>;

const NO_SPLIT: u32 = 3u;
const NO_PATCH: u32 = 0xffffffffu;

struct Pending {
    mask: u32,
    depth: u32,
    // the header word (relative) whose right-child index is this node, or NO_PATCH
    patch_word: u32,
    lo: vec3<f32>,
    hi: vec3<f32>,
}

// The cheapest valid candidate (axis, point) when splitting there beats a leaf, else
// (NO_SPLIT, 0), from each axis's cheapest valid candidate (`have`, `cost`, `point` per axis;
// an axis without extent is skipped). Twin of the end of `SmallRoot::best_split`: the same
// order, ties and exact comparisons.
fn choose_small_split(n: u32, lo: vec3<f32>, hi: vec3<f32>, have: vec3<bool>, cost: vec3<f32>,
        point: vec3<u32>) -> vec2<u32> {
    var chosen = false;
    var best_cost = 0.0;
    var best_extent = 0.0;
    var best = vec2<u32>(NO_SPLIT, 0u);
    for (var a = 0u; a < 3u; a++) {
        let extent = hi[a] - lo[a];
        if !(extent > 0.0) {
            continue;
        }
        if have[a] && (!chosen || cost[a] * best_extent < best_cost * extent) {
            chosen = true;
            best_cost = cost[a];
            best_extent = extent;
            best = vec2<u32>(a, point[a]);
        }
    }
    if chosen && KD_VVH_TRAVERSAL_COST * best_extent + best_cost < f32(n) * best_extent {
        return best;
    }
    return vec2<u32>(NO_SPLIT, 0u);
}

// Writes a split node's two words at word w of the subtree at `base` (axis, split) and returns
// its children, the right one first (pushed first, so the left one is visited next). `left` is
// the left child's point mask.
fn split_children(base: u32, w: u32, task: Pending, axis: u32, split: f32, left: u32) -> array<Pending, 2> {
    scratch[base + w] = axis << 30u;
    scratch[base + w + 1u] = bitcast<u32>(split);
    var left_hi = task.hi;
    left_hi[axis] = split;
    var right_lo = task.lo;
    right_lo[axis] = split;
    return array<Pending, 2>(
        Pending(task.mask & ~left, task.depth + 1u, w, right_lo, task.hi),
        Pending(left, task.depth + 1u, NO_PATCH, task.lo, left_hi));
}
