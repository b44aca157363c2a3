// Scan, first level: the sum of each block of BLOCK_SIZE inputs (read as the mode says), one
// value per workgroup, for the exclusive scan of block sums that offsets the blocks.
//!include "prims/common.wgsl"

@group(0) @binding(0) var<uniform> params: PrimParams;
@group(0) @binding(1) var<storage, read> input: array<u32>;
@group(0) @binding(2) var<storage, read_write> block_sums: array<u32>;

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
