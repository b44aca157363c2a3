// Radix sort, last step of a pass: each block sorts its keys by the pass's 4-bit digit in shared
// memory (four stable 1-bit splits, each a workgroup scan), then writes every key, value and
// optional extra word to the scanned histogram's place for its (digit, block) plus its rank
// among the block's keys of that digit. Stable: equal digits keep their input order.
// `mode` bit 0: move `extra_in` too (the other key word of a 64-bit sort); `mode >> 8`: the
// digit's width in bits (4, or fewer in the last pass of a sort by fewer key bits).
//!include "prims/common.wgsl"

const RADIX: u32 = 16u;

@group(0) @binding(0) var<uniform> params: PrimParams;
@group(0) @binding(1) var<storage, read> keys_in: array<u32>;
@group(0) @binding(2) var<storage, read> values_in: array<u32>;
@group(0) @binding(3) var<storage, read> extra_in: array<u32>;
@group(0) @binding(4) var<storage, read> digit_offsets: array<u32>;
@group(0) @binding(5) var<storage, read_write> keys_out: array<u32>;
@group(0) @binding(6) var<storage, read_write> values_out: array<u32>;
@group(0) @binding(7) var<storage, read_write> extra_out: array<u32>;

var<workgroup> block_keys: array<u32, BLOCK_SIZE>;
// Each key's index in the block before this pass, so values move once, at the end.
var<workgroup> block_index_of: array<u32, BLOCK_SIZE>;
var<workgroup> digit_start: array<u32, RADIX>;

fn digit_bits() -> u32 {
    return params.mode >> 8u;
}

fn digit_of(key: u32) -> u32 {
    return (key >> params.shift) & ((1u << digit_bits()) - 1u);
}

@compute @workgroup_size(WG_SIZE)
fn main(inputs: BlockInputs) {
    let lane = make_lane(inputs);
    let local_index = inputs.local_index;
    let block = block_index(inputs.wid, inputs.nwg);
    if block >= params.num_blocks {
        return;
    }
    let base = block * BLOCK_SIZE;
    let in_block = min(BLOCK_SIZE, params.n - base);
    let first = lane.rank * ITEMS_PER_THREAD;
    for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
        let p = first + j;
        // Past the end: the largest digit, after every real key of that digit (stable).
        var key = 0xffffffffu;
        if p < in_block {
            key = keys_in[base + p];
        }
        block_keys[p] = key;
        block_index_of[p] = p;
    }
    workgroupBarrier();
    for (var bit = 0u; bit < digit_bits(); bit++) {
        var keys: array<u32, ITEMS_PER_THREAD>;
        var origins: array<u32, ITEMS_PER_THREAD>;
        var zeros = 0u;
        for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
            keys[j] = block_keys[first + j];
            origins[j] = block_index_of[first + j];
            zeros += 1u - ((keys[j] >> (params.shift + bit)) & 1u);
        }
        // The scan's barriers also order every read above before the writes below.
        let scanned = workgroup_exclusive_scan(lane, zeros);
        var zeros_before = scanned.x;
        let total_zeros = scanned.y;
        for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
            let p = first + j;
            var dest = 0u;
            if ((keys[j] >> (params.shift + bit)) & 1u) == 0u {
                dest = zeros_before;
                zeros_before += 1u;
            } else {
                dest = total_zeros + p - zeros_before;
            }
            block_keys[dest] = keys[j];
            block_index_of[dest] = origins[j];
        }
        workgroupBarrier();
    }
    for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
        let p = first + j;
        let d = digit_of(block_keys[p]);
        if p == 0u || d != digit_of(block_keys[p - 1u]) {
            digit_start[d] = p;
        }
    }
    workgroupBarrier();
    for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
        let p = first + j;
        let origin = block_index_of[p];
        if origin < in_block {
            let key = block_keys[p];
            let d = digit_of(key);
            let dest = digit_offsets[d * params.num_blocks + block] + p - digit_start[d];
            keys_out[dest] = key;
            values_out[dest] = values_in[base + origin];
            if (params.mode & 1u) != 0u {
                extra_out[dest] = extra_in[base + origin];
            }
        }
    }
}
