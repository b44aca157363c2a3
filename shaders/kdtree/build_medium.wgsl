// Point kd-tree build, large-node stage, the last levels: once every node of level
// `params.level` holds at most BLOCK_SIZE points, one workgroup per slot of that level runs the
// rest of the large levels on its node's subtree alone. Per level it does what build_split,
// build_flags and build_scatter do over the whole lists (the same split, the same left flags,
// the same stable partition), with barriers between the steps instead of dispatches: a
// subtree's positions, points and heap slots are its own. The node's three lists fit one
// workgroup's block each, so the partition's count is a workgroup scan per list. (One scan over
// the three lists at once, 12 entries an invocation, measured slower on the lent H200.)
//
// The lists and owners are read from `*_a` and written to `*_b` on even levels after
// `params.level` when `params.lists_in_b` is 0, and the other way round otherwise (the global
// levels before swap them once a level).
//!include "kdtree/build_common.wgsl"

@group(0) @binding(0) var<uniform> params: KdParams;
@group(0) @binding(1) var<storage, read> points: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> lists_a: array<u32>;
@group(0) @binding(3) var<storage, read_write> lists_b: array<u32>;
@group(0) @binding(4) var<storage, read_write> owner_a: array<u32>;
@group(0) @binding(5) var<storage, read_write> owner_b: array<u32>;
@group(0) @binding(6) var<storage, read_write> heap_nodes: array<u32>;
@group(0) @binding(7) var<storage, read_write> heap_boxes: array<f32>;
@group(0) @binding(8) var<storage, read_write> left_flags: array<u32>;
@group(0) @binding(9) var<storage, read_write> small_list: array<u32>;

// 1 while the level's lists and owners are read from the `_b` buffers.
var<private> in_b: u32;

fn list_in(i: u32) -> u32 {
    if in_b != 0u {
        return lists_b[i];
    }
    return lists_a[i];
}

fn list_out(i: u32, value: u32) {
    if in_b != 0u {
        lists_a[i] = value;
    } else {
        lists_b[i] = value;
    }
}

fn owner_in(p: u32) -> u32 {
    if in_b != 0u {
        return owner_b[p];
    }
    return owner_a[p];
}

fn owner_out(p: u32, value: u32) {
    if in_b != 0u {
        owner_a[p] = value;
    } else {
        owner_b[p] = value;
    }
}

fn split_list(i: u32) -> u32 {
    return list_in(i);
}

//!include "kdtree/build_split_node.wgsl"

var<workgroup> wg_node: vec3<u32>;
// The block-local exclusive prefix of the left flags at every entry of one list's range.
var<workgroup> local_prefix: array<u32, BLOCK_SIZE>;

// One position of the subtree's range as a level's partition sees it (build_partition's Entry).
struct MediumEntry {
    splitting: u32,
    left: u32,
    equal: u32,
    valid: u32,
    point: u32,
    slot: u32,
    start: u32,
    count: u32,
}

fn medium_classify(axis: u32, position: u32, valid: bool, level_base: u32) -> MediumEntry {
    var e: MediumEntry;
    if !valid {
        return e;
    }
    e.valid = 1u;
    e.slot = owner_in(position);
    if e.slot == INACTIVE {
        return e;
    }
    let n = params.n;
    e.point = list_in(axis * n + position);
    let node = (level_base + e.slot) * NODE_WORDS;
    let info = heap_nodes[node + NODE_INFO];
    e.start = heap_nodes[node + NODE_START];
    e.count = heap_nodes[node + NODE_COUNT];
    if (info & 3u) == KIND_EQUAL {
        e.equal = 1u;
        return e;
    }
    e.splitting = 1u;
    let split_axis = (info >> 2u) & 3u;
    if axis == split_axis {
        e.left = select(0u, 1u, position - e.start < e.count / 2u);
    } else {
        e.left = left_flags[e.point];
    }
    return e;
}

@compute @workgroup_size(WG_SIZE)
fn main(inputs: BlockInputs) {
    let lane = make_lane(inputs);
    let root_slot = block_index(inputs.wid, inputs.nwg);
    let first_level = params.level;
    if root_slot >= (1u << first_level) {
        return;
    }
    if lane.rank == 0u {
        let node = ((1u << first_level) - 1u + root_slot) * NODE_WORDS;
        wg_node = vec3<u32>(heap_nodes[node + NODE_INFO] & 3u, heap_nodes[node + NODE_START],
            heap_nodes[node + NODE_COUNT]);
    }
    let root = workgroupUniformLoad(&wg_node);
    if root.x != KIND_LARGE {
        return;
    }
    let start = root.y;
    let count = root.z;
    let n = params.n;
    in_b = params.lists_in_b;
    for (var level = first_level; level < params.levels; level++) {
        let level_base = (1u << level) - 1u;
        let depth = level - first_level;
        // 1. Split the subtree's nodes on this level (at most BLOCK_SIZE / KD_SMALL_NODE).
        if lane.rank < (1u << depth) {
            split_node(level_base + (root_slot << depth) + lane.rank);
        }
        storageBarrier();
        workgroupBarrier();
        // 2. Left flags, at the points of the split axis's list.
        for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
            let i = lane.rank * ITEMS_PER_THREAD + j;
            if i < count {
                let position = start + i;
                let slot = owner_in(position);
                if slot != INACTIVE {
                    let node = (level_base + slot) * NODE_WORDS;
                    let info = heap_nodes[node + NODE_INFO];
                    if (info & 3u) != KIND_EQUAL {
                        let split_axis = (info >> 2u) & 3u;
                        let node_start = heap_nodes[node + NODE_START];
                        let node_count = heap_nodes[node + NODE_COUNT];
                        let point = list_in(split_axis * n + position);
                        left_flags[point] = select(0u, 1u, position - node_start < node_count / 2u);
                    }
                }
            }
        }
        storageBarrier();
        workgroupBarrier();
        // 3. The stable partition of each list's range.
        for (var axis = 0u; axis < 3u; axis++) {
            var entries: array<MediumEntry, ITEMS_PER_THREAD>;
            var sum = 0u;
            for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
                let i = lane.rank * ITEMS_PER_THREAD + j;
                entries[j] = medium_classify(axis, start + i, i < count, level_base);
                sum += entries[j].left;
            }
            let scanned = workgroup_exclusive_scan(lane, sum);
            var running = scanned.x;
            for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
                local_prefix[lane.rank * ITEMS_PER_THREAD + j] = running;
                running += entries[j].left;
            }
            workgroupBarrier();
            running = scanned.x;
            for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
                let e = entries[j];
                let before = running;
                running += e.left;
                let position = start + lane.rank * ITEMS_PER_THREAD + j;
                if e.valid == 0u {
                    continue;
                }
                if e.splitting == 0u {
                    if axis == 0u {
                        if e.equal != 0u {
                            small_list[position] = e.point;
                        }
                        owner_out(position, INACTIVE);
                    }
                    continue;
                }
                let left_before = before - local_prefix[e.start - start];
                let left_count = e.count / 2u;
                var destination: u32;
                var child_count: u32;
                var side: u32;
                if e.left != 0u {
                    destination = e.start + left_before;
                    child_count = left_count;
                    side = 0u;
                } else {
                    destination = e.start + left_count + (position - e.start - left_before);
                    child_count = e.count - left_count;
                    side = 1u;
                }
                list_out(axis * n + destination, e.point);
                if axis == 0u {
                    if child_count > KD_SMALL_NODE {
                        owner_out(destination, 2u * e.slot + side);
                    } else {
                        owner_out(destination, INACTIVE);
                        small_list[destination] = e.point;
                    }
                }
            }
            workgroupBarrier();
        }
        storageBarrier();
        workgroupBarrier();
        in_b ^= 1u;
    }
}
