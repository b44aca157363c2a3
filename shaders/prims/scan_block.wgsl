// Scan, last level: each workgroup scans its block of BLOCK_SIZE inputs (exclusive or inclusive,
// read as the mode says) and adds the block's offset from the scanned block sums.
//!include "prims/common.wgsl"

@group(0) @binding(0) var<uniform> params: PrimParams;
@group(0) @binding(1) var<storage, read> input: array<u32>;
@group(0) @binding(2) var<storage, read> block_offsets: array<u32>;
@group(0) @binding(3) var<storage, read_write> output: array<u32>;

@compute @workgroup_size(WG_SIZE)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) local_index: u32,
//!if SUBGROUPS
    @builtin(subgroup_id) sg_id: u32,
    @builtin(subgroup_invocation_id) sg_lane: u32,
    @builtin(subgroup_size) sg_size: u32,
    @builtin(num_subgroups) num_sg: u32,
) {
    let lane = make_lane(local_index, sg_id, sg_lane, sg_size, num_sg);
//!else
) {
    let lane = make_lane(local_index, 0u, 0u, 1u, WG_SIZE);
//!endif
    let block = block_index(wid, nwg);
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
