// Point kd-tree build, small-node stage: one invocation per small root (a heap slot of kind
// KIND_SMALL, 1..=KD_SMALL_NODE points in x order in the small list) builds the root's whole
// subtree by VVH (paper 003 section 6.2.2.3): the left set of each of the 3n candidate planes
// as a u32 mask, then depth first, each node's cheapest candidate by countOneBits, split while
// that is cheaper than a leaf. The subtree is written in preorder to `scratch` at 4 * start
// (right-child indices relative to the subtree's first word) and its size to the heap; the
// output stage moves it into place.
//!include "kdtree/build_small_common.wgsl"

var<private> coords: array<vec3<f32>, KD_SMALL_NODE>;
// left_sets[a * KD_SMALL_NODE + j]: the points whose key on axis a is at most point j's.
var<private> left_sets: array<u32, 96>;

// The cheapest valid candidate (axis, point) when splitting there beats a leaf, else
// (NO_SPLIT, 0). Twin of `SmallRoot::best_split`: the same order, ties and exact comparisons.
fn best_small_split(mask: u32, lo: vec3<f32>, hi: vec3<f32>, depth: u32) -> vec2<u32> {
    if depth >= KD_MAX_BRANCH_DEPTH {
        return vec2<u32>(NO_SPLIT, 0u);
    }
    let n = countOneBits(mask);
    var have = false;
    var best_cost = 0.0;
    var best_extent = 0.0;
    var best = vec2<u32>(NO_SPLIT, 0u);
    for (var a = 0u; a < 3u; a++) {
        let extent = hi[a] - lo[a];
        if !(extent > 0.0) {
            continue;
        }
        var axis_have = false;
        var axis_cost = 0.0;
        var axis_point = 0u;
        var rest = mask;
        while rest != 0u {
            let j = firstTrailingBit(rest);
            rest &= rest - 1u;
            let n_left = countOneBits(mask & left_sets[a * KD_SMALL_NODE + j]);
            let n_right = n - n_left;
            if n_right == 0u {
                continue;
            }
            let cost = small_split_cost(n_left, n_right, coords[j][a], lo[a], hi[a]);
            if !axis_have || cost < axis_cost {
                axis_have = true;
                axis_cost = cost;
                axis_point = j;
            }
        }
        if axis_have && (!have || axis_cost * best_extent < best_cost * extent) {
            have = true;
            best_cost = axis_cost;
            best_extent = extent;
            best = vec2<u32>(a, axis_point);
        }
    }
    if have && KD_VVH_TRAVERSAL_COST * best_extent + best_cost < f32(n) * best_extent {
        return best;
    }
    return vec2<u32>(NO_SPLIT, 0u);
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let h = element_index(gid, nwg);
    if h >= params.heap_slots {
        return;
    }
    let node = h * NODE_WORDS;
    if (heap_nodes[node + NODE_INFO] & 3u) != KIND_SMALL {
        return;
    }
    let start = heap_nodes[node + NODE_START];
    let count = min(heap_nodes[node + NODE_COUNT], KD_SMALL_NODE);
    var keys: array<vec3<u32>, KD_SMALL_NODE>;
    for (var j = 0u; j < count; j++) {
        let p = points[small_list[start + j]];
        coords[j] = vec3<f32>(kd_coord(p.x), kd_coord(p.y), kd_coord(p.z));
        keys[j] = vec3<u32>(kd_key(p.x), kd_key(p.y), kd_key(p.z));
    }
    for (var a = 0u; a < 3u; a++) {
        for (var j = 0u; j < count; j++) {
            var left_set = 0u;
            for (var i = 0u; i < count; i++) {
                if keys[i][a] <= keys[j][a] {
                    left_set |= 1u << i;
                }
            }
            left_sets[a * KD_SMALL_NODE + j] = left_set;
        }
    }
    let base = 4u * start;
    var stack: array<Pending, 34>;
    var sp = 1u;
    let all = select((1u << count) - 1u, 0xffffffffu, count == 32u);
    stack[0] = Pending(all, heap_level(h), NO_PATCH,
        vec3<f32>(heap_boxes[h * BOX_WORDS], heap_boxes[h * BOX_WORDS + 1u], heap_boxes[h * BOX_WORDS + 2u]),
        vec3<f32>(heap_boxes[h * BOX_WORDS + 3u], heap_boxes[h * BOX_WORDS + 4u], heap_boxes[h * BOX_WORDS + 5u]));
    var w = 0u;
    var nodes = 0u;
    var leaves = 0u;
    var max_depth = 0u;
    // Every split makes two non-empty, smaller children, so this ends (at most 2 * count - 1
    // nodes); the stack holds at most one pending right child per level plus the current node.
    while sp > 0u && sp <= 34u {
        sp -= 1u;
        let task = stack[sp];
        if task.patch_word != NO_PATCH {
            scratch[base + task.patch_word] |= w;
        }
        nodes += 1u;
        let best = best_small_split(task.mask, task.lo, task.hi, task.depth);
        if best.x == NO_SPLIT {
            let size = countOneBits(task.mask);
            scratch[base + w] = KD_LEAF | size;
            var k = w + 1u;
            var rest = task.mask;
            while rest != 0u {
                let j = firstTrailingBit(rest);
                rest &= rest - 1u;
                scratch[base + k] = small_list[start + j];
                k += 1u;
            }
            w = k;
            leaves += 1u;
            max_depth = max(max_depth, task.depth);
            continue;
        }
        let axis = best.x;
        let split = coords[best.y][axis];
        let left = task.mask & left_sets[axis * KD_SMALL_NODE + best.y];
        scratch[base + w] = axis << 30u;
        scratch[base + w + 1u] = bitcast<u32>(split);
        var left_hi = task.hi;
        left_hi[axis] = split;
        var right_lo = task.lo;
        right_lo[axis] = split;
        stack[sp] = Pending(task.mask & ~left, task.depth + 1u, w, right_lo, task.hi);
        stack[sp + 1u] = Pending(left, task.depth + 1u, NO_PATCH, task.lo, left_hi);
        sp += 2u;
        w += 2u;
    }
    heap_nodes[node + NODE_SIZE] = w;
    atomicAdd(&stats[1], nodes);
    atomicAdd(&stats[2], leaves);
    atomicMax(&stats[3], max_depth);
}
