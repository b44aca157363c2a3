// Scan in one pass (a chained scan with look-back and fallback): each workgroup scans a block of
// BLOCK_SIZE inputs (read as the mode says, exclusive or inclusive) and adds the sum of the
// blocks before it, found by walking back over the words the earlier blocks publish. Compiled
// with COMPACT, it is stream compaction instead: every value whose flag is nonzero moves to its
// place in the exclusive scan of the 0/1 flags, in order, and the block holding the last element
// writes the kept count with its indirect-dispatch arguments.
//
// Workgroups take blocks in the order they start (a ticket), so a block's predecessors are
// running or done. Each block publishes its own total at once (AGGREGATE), then the sum of every
// input up to its end (INCLUSIVE) once it knows it. A block walks back from its predecessor,
// adding AGGREGATE totals, until it meets an INCLUSIVE sum. A word still unpublished after a few
// polls is worked out by the waiting workgroup itself from that block's inputs: WGSL promises no
// workgroup that another one makes progress (lavapipe caps a loop at 65535 iterations, some GPUs
// run a workgroup to its end before starting the next), so nothing here waits on another
// workgroup (the same scheme as kdtree/build_scatter.wgsl).
//
// The words live in `chain`, which every scan leaves zeroed: word 0 hands out the tickets, word 1
// counts the workgroups that finished, and the last one to finish zeroes the block words and
// both counters. A block's sum is a full u32 (the scan wraps), so it takes two words, each
// carrying the state in bits 16-17 and one half of the sum in bits 0-15; a reader takes the
// pair only when both halves carry the same state.
//
// Loop budget (llvmpipe's 65535 back edges per invocation group, shared/knn.wgsl): a walk back
// reads WG_SIZE blocks' words a round; it takes a round per WG_SIZE blocks it passes and at most
// LOOKBACK_POLLS + 1 rounds per block whose INCLUSIVE sum is not published: with tickets, the
// few blocks running beside it; in the tests' REVERSED_BLOCKS order (small inputs only), every
// block before it.
//!include "prims/common.wgsl"

@group(0) @binding(0) var<uniform> params: PrimParams;
//!if COMPACT
@group(0) @binding(1) var<storage, read> flags: array<u32>;
@group(0) @binding(2) var<storage, read> values: array<u32>;
@group(0) @binding(3) var<storage, read_write> kept: array<u32>;
@group(0) @binding(4) var<storage, read_write> count: array<u32, 4>;
//!else
@group(0) @binding(1) var<storage, read> input: array<u32>;
@group(0) @binding(3) var<storage, read_write> output: array<u32>;
//!endif
// Word 0: tickets; word 1: finished workgroups; then two words per block (block_word).
@group(0) @binding(5) var<storage, read_write> chain: array<atomic<u32>>;

const STATE_SHIFT: u32 = 16u;
const STATE_AGGREGATE: u32 = 1u;
const STATE_INCLUSIVE: u32 = 2u;
const HALF_MASK: u32 = 0xffffu;

var<workgroup> wg_block: u32;
// The state (0 while unpublished or torn) and the sum of the word pair a walk back read, as
// rank 0 read them.
var<workgroup> wg_read: vec2<u32>;
var<workgroup> wg_last: u32;

fn block_word(block: u32) -> u32 {
    return 2u + 2u * block;
}

// Input i as the scan reads it (0 past the end).
fn scan_value(i: u32) -> u32 {
    if i >= params.n {
        return 0u;
    }
//!if COMPACT
    return scan_input_value(flags[i], i, params.mode | MODE_NONZERO_AS_ONE);
//!else
    return scan_input_value(input[i], i, params.mode);
//!endif
}

fn publish(block: u32, state: u32, sum: u32) {
    let tag = state << STATE_SHIFT;
    atomicStore(&chain[block_word(block)], tag | (sum & HALF_MASK));
    atomicStore(&chain[block_word(block) + 1u], tag | (sum >> 16u));
}

// The total of block `block`'s inputs, worked out by the whole workgroup (every invocation
// calls it).
fn block_total(lane: Lane, block: u32) -> u32 {
    let first = block * BLOCK_SIZE + lane.rank * ITEMS_PER_THREAD;
    var sum = 0u;
    for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
        sum += scan_value(first + j);
    }
    return workgroup_exclusive_scan(lane, sum).y;
}

@compute @workgroup_size(WG_SIZE)
fn main(inputs: BlockInputs) {
    let lane = make_lane(inputs);
    let workgroups = inputs.nwg.x * inputs.nwg.y * inputs.nwg.z;
    if lane.rank == 0u {
        wg_block = atomicAdd(&chain[0], 1u);
//!if REVERSED_BLOCKS
        // Tests: the last ticket takes the first block, so every walk back meets unpublished
        // words and works them out itself.
        wg_block = workgroups - 1u - wg_block;
//!endif
    }
    let block = workgroupUniformLoad(&wg_block);
    if block < params.num_blocks {
        let first = block * BLOCK_SIZE + lane.rank * ITEMS_PER_THREAD;
        var items: array<u32, ITEMS_PER_THREAD>;
        var sum = 0u;
        for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
            items[j] = scan_value(first + j);
            sum += items[j];
        }
        let scanned = workgroup_exclusive_scan(lane, sum);
        let total = scanned.y;
        // A single block needs no words: no other workgroup reads them.
        if params.num_blocks > 1u && lane.rank == 0u {
            publish(block, select(STATE_AGGREGATE, STATE_INCLUSIVE, block == 0u), total);
        }
        // The sum of every input before this block.
        var carry = 0u;
        if block > 0u {
            // The walk back reads a window of WG_SIZE earlier blocks' words at once, one an
            // invocation (blocks j, j - 1, ...), and stops at the nearest block whose sum is
            // INCLUSIVE or not yet published; the AGGREGATE totals before it are added together.
            var j = block - 1u;
            var polls = 0u;
            loop {
                var state = STATE_AGGREGATE;
                var s = 0u;
                if lane.rank <= j {
                    let lo = atomicLoad(&chain[block_word(j - lane.rank)]);
                    let hi = atomicLoad(&chain[block_word(j - lane.rank) + 1u]);
                    state = select(0u, lo >> STATE_SHIFT, lo >> STATE_SHIFT == hi >> STATE_SHIFT);
                    s = (lo & HALF_MASK) | ((hi & HALF_MASK) << 16u);
                }
                let stop = workgroup_first_rank(lane, state != STATE_AGGREGATE);
                // The totals up to the stop, and the stop's sum when it is INCLUSIVE.
                var value = 0u;
                if lane.rank < stop || (lane.rank == stop && state == STATE_INCLUSIVE) {
                    value = s;
                }
                if lane.rank == stop {
                    wg_read = vec2<u32>(state, 0u);
                }
                carry += workgroup_exclusive_scan(lane, value).y;
                if stop == WG_SIZE {
                    j -= WG_SIZE;
                    polls = 0u;
                    continue;
                }
                if workgroupUniformLoad(&wg_read).x == STATE_INCLUSIVE {
                    break;
                }
                // Block j - stop has not published (or is torn): poll it again, a few times,
                // then work its total out here (block 0's total is its inclusive sum).
                j -= stop;
                polls += 1u;
                if polls < LOOKBACK_POLLS {
                    continue;
                }
                polls = 0u;
                carry += block_total(lane, j);
                if j == 0u {
                    break;
                }
                j -= 1u;
            }
            if lane.rank == 0u {
                publish(block, STATE_INCLUSIVE, carry + total);
            }
        }
        var running = carry + scanned.x;
//!if COMPACT
        for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
            let i = first + j;
            if items[j] != 0u {
                kept[running] = values[i];
            }
            running += items[j];
            if i + 1u == params.n {
                count[0] = running;
                count[1] = (running + WG_SIZE - 1u) / WG_SIZE;
                count[2] = 1u;
                count[3] = 1u;
            }
        }
//!else
        let inclusive = (params.mode & MODE_INCLUSIVE) != 0u;
        for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
            let i = first + j;
            let before = running;
            running += items[j];
            if i < params.n {
                output[i] = select(before, running, inclusive);
            }
        }
//!endif
    }
    // The last workgroup to finish leaves the words zeroed for the next scan: every other one
    // has read and written its words by then.
    if lane.rank == 0u {
        wg_last = select(0u, 1u, atomicAdd(&chain[1], 1u) + 1u == workgroups);
    }
    if workgroupUniformLoad(&wg_last) != 0u {
        for (var w = lane.rank; w < 2u * params.num_blocks; w += WG_SIZE) {
            atomicStore(&chain[2u + w], 0u);
        }
        if lane.rank == 0u {
            atomicStore(&chain[0], 0u);
            atomicStore(&chain[1], 0u);
        }
    }
}
