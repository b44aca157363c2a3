// Binned SAH, each large level's third step: one workgroup per large task of the level. It
// chooses the task's split as caustica::accel::sah_build::choose_split does (the hybrid's
// Morton split, the middle, or the cheapest binned plane from the accumulators: invocation
// 15a + k weighs the plane after bin k of axis a, and the workgroup keeps the first cheapest),
// writes the node's record (bounds: the union of its bins), links it into its parent, lists
// its children (a leaf's parent link now, a small child for bvh/sah_small.wgsl, a large one for
// the next level), and puts its accumulators back to their identities for the next level's
// tasks.
//!include "bvh/sah_common.wgsl"
//!include "bvh/sah_morton.wgsl"

@group(0) @binding(0) var<uniform> params: SahParams;
@group(0) @binding(1) var<storage, read_write> state: array<atomic<u32>>;
@group(0) @binding(2) var<storage, read_write> tasks: array<SahTask>;
@group(0) @binding(3) var<storage, read_write> small: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read_write> acc: array<u32>;
@group(0) @binding(5) var<storage, read_write> nodes: array<BinaryNodeWords>;
@group(0) @binding(6) var<storage, read> codes: array<u32>;

fn sah_code(i: u32) -> u32 {
    return codes[i];
}

fn bin_box(base: u32) -> BoxWords {
    let lo = key_bits(vec3<u32>(acc[base + 1u], acc[base + 2u], acc[base + 3u]));
    let hi = key_bits(vec3<u32>(acc[base + 4u], acc[base + 5u], acc[base + 6u]));
    return BoxWords(lo, hi);
}

// A child of `parent` (its node and side) over first..first + count, at `depth`: a leaf's parent
// link, or a small or large task. Returns the large task's place in the next level's list.
fn list_child(first: u32, count: u32, depth: u32, parent: u32, side: u32, level: u32) -> u32 {
    if count == 1u {
        nodes[params.n - 1u + first].parent = parent;
        return SAH_NONE;
    }
    if count <= SAH_SMALL {
        let s = atomicAdd(&state[STATE_SMALL], 1u);
        small[s] = vec4<u32>(first, count, depth, parent | (side << 31u));
        return SAH_NONE;
    }
    let k = atomicAdd(&state[STATE_COUNTS + level + 1u], 1u);
    let base = ((level + 1u) % 2u) * params.task_capacity;
    tasks[base + k] = SahTask(first, count, depth, parent, side, 0u, MODE_SAH, 0u, 0u, 0u, SAH_NONE, SAH_NONE, 0u, 0u, 0u, 0u);
    return k;
}

// Planes per axis, and a plane index above every plane's (none found).
const PLANES: u32 = 15u;
const NO_PLANE: u32 = 0xffffffffu;

var<workgroup> wg_count: u32;
var<workgroup> wg_key: atomic<u32>;
var<workgroup> wg_plane: atomic<u32>;

// The plane `p` (axis p / 15, after bin p % 15) of the task's bins from word `a`: its cost key,
// or NO_PLANE when it has primitives on one side only.
fn plane_key(a: u32, p: u32) -> u32 {
    let axis = p / PLANES;
    let k = p % PLANES;
    let base = a + ACC_BOUNDS + axis * SAH_BINS * BIN_WORDS;
    var lb = EMPTY_BOX;
    var lc = 0u;
    var rb = EMPTY_BOX;
    var rc = 0u;
    for (var b = 0u; b < SAH_BINS; b++) {
        let w = base + b * BIN_WORDS;
        let c = acc[w];
        if c == 0u {
            continue;
        }
        if b <= k {
            lb = union_words(lb, bin_box(w));
            lc += c;
        } else {
            rb = union_words(rb, bin_box(w));
            rc += c;
        }
    }
    if lc == 0u || rc == 0u {
        return NO_PLANE;
    }
    return cost_key(sah_cost(box_area(lb), lc, box_area(rb), rc));
}

@compute @workgroup_size(SAH_TASK_WG_SIZE)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let t = wid.x + wid.y * nwg.x;
    if lid == 0u {
        wg_count = atomicLoad(&state[STATE_COUNTS + atomicLoad(&state[STATE_LEVEL])]);
        atomicStore(&wg_key, NO_PLANE);
        atomicStore(&wg_plane, NO_PLANE);
    }
    if t >= workgroupUniformLoad(&wg_count) {
        return;
    }
    let level = atomicLoad(&state[STATE_LEVEL]);
    let slot = (level % 2u) * params.task_capacity + t;
    var task = tasks[slot];
    let first = task.first;
    let count = task.count;
    let depth = task.depth;
    let a = t * ACC_WORDS;
    let lo = bitcast<vec3<f32>>(key_bits(vec3<u32>(acc[a], acc[a + 1u], acc[a + 2u])));
    let hi = bitcast<vec3<f32>>(key_bits(vec3<u32>(acc[a + 3u], acc[a + 4u], acc[a + 5u])));
    let extent = flush3(hi - lo);

    var morton = false;
    var morton_left = 0u;
    if params.hybrid != 0u && depth < HYBRID_MORTON_DEPTH {
        let ca = codes[first];
        let cb = codes[first + count - 1u];
        if ca != cb {
            morton = true;
            if lid == 0u {
                morton_left = morton_split_in(first, count, ca, cb);
            }
        }
    }
    let binned = !morton && depth < SAH_MAX_DEPTH
        && !(count > SAH_SMALL && depth >= SAH_LARGE_MAX_DEPTH);
    // Each plane's key, then the least key, then the first plane with it.
    var key = NO_PLANE;
    if binned && lid < 3u * PLANES && axis_open(extent[lid / PLANES]) {
        key = plane_key(a, lid);
    }
    if key != NO_PLANE {
        atomicMin(&wg_key, key);
    }
    workgroupBarrier();
    let best_key = atomicLoad(&wg_key);
    if key != NO_PLANE && key == best_key {
        atomicMin(&wg_plane, lid);
    }
    workgroupBarrier();
    let plane = atomicLoad(&wg_plane);

    if lid == 0u {
        // The node's bounds: the union of its bins on x (every primitive is in one).
        var bounds = EMPTY_BOX;
        for (var b = 0u; b < SAH_BINS; b++) {
            let w = a + ACC_BOUNDS + b * BIN_WORDS;
            if acc[w] != 0u {
                bounds = union_words(bounds, bin_box(w));
            }
        }
        var left = count / 2u;
        var mode = MODE_POSITION;
        if morton {
            left = morton_left;
        } else if plane != NO_PLANE {
            let axis = plane / PLANES;
            let k = plane % PLANES;
            let base = a + ACC_BOUNDS + axis * SAH_BINS * BIN_WORDS;
            left = 0u;
            for (var b = 0u; b <= k; b++) {
                left += acc[base + b * BIN_WORDS];
            }
            mode = MODE_SAH;
            task.axis = axis;
            task.bin = k;
            task.lo = bitcast<u32>(lo[axis]);
            task.extent = bitcast<u32>(extent[axis]);
        }

        let gap = first + left - 1u;
        let is_root = task.parent == SAH_NONE;
        if is_root {
            atomicStore(&state[STATE_ROOT_GAP], gap);
        }
        let index = inner_index(gap, atomicLoad(&state[STATE_ROOT_GAP]), is_root);
        let n = params.n;
        let left_leaf = select(BVH_NO_NODE, n - 1u + first, left == 1u);
        let right_leaf = select(BVH_NO_NODE, n - 1u + first + left, count - left == 1u);
        nodes[index] = BinaryNodeWords(bounds.lo, left_leaf, bounds.hi, right_leaf, first, count, task.parent, 0u);
        if !is_root {
            if task.side == 0u {
                nodes[task.parent].left = index;
            } else {
                nodes[task.parent].right = index;
            }
        }
        task.index = index;
        task.mode = mode;
        task.left = left;
        task.left_task = list_child(first, left, depth + 1u, index, 0u, level);
        task.right_task = list_child(first + left, count - left, depth + 1u, index, 1u, level);
        tasks[slot] = task;
    }
    // Back to the identities for the next level's task in this slot, once every plane and
    // the record are read.
    storageBarrier();
    workgroupBarrier();
    for (var w = lid; w < ACC_WORDS; w += SAH_TASK_WG_SIZE) {
        acc[a + w] = acc_identity(w);
    }
}
