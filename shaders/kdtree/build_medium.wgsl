// Point kd-tree build, large-node stage, the last levels: once every node of level
// `params.level` holds at most BLOCK_SIZE points, one workgroup per slot of that level runs the
// rest of the large levels on its node's subtree alone, in workgroup memory. Per level it makes
// the choices build_split, build_flags and build_scatter make over the whole lists (the same
// split, through build_split_node.wgsl, the same left flags, the same stable partition), with
// barriers between the steps instead of dispatches: a subtree's positions, points and heap
// slots are its own.
//
// The node's three lists are loaded once as local point ids (the x list's order numbers them;
// `left_flags` is borrowed, at each point, to translate the y and z lists), and partitioned in
// place level after level. Only the split's reads of points and heap slots, and the writes of
// heap slots and of the small list, go to device memory.
//!include "kdtree/build_common.wgsl"

@group(0) @binding(0) var<uniform> params: KdParams;
@group(0) @binding(1) var<storage, read> points: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> lists_a: array<u32>;
@group(0) @binding(3) var<storage, read> lists_b: array<u32>;
@group(0) @binding(4) var<storage, read_write> heap_nodes: array<u32>;
@group(0) @binding(5) var<storage, read_write> heap_boxes: array<f32>;
// Borrowed here as each point's local id.
@group(0) @binding(6) var<storage, read_write> left_flags: array<u32>;
@group(0) @binding(7) var<storage, read_write> small_list: array<u32>;

// The subtree's lists (x, y, z; BLOCK_SIZE entries each) as local point ids.
var<workgroup> sh_lists: array<u32, 3072>;
// Local id → the point's index.
var<workgroup> sh_point: array<u32, BLOCK_SIZE>;
// The node (its slot in the subtree's level, 0..32) of every position on the level, or INACTIVE.
var<workgroup> sh_owner: array<u32, BLOCK_SIZE>;
// The level's left flags, a bit per local id.
var<workgroup> sh_left: array<atomic<u32>, 32>;
// The block-local exclusive prefix of the left flags at every entry of one list.
var<workgroup> local_prefix: array<u32, BLOCK_SIZE>;
// The level's nodes: kind | axis << 2, first position, points.
var<workgroup> sh_node: array<vec3<u32>, 32>;
var<workgroup> wg_node: vec3<u32>;
// The subtree's first position.
var<private> root_start: u32;

fn split_list(i: u32) -> u32 {
    let n = params.n;
    // i / n without a division (i < 3n).
    let axis = select(0u, 1u, i >= n) + select(0u, 1u, i >= 2u * n);
    return sh_point[sh_lists[axis * BLOCK_SIZE + (i - axis * n - root_start)]];
}

//!include "kdtree/build_split_node.wgsl"

fn list_in(i: u32) -> u32 {
    if params.lists_in_b != 0u {
        return lists_b[i];
    }
    return lists_a[i];
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
    root_start = start;
    let n = params.n;
    // Load: the x list numbers the points; the other lists are translated through left_flags.
    for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
        let i = lane.rank * ITEMS_PER_THREAD + j;
        if i < count {
            let point = list_in(start + i);
            sh_point[i] = point;
            sh_lists[i] = i;
            left_flags[point] = i;
            sh_owner[i] = 0u;
        }
    }
    storageBarrier();
    workgroupBarrier();
    for (var axis = 1u; axis < 3u; axis++) {
        for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
            let i = lane.rank * ITEMS_PER_THREAD + j;
            if i < count {
                sh_lists[axis * BLOCK_SIZE + i] = left_flags[list_in(axis * n + start + i)];
            }
        }
    }
    workgroupBarrier();
    for (var level = first_level; level < params.levels; level++) {
        let level_base = (1u << level) - 1u;
        let depth = level - first_level;
        // 1. Split the subtree's nodes on this level (at most BLOCK_SIZE / KD_SMALL_NODE).
        if lane.rank < 32u {
            atomicStore(&sh_left[lane.rank], 0u);
        }
        if lane.rank < (1u << depth) {
            let h = level_base + (root_slot << depth) + lane.rank;
            split_node(h);
            let node = h * NODE_WORDS;
            let info = heap_nodes[node + NODE_INFO];
            sh_node[lane.rank] = vec3<u32>(info & 15u, heap_nodes[node + NODE_START],
                heap_nodes[node + NODE_COUNT]);
        }
        workgroupBarrier();
        // 2. Left flags, at the points of the split axis's list.
        for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
            let i = lane.rank * ITEMS_PER_THREAD + j;
            if i < count && sh_owner[i] != INACTIVE {
                let node = sh_node[sh_owner[i]];
                if (node.x & 3u) == KIND_LARGE && start + i - node.y < node.z / 2u {
                    let id = sh_lists[((node.x >> 2u) & 3u) * BLOCK_SIZE + i];
                    atomicOr(&sh_left[id >> 5u], 1u << (id & 31u));
                }
            }
        }
        workgroupBarrier();
        // 3. The stable partition of each list, in place; x last, since it moves the owners.
        for (var step = 0u; step < 3u; step++) {
            let axis = (step + 1u) % 3u;
            var ids: array<u32, ITEMS_PER_THREAD>;
            var slots: array<u32, ITEMS_PER_THREAD>;
            var lefts: array<u32, ITEMS_PER_THREAD>;
            var sum = 0u;
            for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
                let i = lane.rank * ITEMS_PER_THREAD + j;
                ids[j] = 0u;
                slots[j] = INACTIVE;
                lefts[j] = 0u;
                if i < count {
                    ids[j] = sh_lists[axis * BLOCK_SIZE + i];
                    slots[j] = sh_owner[i];
                    if slots[j] != INACTIVE && (sh_node[slots[j]].x & 3u) == KIND_LARGE {
                        lefts[j] = (atomicLoad(&sh_left[ids[j] >> 5u]) >> (ids[j] & 31u)) & 1u;
                    }
                }
                sum += lefts[j];
            }
            let scanned = workgroup_exclusive_scan(lane, sum);
            var running = scanned.x;
            for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
                local_prefix[lane.rank * ITEMS_PER_THREAD + j] = running;
                running += lefts[j];
            }
            workgroupBarrier();
            running = scanned.x;
            for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
                let i = lane.rank * ITEMS_PER_THREAD + j;
                let before = running;
                running += lefts[j];
                if i >= count || slots[j] == INACTIVE {
                    continue;
                }
                let node = sh_node[slots[j]];
                let position = start + i;
                let point = sh_point[ids[j]];
                if (node.x & 3u) != KIND_LARGE {
                    // An all-equal node: its points become one leaf where they are.
                    if axis == 0u {
                        small_list[position] = point;
                        sh_owner[i] = INACTIVE;
                    }
                    continue;
                }
                let local_start = node.y - start;
                let left_before = before - local_prefix[local_start];
                let moved = partition_move(local_start, node.z, i, left_before, lefts[j]);
                let destination = moved.x;
                sh_lists[axis * BLOCK_SIZE + destination] = ids[j];
                if axis == 0u {
                    if moved.y > KD_SMALL_NODE {
                        sh_owner[destination] = 2u * slots[j] + moved.z;
                    } else {
                        sh_owner[destination] = INACTIVE;
                        small_list[start + destination] = point;
                    }
                }
            }
            workgroupBarrier();
        }
    }
}
