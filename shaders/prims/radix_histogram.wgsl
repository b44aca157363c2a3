// Radix sort, first step of a pass: how many keys of each block have each 4-bit digit, written
// digit-major (`hist[digit * num_blocks + block]`) so that one exclusive scan of the whole table
// gives every (digit, block) its first output place. `mode >> 8`: the digit's width in bits.
//!include "prims/common.wgsl"

const RADIX: u32 = 16u;

@group(0) @binding(0) var<uniform> params: PrimParams;
@group(0) @binding(1) var<storage, read> keys: array<u32>;
@group(0) @binding(2) var<storage, read_write> hist: array<u32>;

var<workgroup> digit_counts: array<atomic<u32>, RADIX>;

@compute @workgroup_size(WG_SIZE)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) local_index: u32,
) {
    let block = block_index(wid, nwg);
    if block >= params.num_blocks {
        return;
    }
    if local_index < RADIX {
        atomicStore(&digit_counts[local_index], 0u);
    }
    workgroupBarrier();
    for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
        let i = block * BLOCK_SIZE + j * WG_SIZE + local_index;
        if i < params.n {
            atomicAdd(&digit_counts[(keys[i] >> params.shift) & ((1u << (params.mode >> 8u)) - 1u)], 1u);
        }
    }
    workgroupBarrier();
    if local_index < RADIX {
        hist[local_index * params.num_blocks + block] = atomicLoad(&digit_counts[local_index]);
    }
}
