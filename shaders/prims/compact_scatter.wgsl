// Stream compaction, last step: every element whose flag is nonzero moves to its place in the
// exclusive scan of the 0/1 flags, keeping the original order; the last invocation writes the
// kept count with its indirect-dispatch arguments.
//!include "prims/common.wgsl"

@group(0) @binding(0) var<uniform> params: PrimParams;
@group(0) @binding(1) var<storage, read> flags: array<u32>;
@group(0) @binding(2) var<storage, read> values: array<u32>;
@group(0) @binding(3) var<storage, read> positions: array<u32>;
@group(0) @binding(4) var<storage, read_write> kept: array<u32>;
@group(0) @binding(5) var<storage, read_write> count: array<u32, 4>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = element_index(gid, nwg);
    if i >= params.n {
        return;
    }
    let keep = flags[i] != 0u;
    if keep {
        kept[positions[i]] = values[i];
    }
    if i == params.n - 1u {
        let total = positions[i] + select(0u, 1u, keep);
        count[0] = total;
        count[1] = (total + WG_SIZE - 1u) / WG_SIZE;
        count[2] = 1u;
        count[3] = 1u;
    }
}
