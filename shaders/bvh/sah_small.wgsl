// Binned SAH, after the large levels: one invocation per small task (a node of 2..=SAH_SMALL
// primitives) builds its whole subtree alone, depth first, by the very rules of the large
// levels: caustica::accel::sah_build::build_sah's loop, its split from choose_split and its
// stable partition through `scratch` (the task's own positions of it).
//!include "bvh/sah_common.wgsl"
//!include "bvh/sah_morton.wgsl"

@group(0) @binding(0) var<uniform> params: SahParams;
@group(0) @binding(1) var<storage, read> state: array<u32>;
@group(0) @binding(2) var<storage, read> small: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> order: array<u32>;
@group(0) @binding(4) var<storage, read_write> scratch: array<u32>;
@group(0) @binding(5) var<storage, read> boxes: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> nodes: array<BinaryNodeWords>;
@group(0) @binding(7) var<storage, read> codes: array<u32>;

fn sah_code(i: u32) -> u32 {
    return codes[i];
}

fn prim_box(p: u32) -> BoxWords {
    return BoxWords(bitcast<vec3<u32>>(boxes[2u * p].xyz), bitcast<vec3<u32>>(boxes[2u * p + 1u].xyz));
}

fn centroid_of(p: u32) -> vec3<f32> {
    return lbvh_centroid(boxes[2u * p].xyz, boxes[2u * p + 1u].xyz);
}

// The plane sah_best_plane chooses over order[first..first + count]: (axis, bin, left) with
// the axis's centroid low corner and extent, or left == 0 when there is none.
struct Plane {
    axis: u32,
    bin: u32,
    left: u32,
    lo: f32,
    extent: f32,
}

fn best_plane(first: u32, count: u32) -> Plane {
    var cb = EMPTY_BOX;
    for (var m = 0u; m < count; m++) {
        let c = bitcast<vec3<u32>>(centroid_of(order[first + m]));
        cb = union_words(cb, BoxWords(c, c));
    }
    let lo = bitcast<vec3<f32>>(cb.lo);
    let extent = flush3(bitcast<vec3<f32>>(cb.hi) - lo);
    var plane = Plane(0u, 0u, 0u, 0.0, 0.0);
    var best_key = 0u;
    for (var axis = 0u; axis < 3u; axis++) {
        if !axis_open(extent[axis]) {
            continue;
        }
        var counts: array<u32, 16>;
        var bin_boxes: array<BoxWords, 16>;
        for (var k = 0u; k < SAH_BINS; k++) {
            counts[k] = 0u;
            bin_boxes[k] = EMPTY_BOX;
        }
        for (var m = 0u; m < count; m++) {
            let p = order[first + m];
            let bin = sah_bin(centroid_of(p)[axis], lo[axis], extent[axis]);
            counts[bin] += 1u;
            bin_boxes[bin] = union_words(bin_boxes[bin], prim_box(p));
        }
        var right_area: array<f32, 16>;
        var right_count: array<u32, 16>;
        var rb = EMPTY_BOX;
        var rc = 0u;
        for (var k = SAH_BINS - 1u; k >= 1u; k--) {
            rb = union_words(rb, bin_boxes[k]);
            rc += counts[k];
            right_area[k - 1u] = box_area(rb);
            right_count[k - 1u] = rc;
        }
        var lb = EMPTY_BOX;
        var lc = 0u;
        for (var k = 0u; k < SAH_BINS - 1u; k++) {
            lb = union_words(lb, bin_boxes[k]);
            lc += counts[k];
            if lc == 0u || right_count[k] == 0u {
                continue;
            }
            let key = cost_key(sah_cost(box_area(lb), lc, right_area[k], right_count[k]));
            if plane.left == 0u || key < best_key {
                best_key = key;
                plane = Plane(axis, k, lc, lo[axis], extent[axis]);
            }
        }
    }
    return plane;
}

fn goes_left(p: u32, plane: Plane) -> bool {
    return sah_bin(centroid_of(p)[plane.axis], plane.lo, plane.extent) <= plane.bin;
}

@compute @workgroup_size(SAH_TASK_WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let s = sah_index(gid, nwg, SAH_TASK_WG_SIZE);
    if s >= state[STATE_SMALL] {
        return;
    }
    let n = params.n;
    var root_gap = state[STATE_ROOT_GAP];
    // Pending nodes: (first, count, depth, parent | side << 31).
    var stack: array<vec4<u32>, SAH_SMALL>;
    stack[0] = small[s];
    var top = 1u;
    while top > 0u {
        top--;
        let job = stack[top];
        let first = job.x;
        let count = job.y;
        let depth = job.z;
        let parent = job.w & 0x7fffffffu;
        let side = job.w >> 31u;
        let is_root = parent == SAH_NO_PARENT;

        var left = count / 2u;
        var split = false;
        if params.hybrid != 0u && depth < HYBRID_MORTON_DEPTH {
            let ca = codes[first];
            let cb = codes[first + count - 1u];
            if ca != cb {
                left = morton_split_in(first, count, ca, cb);
                split = true;
            }
        }
        if !split && depth < SAH_MAX_DEPTH {
            let plane = best_plane(first, count);
            if plane.left != 0u {
                left = plane.left;
                var l = 0u;
                var r = plane.left;
                for (var m = 0u; m < count; m++) {
                    let p = order[first + m];
                    if goes_left(p, plane) {
                        scratch[first + l] = p;
                        l++;
                    } else {
                        scratch[first + r] = p;
                        r++;
                    }
                }
                for (var m = 0u; m < count; m++) {
                    order[first + m] = scratch[first + m];
                }
            }
        }

        let gap = first + left - 1u;
        if is_root {
            root_gap = gap;
        }
        let index = inner_index(gap, root_gap, is_root);
        var bounds = EMPTY_BOX;
        for (var m = 0u; m < count; m++) {
            bounds = union_words(bounds, prim_box(order[first + m]));
        }
        let left_leaf = select(BVH_NO_NODE, n - 1u + first, left == 1u);
        let right_leaf = select(BVH_NO_NODE, n - 1u + first + left, count - left == 1u);
        let parent_node = select(parent, BVH_NO_NODE, is_root);
        nodes[index] = BinaryNodeWords(bounds.lo, left_leaf, bounds.hi, right_leaf, first, count, parent_node, 0u);
        if !is_root {
            if side == 0u {
                nodes[parent].left = index;
            } else {
                nodes[parent].right = index;
            }
        }
        if left == 1u {
            nodes[n - 1u + first].parent = index;
        }
        if count - left == 1u {
            nodes[n - 1u + first + left].parent = index;
        }
        if count - left >= 2u {
            stack[top] = vec4<u32>(first + left, count - left, depth + 1u, index | (1u << 31u));
            top++;
        }
        if left >= 2u {
            stack[top] = vec4<u32>(first, left, depth + 1u, index);
            top++;
        }
    }
}
