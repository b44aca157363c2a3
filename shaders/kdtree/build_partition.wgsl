// Read by build_scatter: the bindings it reads and the classification of one entry of the three
// association lists against its node's median split. An entry of the
// split axis's list goes left when it is among the node's first count/2 there; an entry of the
// other lists when its point does (the flag build_flags wrote), so every list's left part is
// the same point set.
//!include "kdtree/build_common.wgsl"

@group(0) @binding(0) var<uniform> params: KdParams;
// Per point: 1 when it goes left at this level (build_flags).
@group(0) @binding(1) var<storage, read> left_flags: array<u32>;
@group(0) @binding(2) var<storage, read> lists_in: array<u32>;
@group(0) @binding(3) var<storage, read> owner_in: array<u32>;
@group(0) @binding(4) var<storage, read> heap_nodes: array<u32>;

// One entry of the lists as the partition sees it.
struct Entry {
    // 1 for an entry of a node being split (its points move), else 0
    splitting: u32,
    // 1 when it goes to the left child
    left: u32,
    // 1 for an entry of an all-equal node (its points become one leaf)
    equal: u32,
    // 1 for an entry that exists (g < 3n)
    valid: u32,
    axis: u32,
    position: u32,
    point: u32,
    // the node's slot on its level, its heap index, first position and point count
    slot: u32,
    heap: u32,
    start: u32,
    count: u32,
}

fn classify(g: u32) -> Entry {
    var e: Entry;
    let n = params.n;
    if g >= 3u * n {
        return e;
    }
    e.valid = 1u;
    // g / n without a division (g < 3n).
    e.axis = select(0u, 1u, g >= n) + select(0u, 1u, g >= 2u * n);
    e.position = g - e.axis * n;
    e.slot = owner_in[e.position];
    if e.slot == INACTIVE {
        return e;
    }
    e.point = lists_in[g];
    e.heap = params.level_base + e.slot;
    let node = e.heap * NODE_WORDS;
    let info = heap_nodes[node + NODE_INFO];
    e.start = heap_nodes[node + NODE_START];
    e.count = heap_nodes[node + NODE_COUNT];
    if (info & 3u) == KIND_EQUAL {
        e.equal = 1u;
        return e;
    }
    e.splitting = 1u;
    let split_axis = (info >> 2u) & 3u;
    if e.axis == split_axis {
        e.left = select(0u, 1u, e.position - e.start < e.count / 2u);
    } else {
        e.left = left_flags[e.point];
    }
    return e;
}
