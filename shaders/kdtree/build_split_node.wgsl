// Shared by build_split and build_medium: the split of one large node (heap index h) on its
// level. The includer declares the bindings `points`, `heap_nodes` and `heap_boxes`, and
// `split_list(i)`, the entry i of the three association lists as they are on the node's level.

fn write_child(c: u32, start: u32, count: u32, lo: vec3<f32>, hi: vec3<f32>) {
    heap_nodes[c * NODE_WORDS + NODE_START] = start;
    heap_nodes[c * NODE_WORDS + NODE_COUNT] = count;
    heap_nodes[c * NODE_WORDS + NODE_INFO] = select(KIND_SMALL, KIND_LARGE, count > KD_SMALL_NODE);
    for (var a = 0u; a < 3u; a++) {
        heap_boxes[c * BOX_WORDS + a] = lo[a];
        heap_boxes[c * BOX_WORDS + 3u + a] = hi[a];
    }
}

// A large node's tight box in O(1) from its sorted lists' ends, its empty-space cut-offs, and
// either a leaf (all points equal) or a median split on the longest axis of the tight box;
// writes the children's slots on the next level (large, small or dead). Any other node's
// children are dead.
fn split_node(h: u32) {
    let left_child = 2u * h + 1u;
    let right_child = 2u * h + 2u;
    let node = h * NODE_WORDS;
    if (heap_nodes[node + NODE_INFO] & 3u) != KIND_LARGE {
        heap_nodes[left_child * NODE_WORDS + NODE_INFO] = KIND_DEAD;
        heap_nodes[right_child * NODE_WORDS + NODE_INFO] = KIND_DEAD;
        return;
    }
    let n = params.n;
    let start = heap_nodes[node + NODE_START];
    let count = heap_nodes[node + NODE_COUNT];
    let last = start + count - 1u;
    var lo: vec3<f32>;
    var hi: vec3<f32>;
    var tight_lo: vec3<f32>;
    var tight_hi: vec3<f32>;
    var all_equal = true;
    for (var a = 0u; a < 3u; a++) {
        lo[a] = heap_boxes[h * BOX_WORDS + a];
        hi[a] = heap_boxes[h * BOX_WORDS + 3u + a];
        let first_point = points[split_list(a * n + start)][a];
        let last_point = points[split_list(a * n + last)][a];
        tight_lo[a] = kd_coord(first_point);
        tight_hi[a] = kd_coord(last_point);
        all_equal = all_equal && kd_key(first_point) == kd_key(last_point);
        heap_boxes[h * BOX_WORDS + 6u + a] = tight_lo[a];
        heap_boxes[h * BOX_WORDS + 9u + a] = tight_hi[a];
    }
    // Empty-space cut-offs against the inherited box as it came in; the box then shrinks to
    // the tight box on every cut side.
    var cuts = 0u;
    var box_lo = lo;
    var box_hi = hi;
    for (var a = 0u; a < 3u; a++) {
        let extent = hi[a] - lo[a];
        if empty_side_is_cut(tight_lo[a] - lo[a], extent) {
            cuts |= 1u << (2u * a);
            box_lo[a] = tight_lo[a];
        }
        if empty_side_is_cut(hi[a] - tight_hi[a], extent) {
            cuts |= 2u << (2u * a);
            box_hi[a] = tight_hi[a];
        }
    }
    if all_equal {
        heap_nodes[node + NODE_INFO] = KIND_EQUAL | (cuts << 4u);
        heap_nodes[left_child * NODE_WORDS + NODE_INFO] = KIND_DEAD;
        heap_nodes[right_child * NODE_WORDS + NODE_INFO] = KIND_DEAD;
        return;
    }
    var axis = 0u;
    var longest = tight_hi[0] - tight_lo[0];
    for (var a = 1u; a < 3u; a++) {
        let extent = tight_hi[a] - tight_lo[a];
        if extent > longest {
            axis = a;
            longest = extent;
        }
    }
    let left = count / 2u;
    let median = split_list(axis * n + start + left - 1u);
    let split = kd_coord(points[median][axis]);
    heap_nodes[node + NODE_INFO] = KIND_LARGE | (axis << 2u) | (cuts << 4u);
    heap_nodes[node + NODE_SPLIT] = bitcast<u32>(split);
    var left_hi = box_hi;
    left_hi[axis] = split;
    var right_lo = box_lo;
    right_lo[axis] = split;
    write_child(left_child, start, left, box_lo, left_hi);
    write_child(right_child, start + left, count - left, right_lo, box_hi);
}
