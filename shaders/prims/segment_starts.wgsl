// Segments, first step: from the inclusive scan of the head flags (element 0 always a head),
// every head writes its index as its segment's start; the last invocation writes the segment
// count with its indirect-dispatch arguments.
//!include "prims/common.wgsl"

@group(0) @binding(0) var<uniform> params: PrimParams;
@group(0) @binding(1) var<storage, read> head_flags: array<u32>;
@group(0) @binding(2) var<storage, read> segment_numbers: array<u32>;
@group(0) @binding(3) var<storage, read_write> segment_starts: array<u32>;
@group(0) @binding(4) var<storage, read_write> count: array<u32, 4>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = element_index(gid, nwg);
    if i >= params.n {
        return;
    }
    // segment_numbers holds segment index + 1 (an inclusive scan of the heads).
    if i == 0u || head_flags[i] != 0u {
        segment_starts[segment_numbers[i] - 1u] = i;
    }
    if i == params.n - 1u {
        let total = segment_numbers[i];
        count[0] = total;
        count[1] = (total + WG_SIZE - 1u) / WG_SIZE;
        count[2] = 1u;
        count[3] = 1u;
    }
}
