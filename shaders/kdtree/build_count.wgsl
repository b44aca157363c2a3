// Point kd-tree build, large-node stage, step 2 of a level: classifies every entry of the three
// lists (BLOCK_SIZE per workgroup), scans the left flags within the workgroup (subgroup scan
// with SUBGROUPS, shared memory otherwise), writes the block's count of left entries, and for
// the first entry of each node in each list the block-local prefix there, so that the scatter
// knows where the node's left flags start in the global scan.
//!include "kdtree/build_partition.wgsl"

@group(0) @binding(5) var<storage, read_write> block_sums: array<u32>;

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
    var running = scanned.x;
    for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
        let e = entries[j];
        if e.splitting != 0u && e.position == e.start {
            heap_nodes[e.heap * NODE_WORDS + NODE_PREFIX + e.axis] = running;
        }
        running += e.left;
    }
    if lane.rank == 0u {
        block_sums[block] = scanned.y;
    }
}
