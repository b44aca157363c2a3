// k-nearest-neighbour search over a point kd-tree: the twin of src/accel/knn.rs (knn_search,
// KnnHeap), step for step, so both find the same neighbours in the same heap layout. Tree layout:
// src/accel/kdtree.rs (internal node: axis << 30 | right child word, then the split's bits, left
// child next; leaf: 3 << 30 | n, then n point indices). Bindings 50-59 belong to this include
// and the files built on it (photon_estimate.wgsl).
//
// knn_search(q, k, max_dist2) fills the private max-heap (read with knn_heap_dist(j) and
// knn_heap_index(j)) with the k smallest (squared distance, index) pairs with distance <=
// max_dist2 and returns their count; knn_sort_heap(count) then orders them ascending. A tree
// deeper than the stack, or malformed, sets bits of knn_error (the kernel reports them; the
// results are then incomplete).
//
// The heap's size is the including kernel's: it declares KNN_HEAP_SIZE (the largest k it
// takes) and KNN_HEAP_DEPTH (the most moves of a sift in a heap of that size, floor(log2(size
// - 1)) + 1, 0 for one entry) before this include, so that a kernel with a small k keeps a
// small heap: the heap lives in the invocation's private memory, which a GPU spills to its
// caches past the registers, and its size sets that traffic. A k above the size sets
// KNN_ERROR_HEAP.
//
// Loop budget. llvmpipe (lavapipe) counts the back edges of every loop of an invocation group
// (8 lanes) in one counter and, past 65535, leaves every loop after its current iteration
// (gallivm's LP_MAX_TGSI_LOOP_ITERATIONS), silently. So the heap's sifts are loops of a constant
// KNN_HEAP_DEPTH steps, which the compiler unrolls (no back edges), and the traversal is a single
// loop (no nested loop for a leaf's points, whose iterations the group would run lane after
// lane) that takes KNN_LEAF_CHUNK points per iteration; every loop that ends by its condition
// checks afterwards that the condition is false, setting KNN_ERROR_LOOP_CUT if a driver stopped
// it early. Other drivers have no such limit.

@group(0) @binding(50) var<storage, read> kd_words: array<u32>;
// The points (their count bounds the indices; the search reads them in kd_leaf_points).
@group(0) @binding(51) var<storage, read> kd_points: array<vec4<f32>>;
// At the word of every leaf entry, the point's position and index (w, as bits):
// gpu::kdtree::leaf_points_of. A leaf's points are read there one after the other.
@group(0) @binding(59) var<storage, read> kd_leaf_points: array<vec4<f32>>;

// accel::knn::KNN_MAX_K: the largest heap a kernel may declare.
const KNN_MAX_K: u32 = 128u;
// accel::kdtree::KD_MAX_BRANCH_DEPTH: the stack's size.
const KNN_STACK_SIZE: u32 = 64u;
// accel::kdtree::KD_LEAF and KD_INDEX_MASK.
const KNN_LEAF: u32 = 0xc0000000u;
const KNN_INDEX_MASK: u32 = 0x3fffffffu;
// knn_error bits.
const KNN_ERROR_STACK: u32 = 1u;
const KNN_ERROR_TREE: u32 = 2u;
const KNN_ERROR_LOOP_CUT: u32 = 4u;
const KNN_ERROR_HEAP: u32 = 8u;
// The points a leaf offers per iteration of the loop, KNN_LEAF_CHUNK, and the iterations
// between two flushes of the queue, KNN_FLUSH_EVERY, are the includer's (with the heap's size):
// see knn_enqueue.
const KNN_QUEUE: u32 = KNN_LEAF_CHUNK * KNN_FLUSH_EVERY;

// The heap, as two arrays (one array of (distance, index) pairs measured slower on the lent
// H100, docs/performance.md). Read through knn_heap_dist(j) and knn_heap_index(j).
var<private> knn_heap_d: array<f32, KNN_HEAP_SIZE>;
var<private> knn_heap_i: array<u32, KNN_HEAP_SIZE>;
fn knn_heap_dist(j: u32) -> f32 {
    return knn_heap_d[j];
}
fn knn_heap_index(j: u32) -> u32 {
    return knn_heap_i[j];
}
fn knn_heap_put(j: u32, d: f32, i: u32) {
    knn_heap_d[j] = d;
    knn_heap_i[j] = i;
}
var<private> knn_count: u32;
// The root's squared distance once the heap holds k entries (the bound; kept out of the heap).
var<private> knn_worst: f32;
var<private> knn_k: u32;
var<private> knn_max_dist2: f32;
var<private> knn_error: u32;
// Far children still to visit: node word, and the query's offsets from their box (xyz) with
// the box's squared distance (w, knn_box_distance2).
var<private> knn_stack_node: array<u32, KNN_STACK_SIZE>;
var<private> knn_stack_box: array<vec4<f32>, KNN_STACK_SIZE>;

// accel::knn::split: d = h + l exactly, h the 12 leading significant bits of d, so that h·h,
// h·l and l·l are exact.
fn knn_split(d: f32) -> vec2<f32> {
    let h = bitcast<f32>(bitcast<u32>(d) & 0xfffff000u);
    return vec2<f32>(h, d - h);
}

// accel::knn::squared_distance: d = q - p per component, then h² + 2hl + l² from exact
// products in a fixed order, so that neither a driver's contraction of a·b + c nor an unfused
// fma can change it (see the module docs of src/accel/knn.rs).
fn knn_distance2(q: vec3<f32>, p: vec3<f32>) -> f32 {
    let x = knn_split(q.x - p.x);
    let y = knn_split(q.y - p.y);
    let z = knn_split(q.z - p.z);
    let high = (x.x * x.x + y.x * y.x) + z.x * z.x;
    let middle = (2.0 * (x.x * x.y) + 2.0 * (y.x * y.y)) + 2.0 * (z.x * z.y);
    let low = (x.y * x.y + y.y * y.y) + z.y * z.y;
    return high + (middle + low);
}

// accel::knn::PLANE_SHRINK, 1 - 2^-20, as its f32 bits.
const KNN_PLANE_SHRINK_BITS: u32 = 0x3f7ffff0u;

// accel::knn::box_distance2: from the query's offsets from a node's box, a lower bound of the
// squared distance of every point in the node.
fn knn_box_distance2(offsets: vec3<f32>) -> f32 {
    return ((offsets.x * offsets.x + offsets.y * offsets.y) + offsets.z * offsets.z) * bitcast<f32>(KNN_PLANE_SHRINK_BITS);
}

// KnnHeap::bound: max_dist2 until k were found, then the worst one's squared distance (kept in
// knn_worst, set to max_dist2 by knn_search and to the root's distance by knn_offer).
fn knn_bound() -> f32 {
    return knn_worst;
}

// KnnHeap::sift_down: places (d, i) at the root and sifts it down within the first `size`.
// The order is Neighbour::precedes (smaller squared distance, ties by the smaller index),
// written out so that the heap's index array is read only on a tie and for the entry that
// moves: a step reads two distances and one index, where comparing whole entries read three of
// each (the search waits on these reads; docs/performance.md).
fn knn_sift_down(size: u32, d: f32, i: u32) {
    var c = 0u;
    var moving = true;
    for (var step = 0u; step < KNN_HEAP_DEPTH; step++) {
        let left = 2u * c + 1u;
        if moving && left < size {
            var worse = left;
            var worse_d = knn_heap_d[left];
            let right = left + 1u;
            if right < size {
                let right_d = knn_heap_d[right];
                if worse_d < right_d || (worse_d == right_d && knn_heap_i[left] < knn_heap_i[right]) {
                    worse = right;
                    worse_d = right_d;
                }
            }
            if d < worse_d || (d == worse_d && i < knn_heap_i[worse]) {
                knn_heap_put(c, worse_d, knn_heap_i[worse]);
                c = worse;
            } else {
                moving = false;
            }
        }
    }
    knn_heap_put(c, d, i);
}

// KnnHeap::offer: kept when a candidate and better than the worst of a full heap.
fn knn_offer(d: f32, i: u32) {
    if knn_count < knn_k {
        if d <= knn_max_dist2 {
            // Sift up: worse parents move down until the new entry's place is found (indices
            // read on ties and for the parent that moves, as in knn_sift_down).
            var c = knn_count;
            knn_count += 1u;
            var moving = true;
            for (var step = 0u; step < KNN_HEAP_DEPTH; step++) {
                if moving && c > 0u {
                    let parent = (c - 1u) / 2u;
                    let parent_d = knn_heap_d[parent];
                    if parent_d < d || (parent_d == d && knn_heap_i[parent] < i) {
                        knn_heap_put(c, parent_d, knn_heap_i[parent]);
                        c = parent;
                    } else {
                        moving = false;
                    }
                }
            }
            knn_heap_put(c, d, i);
            if knn_count == knn_k {
                knn_worst = knn_heap_dist(0u);
            }
        }
    } else if d < knn_worst || (d == knn_worst && i < knn_heap_i[0]) {
        knn_sift_down(knn_count, d, i);
        knn_worst = knn_heap_dist(0u);
    }
}

// KnnHeap::into_sorted: a heap sort of the first `count` entries into ascending order.
fn knn_sort_heap(count: u32) {
    var end = count;
    while end > 1u {
        let last = end - 1u;
        let d = knn_heap_d[last];
        let i = knn_heap_i[last];
        knn_heap_put(last, knn_heap_d[0], knn_heap_i[0]);
        knn_sift_down(last, d, i);
        end = last;
    }
    if end > 1u {
        knn_error |= KNN_ERROR_LOOP_CUT;
    }
}

// The queue. A point that may enter the heap (within max_dist2 while the heap fills, else not
// beyond the bound) waits in a queue of KNN_QUEUE entries, which is offered to the heap, in the
// points' order, every KNN_FLUSH_EVERY iterations of the search's loop and at its end. The
// invocations of a subgroup run the loop's iterations together, and each step of a sift runs for
// the subgroup when any invocation needs it; offering the points at once, nearly every point
// then cost the subgroup a full sift, most of whose invocations had nothing to insert. Flushed
// together, the queues keep more invocations of a sift busy (docs/performance.md, "kNN queues").
// The answers do not change: between flushes the bound is one the CPU had earlier, at least as
// large as its own, so the GPU visits every node the CPU visits, in the same order, and maybe
// more whose points the heap then turns away; the heap takes the same points in the same order.
// The queue's entries are written and read only at constant indices (unrolled loops), so that
// it stays in registers.
var<private> knn_queue_d: array<f32, KNN_QUEUE>;
var<private> knn_queue_i: array<u32, KNN_QUEUE>;
var<private> knn_queue_len: u32;

fn knn_enqueue(d: f32, i: u32) {
    // Flushed every iteration, the queue would only copy: the point is offered at once.
    if KNN_FLUSH_EVERY == 1u {
        knn_offer(d, i);
        return;
    }
    let full = knn_count >= knn_k;
    if (!full && d <= knn_max_dist2) || (full && d <= knn_bound()) {
        for (var s = 0u; s < KNN_QUEUE; s++) {
            if s == knn_queue_len {
                knn_queue_d[s] = d;
                knn_queue_i[s] = i;
            }
        }
        knn_queue_len += 1u;
    }
}

fn knn_flush() {
    for (var s = 0u; s < KNN_QUEUE; s++) {
        if s < knn_queue_len {
            knn_offer(knn_queue_d[s], knn_queue_i[s]);
        }
    }
    knn_queue_len = 0u;
}

fn knn_is_empty_leaf(node: u32) -> bool {
    return kd_words[node] == KNN_LEAF;
}

// accel::knn::knn_search (see its comment for why the pruning is exact): depth first, nearer
// child first; a far child is pushed, and later visited, only while its box's squared distance
// (the query's offsets from the planes bounding it, carried down the path) is not above the
// bound. Empty leaves are never pushed, so the stack needs at most the tree's branch depth.
// Each iteration of the one loop pops a far child if there is no node to visit, visits a node
// (an internal node picks the child to go on with; a leaf marks its points as pending) and
// queues up to KNN_LEAF_CHUNK pending points, in the CPU's order (knn_enqueue). Every move into
// the tree goes to a larger word index (checked), so a malformed tree cannot make it loop forever.
fn knn_search(q: vec3<f32>, k: u32, max_dist2: f32) -> u32 {
    knn_count = 0u;
    knn_k = min(k, KNN_HEAP_SIZE);
    knn_max_dist2 = max_dist2;
    knn_worst = max_dist2;
    knn_error = select(0u, KNN_ERROR_HEAP, k > KNN_HEAP_SIZE);
    let word_count = arrayLength(&kd_words);
    let point_count = arrayLength(&kd_points);
    // A leaf-points array shorter than the words (a caller's mistake) reads as a bad tree.
    let leaf_point_last = arrayLength(&kd_leaf_points) - 1u;
    var top = 0u;
    var node = 0u;
    // The query's offsets from the current node's box (the root's holds it).
    var offsets = vec3<f32>(0.0);
    // `node` is the next node to visit; without one, the next far child is popped.
    var have_node = true;
    // The words of the current leaf's points still to offer: [pending, pending_end).
    var pending = 0u;
    var pending_end = 0u;
    var searching = knn_k > 0u && word_count > 0u;
    knn_queue_len = 0u;
    var iteration = 0u;
    while searching {
        if pending == pending_end {
            if !have_node {
                if top == 0u {
                    searching = false;
                } else {
                    top -= 1u;
                    let entry = knn_stack_box[top];
                    if entry.w <= knn_bound() {
                        node = knn_stack_node[top];
                        offsets = entry.xyz;
                        have_node = true;
                    }
                }
            }
            if have_node {
                let w = kd_words[node];
                let tag = w >> 30u;
                if tag == 3u {
                    have_node = false;
                    let n = w & KNN_INDEX_MASK;
                    if n > word_count - 1u - node {
                        knn_error |= KNN_ERROR_TREE;
                        searching = false;
                    } else {
                        pending = node + 1u;
                        pending_end = node + 1u + n;
                    }
                } else {
                    let right = w & KNN_INDEX_MASK;
                    if right < node + 3u || right >= word_count {
                        knn_error |= KNN_ERROR_TREE;
                        searching = false;
                    } else {
                        let split = bitcast<f32>(kd_words[node + 1u]);
                        // The far child lies beyond the plane: its offset on this axis is the
                        // plane's.
                        var far_offsets = offsets;
                        far_offsets[tag] = q[tag] - split;
                        let far2 = knn_box_distance2(far_offsets);
                        var near = node + 2u;
                        var far = right;
                        if q[tag] > split {
                            near = right;
                            far = node + 2u;
                        }
                        if knn_is_empty_leaf(far) {
                            node = near;
                        } else if knn_is_empty_leaf(near) {
                            node = far;
                            offsets = far_offsets;
                            have_node = far2 <= knn_bound();
                        } else {
                            if far2 <= knn_bound() {
                                if top < KNN_STACK_SIZE {
                                    knn_stack_node[top] = far;
                                    knn_stack_box[top] = vec4<f32>(far_offsets, far2);
                                    top += 1u;
                                } else {
                                    knn_error |= KNN_ERROR_STACK;
                                }
                            }
                            node = near;
                        }
                    }
                }
            }
        }
        if pending < pending_end {
            for (var u = 0u; u < KNN_LEAF_CHUNK; u++) {
                if pending < pending_end {
                    let entry = kd_leaf_points[min(pending, leaf_point_last)];
                    let i = bitcast<u32>(entry.w);
                    if i < point_count && pending <= leaf_point_last {
//!if KNN_FILTER
                        // A kernel compiled with KNN_FILTER offers only the points its own
                        // knn_accept(index) takes (accel::knn::knn_filtered).
                        if knn_accept(i) {
                            knn_enqueue(knn_distance2(q, entry.xyz), i);
                        }
//!else
                        knn_enqueue(knn_distance2(q, entry.xyz), i);
//!endif
                    } else {
                        knn_error |= KNN_ERROR_TREE;
                    }
                    pending += 1u;
                }
            }
        }
        iteration += 1u;
        if KNN_FLUSH_EVERY > 1u && iteration % KNN_FLUSH_EVERY == 0u {
            knn_flush();
        }
    }
    if KNN_FLUSH_EVERY > 1u {
        knn_flush();
    }
    if searching {
        knn_error |= KNN_ERROR_LOOP_CUT;
    }
    return knn_count;
}
