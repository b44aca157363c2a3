// Segmented scan, last step: the running sum within each segment is the global exclusive scan
// minus its value at the segment's start (exact in wrapping u32 arithmetic).
//!include "prims/common.wgsl"

@group(0) @binding(0) var<uniform> params: PrimParams;
@group(0) @binding(1) var<storage, read> values: array<u32>;
@group(0) @binding(2) var<storage, read> prefix: array<u32>;
@group(0) @binding(3) var<storage, read> segment_numbers: array<u32>;
@group(0) @binding(4) var<storage, read> segment_starts: array<u32>;
@group(0) @binding(5) var<storage, read_write> output: array<u32>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = element_index(gid, nwg);
    if i >= params.n {
        return;
    }
    let start = segment_starts[segment_numbers[i] - 1u];
    var sum = prefix[i] - prefix[start];
    if (params.mode & MODE_INCLUSIVE) != 0u {
        sum += values[i];
    }
    output[i] = sum;
}
