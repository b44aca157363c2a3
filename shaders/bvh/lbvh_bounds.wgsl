// LBVH, last step: bounds from the leaves up, one invocation per leaf (n >= 2). Each walks up
// through the parents; at each internal node an atomic counter (zeroed by lbvh_hierarchy.wgsl)
// tells the first arrival to stop and the second to join its own box with its sibling's, store
// the node's bounds, and go on. WGSL has no device-wide release/acquire, so the sibling's bounds,
// stored by another invocation of this dispatch, are not known to be visible when the counter
// is: every bound word is stored and loaded atomically, the second arrival waits until each
// word of an internal sibling has left LBVH_PENDING (the first arrival stored them all before
// its increment, so they arrive), and after MAX_POLLS it joins the sibling's leaves itself
// (leaves were written by the previous dispatch). The union is exact and order-independent, so
// the bits never depend on timing. Twin: the bounds loop of caustica::accel::lbvh::build_lbvh.
//!include "bvh/lbvh_common.wgsl"

@group(0) @binding(0) var<uniform> params: LbvhParams;
// The records as words (BinaryNodeRecord layout, NODE_WORDS a node).
@group(0) @binding(1) var<storage, read_write> nodes: array<atomic<u32>>;
@group(0) @binding(2) var<storage, read_write> counters: array<atomic<u32>>;

// Loads of a pending word before the sibling's bounds are worked out from its leaves.
const MAX_POLLS: u32 = 4096u;

fn node_word(node: u32, field: u32) -> u32 {
    return atomicLoad(&nodes[node * NODE_WORDS + field]);
}

fn load_box(node: u32) -> BoxWords {
    let lo = vec3<u32>(node_word(node, WORD_LO), node_word(node, WORD_LO + 1u), node_word(node, WORD_LO + 2u));
    let hi = vec3<u32>(node_word(node, WORD_HI), node_word(node, WORD_HI + 1u), node_word(node, WORD_HI + 2u));
    return BoxWords(lo, hi);
}

fn store_box(node: u32, b: BoxWords) {
    let base = node * NODE_WORDS;
    atomicStore(&nodes[base + WORD_LO], b.lo.x);
    atomicStore(&nodes[base + WORD_LO + 1u], b.lo.y);
    atomicStore(&nodes[base + WORD_LO + 2u], b.lo.z);
    atomicStore(&nodes[base + WORD_HI], b.hi.x);
    atomicStore(&nodes[base + WORD_HI + 1u], b.hi.y);
    atomicStore(&nodes[base + WORD_HI + 2u], b.hi.z);
}

// A bound word of an internal node, once it is no longer pending (still LBVH_PENDING after
// MAX_POLLS loads).
fn poll_word(node: u32, field: u32) -> u32 {
    var v = node_word(node, field);
    for (var polls = 0u; v == LBVH_PENDING && polls < MAX_POLLS; polls++) {
        v = node_word(node, field);
    }
    return v;
}

// The union of the leaves of internal node `node` (its range first..first + count).
fn leaves_union(node: u32) -> BoxWords {
    let base = params.n - 1u + node_word(node, WORD_FIRST);
    let count = node_word(node, WORD_COUNT);
    var b = load_box(base);
    for (var m = 1u; m < count; m++) {
        b = union_words(b, load_box(base + m));
    }
    return b;
}

// The bounds of internal node `node`, which another invocation of this dispatch stored.
fn wait_for_box(node: u32) -> BoxWords {
    let b = BoxWords(
        vec3<u32>(poll_word(node, WORD_LO), poll_word(node, WORD_LO + 1u), poll_word(node, WORD_LO + 2u)),
        vec3<u32>(poll_word(node, WORD_HI), poll_word(node, WORD_HI + 1u), poll_word(node, WORD_HI + 2u)),
    );
    let pending = vec3<u32>(LBVH_PENDING);
    if any(b.lo == pending) || any(b.hi == pending) {
        return leaves_union(node);
    }
    return b;
}

@compute @workgroup_size(LBVH_WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = lbvh_index(gid, nwg);
    let n = params.n;
    if k >= n || n < 2u {
        return;
    }
    var node = n - 1u + k;
    var b = load_box(node);
    loop {
        let parent = node_word(node, WORD_PARENT);
        if parent == BVH_NO_NODE {
            break;
        }
        // The first arrival leaves the parent to the second, which has both children's boxes.
        if atomicAdd(&counters[parent], 1u) == 0u {
            break;
        }
        let left = node_word(parent, WORD_LEFT);
        let sibling = select(left, node_word(parent, WORD_RIGHT), left == node);
        var other: BoxWords;
        if sibling >= n - 1u {
            other = load_box(sibling);
        } else {
            other = wait_for_box(sibling);
        }
        b = union_words(b, other);
        store_box(parent, b);
        node = parent;
    }
}
