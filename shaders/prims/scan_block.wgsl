// Scan, last level: each workgroup scans its block of BLOCK_SIZE inputs (exclusive or inclusive,
// read as the mode says) and adds the block's offset from the scanned block sums.
//!include "prims/common.wgsl"

@group(0) @binding(0) var<uniform> params: PrimParams;
@group(0) @binding(1) var<storage, read> input: array<u32>;
@group(0) @binding(2) var<storage, read> block_offsets: array<u32>;
@group(0) @binding(3) var<storage, read_write> output: array<u32>;

@compute @workgroup_size(WG_SIZE)
fn main(inputs: BlockInputs) {
    let lane = make_lane(inputs);
    let local_index = inputs.local_index;
    let block = block_index(inputs.wid, inputs.nwg);
    if block >= params.num_blocks {
        return;
    }
    let first = block * BLOCK_SIZE + lane.rank * ITEMS_PER_THREAD;
    var items: array<u32, ITEMS_PER_THREAD>;
    var sum = 0u;
    for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
        let i = first + j;
        var v = 0u;
        if i < params.n {
            v = scan_input_value(input[i], i, params.mode);
        }
        items[j] = v;
        sum += v;
    }
    let scanned = workgroup_exclusive_scan(lane, sum);
    var running = scanned.x;
    if (params.mode & MODE_ADD_BLOCK_OFFSETS) != 0u {
        running += block_offsets[block];
    }
    let inclusive = (params.mode & MODE_INCLUSIVE) != 0u;
    for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
        let i = first + j;
        let before = running;
        running += items[j];
        if i < params.n {
            output[i] = select(before, running, inclusive);
        }
    }
}
