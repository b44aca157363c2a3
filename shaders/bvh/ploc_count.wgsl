// PLOC, each round's second step: per block of PLOC_WG_SIZE clusters, how many stay and how
// many of those are merges (ploc_fate), for the scan. Twin: the loop over the neighbours in
// caustica::accel::ploc::build_ploc.
//!include "bvh/ploc_common.wgsl"

@group(0) @binding(0) var<uniform> params: PlocParams;
@group(0) @binding(1) var<storage, read_write> state: array<u32>;
@group(0) @binding(2) var<storage, read> nearest: array<u32>;
@group(0) @binding(3) var<storage, read_write> block_sums: array<vec2<u32>>;

var<workgroup> wg_count: u32;
var<workgroup> wg_kept: atomic<u32>;
var<workgroup> wg_merged: atomic<u32>;

@compute @workgroup_size(PLOC_WG_SIZE)
fn main(
    @builtin(local_invocation_index) t: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    if t == 0u {
        wg_count = state[STATE_ROUNDS + 2u * state[STATE_ROUND]];
    }
    let count = workgroupUniformLoad(&wg_count);
    let blocks = blocks_of(count);
    for (var b = wid.x; b < blocks; b += nwg.x) {
        if t == 0u {
            atomicStore(&wg_kept, 0u);
            atomicStore(&wg_merged, 0u);
        }
        workgroupBarrier();
        let i = b * PLOC_WG_SIZE + t;
        if i < count {
            let j = nearest[i];
            let fate = ploc_fate(i, j, nearest[j]);
            if fate.x != 0u {
                atomicAdd(&wg_kept, 1u);
            }
            if fate.y != 0u {
                atomicAdd(&wg_merged, 1u);
            }
        }
        workgroupBarrier();
        if t == 0u {
            block_sums[b] = vec2<u32>(atomicLoad(&wg_kept), atomicLoad(&wg_merged));
        }
        workgroupBarrier();
    }
}
