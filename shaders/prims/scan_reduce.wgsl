// Scan, first level: the sum of each block of BLOCK_SIZE inputs (read as the mode says), one
// value per workgroup, for the exclusive scan of block sums that offsets the blocks.
//!include "prims/common.wgsl"

@group(0) @binding(0) var<uniform> params: PrimParams;
@group(0) @binding(1) var<storage, read> input: array<u32>;
@group(0) @binding(2) var<storage, read_write> block_sums: array<u32>;

@compute @workgroup_size(WG_SIZE)
fn main(inputs: BlockInputs) {
    let lane = make_lane(inputs);
    let local_index = inputs.local_index;
    let block = block_index(inputs.wid, inputs.nwg);
    if block >= params.num_blocks {
        return;
    }
    let first = block * BLOCK_SIZE + lane.rank * ITEMS_PER_THREAD;
    var sum = 0u;
    for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
        let i = first + j;
        if i < params.n {
            sum += scan_input_value(input[i], i, params.mode);
        }
    }
    let scanned = workgroup_exclusive_scan(lane, sum);
    if lane.rank == 0u {
        block_sums[block] = scanned.y;
    }
}
