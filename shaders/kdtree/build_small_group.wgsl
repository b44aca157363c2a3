// Point kd-tree build, small-node stage for few small roots: one workgroup of KD_SMALL_NODE
// invocations per small root (a heap slot of kind KIND_SMALL, 1..=KD_SMALL_NODE points in x
// order in the small list) builds the root's whole subtree by VVH, as build_small.wgsl does
// with one invocation per root, word for word: invocation j makes point j's three left sets
// and, at every node, measures point j's three candidates; invocations 0-2 pick each axis's
// cheapest and invocation 0 the node's, walks the nodes depth first and writes the words. A
// build over few points has few small roots, too few to keep the GPU busy with one invocation
// each (gpu::kdtree::SMALL_GROUP_MAX_POINTS picks the kernel).
//!include "kdtree/build_small_common.wgsl"

var<workgroup> sh_coords: array<vec3<f32>, KD_SMALL_NODE>;
var<workgroup> sh_keys: array<vec3<u32>, KD_SMALL_NODE>;
// sh_left_sets[a * KD_SMALL_NODE + j]: the points whose key on axis a is at most point j's.
var<workgroup> sh_left_sets: array<u32, 96>;
// Each candidate's cost (axis a, point j at a * KD_SMALL_NODE + j) and whether it is valid.
var<workgroup> sh_cost: array<f32, 96>;
var<workgroup> sh_valid: array<u32, 96>;
// Each axis's cheapest candidate: (valid, point) and its cost.
var<workgroup> sh_axis_best: array<vec2<u32>, 3>;
var<workgroup> sh_axis_cost: array<f32, 3>;
// The pending nodes (invocation 0's), the node being visited, and the loop's state: (stack
// pointer, words written, 1 when the node just visited became a leaf).
var<workgroup> sh_stack: array<Pending, 34>;
var<workgroup> wg_task: Pending;
var<workgroup> wg_state: vec3<u32>;
var<workgroup> wg_root: vec3<u32>;

// The first of the cheapest valid candidates of axis a in point order (invocations 0-2, one
// axis each). Twin of the inner loop of `SmallRoot::best_split`: strict comparisons keep the
// first minimum.
fn axis_best(a: u32, mask: u32) {
    var have = false;
    var cost = 0.0;
    var point = 0u;
    var rest = mask;
    while rest != 0u {
        let j = firstTrailingBit(rest);
        rest &= rest - 1u;
        let c = a * KD_SMALL_NODE + j;
        if sh_valid[c] != 0u && (!have || sh_cost[c] < cost) {
            have = true;
            cost = sh_cost[c];
            point = j;
        }
    }
    sh_axis_best[a] = vec2<u32>(select(0u, 1u, have), point);
    sh_axis_cost[a] = cost;
}

// The cheapest valid candidate (axis, point) when splitting there beats a leaf, else
// (NO_SPLIT, 0), from the axes' cheapest (invocation 0). Twin of `SmallRoot::best_split`: the
// same order, ties and exact comparisons.
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
        let axis = sh_axis_best[a];
        let axis_cost = sh_axis_cost[a];
        if axis.x != 0u && (!have || axis_cost * best_extent < best_cost * extent) {
            have = true;
            best_cost = axis_cost;
            best_extent = extent;
            best = vec2<u32>(a, axis.y);
        }
    }
    if have && KD_VVH_TRAVERSAL_COST * best_extent + best_cost < f32(n) * best_extent {
        return best;
    }
    return vec2<u32>(NO_SPLIT, 0u);
}

@compute @workgroup_size(32)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
    let h = block_index(wid, nwg);
    if lane == 0u {
        wg_root = vec3<u32>(KIND_DEAD, 0u, 0u);
        if h < params.heap_slots {
            let node = h * NODE_WORDS;
            wg_root = vec3<u32>(heap_nodes[node + NODE_INFO] & 3u, heap_nodes[node + NODE_START],
                min(heap_nodes[node + NODE_COUNT], KD_SMALL_NODE));
        }
    }
    let root = workgroupUniformLoad(&wg_root);
    if root.x != KIND_SMALL {
        return;
    }
    let node = h * NODE_WORDS;
    let start = root.y;
    let count = root.z;
    if lane < count {
        let p = points[small_list[start + lane]];
        sh_coords[lane] = vec3<f32>(kd_coord(p.x), kd_coord(p.y), kd_coord(p.z));
        sh_keys[lane] = vec3<u32>(kd_key(p.x), kd_key(p.y), kd_key(p.z));
    }
    workgroupBarrier();
    if lane < count {
        let own = sh_keys[lane];
        var sets = vec3<u32>(0u);
        for (var i = 0u; i < count; i++) {
            let key = sh_keys[i];
            let bit = 1u << i;
            sets.x |= select(0u, bit, key.x <= own.x);
            sets.y |= select(0u, bit, key.y <= own.y);
            sets.z |= select(0u, bit, key.z <= own.z);
        }
        sh_left_sets[lane] = sets.x;
        sh_left_sets[KD_SMALL_NODE + lane] = sets.y;
        sh_left_sets[2u * KD_SMALL_NODE + lane] = sets.z;
    }
    let base = 4u * start;
    var nodes = 0u;
    var leaves = 0u;
    var max_depth = 0u;
    if lane == 0u {
        let all = select((1u << count) - 1u, 0xffffffffu, count == 32u);
        sh_stack[0] = Pending(all, heap_level(h), NO_PATCH,
            vec3<f32>(heap_boxes[h * BOX_WORDS], heap_boxes[h * BOX_WORDS + 1u], heap_boxes[h * BOX_WORDS + 2u]),
            vec3<f32>(heap_boxes[h * BOX_WORDS + 3u], heap_boxes[h * BOX_WORDS + 4u], heap_boxes[h * BOX_WORDS + 5u]));
        wg_state = vec3<u32>(1u, 0u, 0u);
    }
    // Every split makes two non-empty, smaller children, so this ends (at most 2 * count - 1
    // nodes); the stack holds at most one pending right child per level plus the current node.
    loop {
        let state = workgroupUniformLoad(&wg_state);
        if state.x == 0u || state.x > 34u {
            break;
        }
        let w = state.y;
        if lane == 0u {
            wg_task = sh_stack[state.x - 1u];
        }
        let task = workgroupUniformLoad(&wg_task);
        // Point `lane`'s three candidates.
        if lane < count && ((task.mask >> lane) & 1u) != 0u {
            let n = countOneBits(task.mask);
            for (var a = 0u; a < 3u; a++) {
                let c = a * KD_SMALL_NODE + lane;
                let n_left = countOneBits(task.mask & sh_left_sets[c]);
                let n_right = n - n_left;
                sh_valid[c] = select(0u, 1u, n_right != 0u);
                sh_cost[c] = small_split_cost(n_left, n_right, sh_coords[lane][a], task.lo[a], task.hi[a]);
            }
        }
        workgroupBarrier();
        if lane < 3u {
            axis_best(lane, task.mask);
        }
        workgroupBarrier();
        if lane == 0u {
            let sp = state.x - 1u;
            if task.patch_word != NO_PATCH {
                scratch[base + task.patch_word] |= w;
            }
            nodes += 1u;
            let best = best_small_split(task.mask, task.lo, task.hi, task.depth);
            if best.x == NO_SPLIT {
                let size = countOneBits(task.mask);
                scratch[base + w] = KD_LEAF | size;
                leaves += 1u;
                max_depth = max(max_depth, task.depth);
                wg_state = vec3<u32>(sp, w + 1u + size, 1u);
            } else {
                let axis = best.x;
                let split = sh_coords[best.y][axis];
                let left = task.mask & sh_left_sets[axis * KD_SMALL_NODE + best.y];
                scratch[base + w] = axis << 30u;
                scratch[base + w + 1u] = bitcast<u32>(split);
                var left_hi = task.hi;
                left_hi[axis] = split;
                var right_lo = task.lo;
                right_lo[axis] = split;
                sh_stack[sp] = Pending(task.mask & ~left, task.depth + 1u, w, right_lo, task.hi);
                sh_stack[sp + 1u] = Pending(left, task.depth + 1u, NO_PATCH, task.lo, left_hi);
                wg_state = vec3<u32>(sp + 2u, w + 2u, 0u);
            }
        }
        // A leaf's points, in point order, after its header (every invocation its own).
        let next = workgroupUniformLoad(&wg_state);
        if next.z != 0u && lane < count && ((task.mask >> lane) & 1u) != 0u {
            let rank = countOneBits(task.mask & ((1u << lane) - 1u));
            scratch[base + w + 1u + rank] = small_list[start + lane];
        }
    }
    let words = workgroupUniformLoad(&wg_state).y;
    if lane == 0u {
        heap_nodes[node + NODE_SIZE] = words;
        atomicAdd(&stats[1], nodes);
        atomicAdd(&stats[2], leaves);
        atomicMax(&stats[3], max_depth);
    }
}
