// PLOC, each round's third step, one workgroup: the block sums of ploc_count.wgsl turned into
// exclusive prefixes (in place), and the next round's start: its clusters (those that stay),
// the next internal node's number (lowered by this round's merges), the round advanced, and
// the arguments of the next round's dispatches at args[3 (round + 1)] (no workgroups once one
// cluster is left). A round with one cluster or none leaves the state as it is.
//!include "bvh/ploc_common.wgsl"
//!include "bvh/ploc_workgroup_scan.wgsl"

@group(0) @binding(0) var<uniform> params: PlocParams;
@group(0) @binding(1) var<storage, read_write> state: array<u32>;
@group(0) @binding(2) var<storage, read_write> block_sums: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read_write> args: array<u32>;

var<workgroup> wg_start: vec2<u32>;

@compute @workgroup_size(PLOC_WG_SIZE)
fn main(@builtin(local_invocation_index) t: u32) {
    if t == 0u {
        let round = state[STATE_ROUND];
        wg_start = vec2<u32>(round, state[STATE_ROUNDS + 2u * round]);
    }
    let start = workgroupUniformLoad(&wg_start);
    let round = start.x;
    let count = start.y;
    let blocks = select(0u, blocks_of(count), count > 1u);
    var carry = vec2<u32>(0u);
    for (var base = 0u; base < blocks; base += PLOC_WG_SIZE) {
        let b = base + t;
        var v = vec2<u32>(0u);
        if b < blocks {
            v = block_sums[b];
        }
        let sum = workgroup_inclusive_scan(t, v);
        if b < blocks {
            block_sums[b] = carry + sum - v;
        }
        carry += wg_scan[PLOC_WG_SIZE - 1u];
        workgroupBarrier();
    }
    if t == 0u {
        let at = STATE_ROUNDS + 2u * round;
        var next = vec2<u32>(count, state[at + 1u]);
        if count > 1u {
            next = vec2<u32>(carry.x, next.y - carry.y);
        }
        state[at + 2u] = next.x;
        state[at + 3u] = next.y;
        state[STATE_ROUND] = round + 1u;
        var groups = 0u;
        if next.x > 1u {
            groups = min(blocks_of(next.x), params.max_groups);
        }
        let a = 3u * (round + 1u);
        if a + 2u < arrayLength(&args) {
            args[a] = groups;
            args[a + 1u] = 1u;
            args[a + 2u] = 1u;
        }
    }
}
