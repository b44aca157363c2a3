// Sorted bounds, last step: each run of equal keys becomes one job (key, start, end) at its place
// in the exclusive scan of the run heads, stored as parallel arrays (so that 16M jobs stay within
// one binding each); the last invocation writes the run count with its indirect-dispatch
// arguments. Keys are low words plus, when `mode` is 1, high words.
//!include "prims/common.wgsl"

@group(0) @binding(0) var<uniform> params: PrimParams;
@group(0) @binding(1) var<storage, read> keys_lo: array<u32>;
@group(0) @binding(2) var<storage, read> keys_hi: array<u32>;
@group(0) @binding(3) var<storage, read> run_numbers: array<u32>;
@group(0) @binding(4) var<storage, read_write> run_keys_lo: array<u32>;
@group(0) @binding(5) var<storage, read_write> run_keys_hi: array<u32>;
@group(0) @binding(6) var<storage, read_write> run_starts: array<u32>;
@group(0) @binding(7) var<storage, read_write> run_ends: array<u32>;
@group(0) @binding(8) var<storage, read_write> count: array<u32, 4>;

// Whether a run starts at i (0 < i < n): its key differs from its predecessor's.
fn differs_from_previous(i: u32) -> bool {
    var differs = keys_lo[i] != keys_lo[i - 1u];
    if params.mode != 0u {
        differs = differs || keys_hi[i] != keys_hi[i - 1u];
    }
    return differs;
}

@compute @workgroup_size(WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = element_index(gid, nwg);
    if i >= params.n {
        return;
    }
    let head = i == 0u || differs_from_previous(i);
    // run_numbers: the exclusive scan of the heads.
    let run = run_numbers[i] + select(0u, 1u, head) - 1u;
    if head {
        run_keys_lo[run] = keys_lo[i];
        if params.mode != 0u {
            run_keys_hi[run] = keys_hi[i];
        }
        run_starts[run] = i;
    }
    let last = i == params.n - 1u;
    if last || differs_from_previous(i + 1u) {
        run_ends[run] = i + 1u;
    }
    if last {
        count[0] = run + 1u;
        count[1] = (run + 1u + WG_SIZE - 1u) / WG_SIZE;
        count[2] = 1u;
        count[3] = 1u;
    }
}
