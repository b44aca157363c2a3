// Point kd-tree build, large-node stage, step 3 of a level (after build_split and build_flags),
// in one pass over the three lists: classifies the entries (BLOCK_SIZE per workgroup), counts
// for each one the left entries of its node before it, and moves every entry of a split node
// to its child's part of the node's range, left entries first, keeping each list's order (a
// stable partition, so the children's lists stay sorted). The x entries also write the next
// level's owner of their new position, and the small list when their child is small; entries of
// all-equal nodes go to the small list where they are.
//
// The count is a segmented scan of the left flags whose segments are the nodes, in one pass: a
// chained scan with look-back and fallback. Workgroups take blocks in the order they start (a
// ticket). Only a block's first node can start in an earlier block. Every block publishes, in
// one word of `chain`, either the left entries from its last node start to its end (INCLUSIVE)
// or, when no node starts in it, its total (AGGREGATE); a block that no node being split crosses
// publishes INCLUSIVE 0. A block whose first node started earlier walks back, adding the words
// it finds, until one is INCLUSIVE. When a word is still unpublished after a few polls, the
// workgroup works out that block's word itself from its entries instead of waiting: WGSL gives
// no guarantee that another workgroup makes progress (lavapipe caps a loop at 65535
// iterations, and some GPUs run a workgroup to its end before starting the next), so nothing
// here ever waits for another workgroup.
//
// Loop budget (llvmpipe's 65535 back edges per invocation group, shared/knn.wgsl): a walk back
// reads WG_SIZE blocks' words a round; it takes a round per WG_SIZE blocks it passes and at most
// LOOKBACK_POLLS + 1 rounds per block whose word is not published yet. Taken by ticket, those
// are the few blocks still running beside this one; in the tests' REVERSED_BLOCKS order, at
// most the 88 blocks of 30K points.
//!include "kdtree/build_partition.wgsl"

@group(0) @binding(5) var<storage, read_write> lists_out: array<u32>;
@group(0) @binding(6) var<storage, read_write> owner_out: array<u32>;
@group(0) @binding(7) var<storage, read_write> small_list: array<u32>;
// Per large level: a ticket counter (word `level`), then `num_blocks` block statuses from word
// `32 + level * num_blocks` (status_index); zeroed before the first level.
@group(0) @binding(8) var<storage, read_write> chain: array<atomic<u32>>;

const STATUS_VALUE: u32 = 0x3fffffffu;
const STATUS_AGGREGATE: u32 = 0x40000000u;
const STATUS_INCLUSIVE: u32 = 0x80000000u;

var<workgroup> wg_block: u32;
var<workgroup> wg_status: u32;
// The walk back: the word of the nearest window entry that stops it.
var<workgroup> wg_window: u32;
// 1 + the block-local index of the last node start seen, 0 when none.
var<workgroup> wg_last_head: atomic<u32>;
// The block-local exclusive prefix of the left flags at every entry of the block.
var<workgroup> local_prefix: array<u32, BLOCK_SIZE>;

fn status_index(block: u32) -> u32 {
    // The tickets take the first 32 words (one per possible large level).
    return 32u + params.level * params.num_blocks + block;
}

fn is_head(e: Entry) -> bool {
    return e.splitting != 0u && e.position == e.start;
}

// The word a block publishes before any walk back, from the 1-based block-local index of its last
// node start (0: none), the left entries from there to its end (all of them when none), and
// whether its first entry belongs to a node being split.
fn first_status(last_head: u32, from_last_head: u32, first_splitting: bool) -> u32 {
    if last_head != 0u {
        // A node starts in this block: the count from its last start is known now.
        return STATUS_INCLUSIVE | from_last_head;
    }
    if !first_splitting {
        // No node being split crosses this block.
        return STATUS_INCLUSIVE;
    }
    return STATUS_AGGREGATE | from_last_head;
}

// Block `block`'s status word as that block publishes it before any walk back, worked out from
// its entries by the whole workgroup (every invocation calls it). It reuses wg_last_head and
// wg_status.
fn block_status(lane: Lane, block: u32) -> u32 {
    if lane.rank == 0u {
        atomicStore(&wg_last_head, 0u);
    }
    workgroupBarrier();
    let first = block * BLOCK_SIZE + lane.rank * ITEMS_PER_THREAD;
    var entries: array<Entry, ITEMS_PER_THREAD>;
    for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
        entries[j] = classify(first + j);
        if is_head(entries[j]) {
            atomicMax(&wg_last_head, lane.rank * ITEMS_PER_THREAD + j + 1u);
        }
    }
    if lane.rank == 0u {
        wg_status = entries[0].splitting;
    }
    workgroupBarrier();
    let last_head = atomicLoad(&wg_last_head);
    let first_splitting = wg_status;
    // Left entries at or after the last node start (all of them when none starts here).
    var after = 0u;
    for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
        if lane.rank * ITEMS_PER_THREAD + j + 1u >= last_head {
            after += entries[j].left;
        }
    }
    let sums = workgroup_exclusive_scan(lane, after);
    return first_status(last_head, sums.y, first_splitting != 0u);
}

@compute @workgroup_size(WG_SIZE)
fn main(inputs: BlockInputs) {
    let lane = make_lane(inputs);
    if lane.rank == 0u {
        wg_block = atomicAdd(&chain[params.level], 1u);
//!if REVERSED_BLOCKS
        // Tests: the last ticket takes the first block, so every walk back meets unpublished
        // words and works them out itself.
        wg_block = params.num_blocks - 1u - wg_block;
//!endif
        atomicStore(&wg_last_head, 0u);
    }
    let block = workgroupUniformLoad(&wg_block);
    if block >= params.num_blocks {
        return;
    }
    let block_first = block * BLOCK_SIZE;
    let first = block_first + lane.rank * ITEMS_PER_THREAD;
    var entries: array<Entry, ITEMS_PER_THREAD>;
    var sum = 0u;
    for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
        entries[j] = classify(first + j);
        sum += entries[j].left;
    }
    let scanned = workgroup_exclusive_scan(lane, sum);
    var running = scanned.x;
    for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
        let e = entries[j];
        let local = first - block_first + j;
        local_prefix[local] = running;
        if is_head(e) {
            atomicMax(&wg_last_head, local + 1u);
        }
        running += e.left;
    }
    workgroupBarrier();
    let total = scanned.y;
    let last_head = atomicLoad(&wg_last_head);
    // The first node: the one holding the block's first entry (rank 0's first).
    if lane.rank == 0u {
        let e0 = entries[0];
        var from_last_head = total;
        if last_head != 0u {
            from_last_head = total - local_prefix[last_head - 1u];
        }
        atomicStore(&chain[status_index(block)], first_status(last_head, from_last_head, e0.splitting != 0u));
        // 1 when the first node started in an earlier block: the walk back is needed.
        wg_status = select(0u, 1u, e0.splitting != 0u && e0.position != e0.start);
    }
    var carry = 0u;
    if workgroupUniformLoad(&wg_status) != 0u {
        // The walk back reads a window of WG_SIZE earlier blocks' words at once, one an
        // invocation (blocks j, j - 1, ...), and stops at the nearest word that is INCLUSIVE or
        // not yet published; the AGGREGATE words before it are added together. One round
        // covers what took WG_SIZE dependent reads.
        var j = block - 1u;
        var polls = 0u;
        loop {
            var s = STATUS_AGGREGATE;
            if lane.rank <= j {
                s = atomicLoad(&chain[status_index(j - lane.rank)]);
            }
            let stop = workgroup_first_rank(lane, s == 0u || (s & STATUS_INCLUSIVE) != 0u);
            // The words up to the stop, the stop's own when it is INCLUSIVE.
            var value = 0u;
            if lane.rank < stop || (lane.rank == stop && s != 0u) {
                value = s & STATUS_VALUE;
            }
            if lane.rank == stop {
                wg_window = s;
            }
            carry += workgroup_exclusive_scan(lane, value).y;
            if stop == WG_SIZE {
                j -= WG_SIZE;
                polls = 0u;
                continue;
            }
            let stop_status = workgroupUniformLoad(&wg_window);
            if stop_status != 0u {
                break;
            }
            // Block j - stop has not published its word yet: poll it again, a few times, then
            // work it out here.
            j -= stop;
            polls += 1u;
            if polls < LOOKBACK_POLLS {
                continue;
            }
            let worked = block_status(lane, j);
            polls = 0u;
            carry += worked & STATUS_VALUE;
            if (worked & STATUS_INCLUSIVE) != 0u {
                break;
            }
            j -= 1u;
        }
        if last_head == 0u && lane.rank == 0u {
            atomicStore(&chain[status_index(block)], STATUS_INCLUSIVE | (carry + total));
        }
    }
    let n = params.n;
    running = scanned.x;
    for (var j = 0u; j < ITEMS_PER_THREAD; j++) {
        let e = entries[j];
        let before = running;
        running += e.left;
        if e.valid == 0u {
            continue;
        }
        if e.splitting == 0u {
            if e.axis == 0u {
                if e.equal != 0u {
                    small_list[e.position] = e.point;
                }
                owner_out[e.position] = INACTIVE;
            }
            continue;
        }
        // Left entries of this node before this one in this list.
        let first_entry = e.axis * n + e.start;
        var left_before: u32;
        if first_entry >= block_first {
            left_before = before - local_prefix[first_entry - block_first];
        } else {
            left_before = carry + before;
        }
        let moved = partition_move(e.start, e.count, e.position, left_before, e.left);
        let destination = moved.x;
        lists_out[e.axis * n + destination] = e.point;
        if e.axis == 0u {
            if moved.y > KD_SMALL_NODE {
                owner_out[destination] = 2u * e.slot + moved.z;
            } else {
                owner_out[destination] = INACTIVE;
                small_list[destination] = e.point;
            }
        }
    }
}
