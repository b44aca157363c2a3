// An exact 64-bit total of one u32 per invocation (each below 2^24, so a workgroup's 256 sum
// to less than 2^32): summed in the workgroup, then added to totals[0] with the carry into
// totals[1]. The host reads it to check a count against the reference limit before it
// allocates anything that big (caustica::gpu::grid).
//!include "grid/common.wgsl"

@group(0) @binding(15) var<storage, read_write> totals: array<atomic<u32>>;

var<workgroup> partial_sums: array<u32, GRID_WG_SIZE>;

// Adds `value` of invocation `lid` to the total; every invocation of the workgroup calls it.
fn add_to_total(value: u32, lid: u32) {
    partial_sums[lid] = value;
    workgroupBarrier();
    for (var s = GRID_WG_SIZE / 2u; s > 0u; s >>= 1u) {
        if lid < s {
            partial_sums[lid] += partial_sums[lid + s];
        }
        workgroupBarrier();
    }
    if lid == 0u {
        let sum = partial_sums[0];
        let old = atomicAdd(&totals[0], sum);
        if old > 0xffffffffu - sum {
            atomicAdd(&totals[1], 1u);
        }
    }
}
