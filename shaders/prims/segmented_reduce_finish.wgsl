// Segmented reduce, last step: one invocation per segment (dispatched for the upper bound n,
// the count read here) takes the difference of the exclusive scan at its end and its start.
//!include "prims/common.wgsl"

@group(0) @binding(0) var<uniform> params: PrimParams;
@group(0) @binding(1) var<storage, read> values: array<u32>;
@group(0) @binding(2) var<storage, read> prefix: array<u32>;
@group(0) @binding(3) var<storage, read> segment_starts: array<u32>;
@group(0) @binding(4) var<storage, read> count: array<u32, 4>;
@group(0) @binding(5) var<storage, read_write> sums: array<u32>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let s = element_index(gid, nwg);
    let segments = count[0];
    if s >= segments || params.n == 0u {
        return;
    }
    var end_prefix = prefix[params.n - 1u] + values[params.n - 1u];
    if s + 1u < segments {
        end_prefix = prefix[segment_starts[s + 1u]];
    }
    sums[s] = end_prefix - prefix[segment_starts[s]];
}
