// Sorted bounds, first step: 1 where a run of equal keys starts (element 0, or a key that differs
// from its predecessor), else 0, for the exclusive scan that numbers the runs. Keys are low
// words plus, when `mode` is 1, high words. Elements past `n` that the grid covers get 0 (a
// search over a live count the device holds scans its whole capacity).
//!include "prims/common.wgsl"

@group(0) @binding(0) var<uniform> params: PrimParams;
@group(0) @binding(1) var<storage, read> keys_lo: array<u32>;
@group(0) @binding(2) var<storage, read> keys_hi: array<u32>;
@group(0) @binding(3) var<storage, read_write> heads: array<u32>;

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = element_index(gid, nwg);
    if i >= params.n {
        if i < arrayLength(&heads) {
            heads[i] = 0u;
        }
        return;
    }
    var head = i == 0u;
    if !head {
        head = keys_lo[i] != keys_lo[i - 1u];
        if params.mode != 0u {
            head = head || keys_hi[i] != keys_hi[i - 1u];
        }
    }
    heads[i] = select(0u, 1u, head);
}
