// Point kd-tree build, large-node stage, step 4 of a level (after the scan of the block sums):
// classifies the entries again, scans their left flags within the workgroup, and moves every
// entry of a split node to its child's part of the node's range, left entries first, keeping
// each list's order (a stable partition, so the children's lists stay sorted). The x entries
// also write the next level's owner of their new position, and the small list when their child
// is small; entries of all-equal nodes go to the small list where they are.
//!include "kdtree/build_partition.wgsl"

@group(0) @binding(5) var<storage, read> block_offsets: array<u32>;
@group(0) @binding(6) var<storage, read_write> lists_out: array<u32>;
@group(0) @binding(7) var<storage, read_write> owner_out: array<u32>;
@group(0) @binding(8) var<storage, read_write> small_list: array<u32>;

@compute @workgroup_size(WG_SIZE)
fn main(inputs: BlockInputs) {
    let lane = make_lane(inputs);
    let block = block_index(inputs.wid, inputs.nwg);
    if block >= params.num_blocks {
        return;
    }
    let first = block * BLOCK_SIZE + lane.rank * ITEMS_PER_THREAD;
    var entries: array<Entry, ITEMS_PER_THREAD>;
    var sum = 0u;
    for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
        entries[j] = classify(first + j);
        sum += entries[j].left;
    }
    let scanned = workgroup_exclusive_scan(lane, sum);
    // Left entries before this one, over all three lists.
    var prefix = block_offsets[block] + scanned.x;
    let n = params.n;
    for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
        let e = entries[j];
        let before = prefix;
        prefix += e.left;
        if e.valid == 0u {
            continue;
        }
        if e.splitting == 0u {
            if e.axis == 0u {
                if e.equal != 0u {
                    small_list[e.position] = e.point;
                }
                owner_out[e.position] = INACTIVE;
            }
            continue;
        }
        // Left entries of this node before this one in this list.
        let first_entry = e.axis * n + e.start;
        let node_prefix = block_offsets[first_entry / BLOCK_SIZE]
            + heap_nodes[e.heap * NODE_WORDS + NODE_PREFIX + e.axis];
        let left_before = before - node_prefix;
        let left_count = e.count / 2u;
        var destination: u32;
        var child_count: u32;
        var side: u32;
        if e.left != 0u {
            destination = e.start + left_before;
            child_count = left_count;
            side = 0u;
        } else {
            destination = e.start + left_count + (e.position - e.start - left_before);
            child_count = e.count - left_count;
            side = 1u;
        }
        lists_out[e.axis * n + destination] = e.point;
        if e.axis == 0u {
            if child_count > KD_SMALL_NODE {
                owner_out[destination] = 2u * e.slot + side;
            } else {
                owner_out[destination] = INACTIVE;
                small_list[destination] = e.point;
            }
        }
    }
}
