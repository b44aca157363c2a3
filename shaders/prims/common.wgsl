// Shared by the data-parallel primitive kernels: block sizes, the one parameter struct, the
// grid-spill index helpers and the workgroup-wide exclusive scan (subgroup variant under
// SUBGROUPS, shared-memory Hillis-Steele variant otherwise).

// Invocations per workgroup; a multiple of every subgroup size (4..128), so subgroups are full.
const WG_SIZE: u32 = 256u;
// Consecutive elements each invocation owns in the block kernels (scan, radix sort).
const ITEMS_PER_THREAD: u32 = 4u;
// Elements per workgroup in the block kernels.
const BLOCK_SIZE: u32 = 1024u;

// `PrimParams.mode` bits for the scan kernels.
const MODE_INCLUSIVE: u32 = 1u;
// Every nonzero input counts as 1 (flags to 0/1).
const MODE_NONZERO_AS_ONE: u32 = 2u;
// Element 0 counts as 1 whatever it holds (segment heads: element 0 always starts one).
const MODE_FIRST_AS_ONE: u32 = 4u;

// The chained scans (prims/scan_chained.wgsl, kdtree/build_scatter.wgsl): polls of a block's
// unpublished word before the waiting workgroup works it out itself.
const LOOKBACK_POLLS: u32 = 16u;

// Twin of `caustica::gpu::prims::PrimParams` (sizes and offsets checked by a test).
struct PrimParams {
    n: u32,
    mode: u32,
    shift: u32,
    num_blocks: u32,
}

// Where this invocation sits: its rank 0..WG_SIZE in the workgroup's scan order and, with
// subgroups, its subgroup coordinates.
struct Lane {
    rank: u32,
    sg_id: u32,
    sg_lane: u32,
    sg_size: u32,
    num_sg: u32,
}

// The workgroup index of a grid that may spill into y (`Kernel::grid_for` / `groups_grid`).
fn block_index(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}

// The linear invocation index of a grid that may spill into y.
fn element_index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * WG_SIZE;
}

// The scan input as the mode reads it: flags become 0/1, element 0 may count as 1.
fn scan_input_value(raw: u32, i: u32, mode: u32) -> u32 {
    var v = raw;
    if (mode & MODE_NONZERO_AS_ONE) != 0u {
        v = select(0u, 1u, v != 0u);
    }
    if (mode & MODE_FIRST_AS_ONE) != 0u && i == 0u {
        v = 1u;
    }
    return v;
}

// The walk back of the chained scans (prims/scan_chained.wgsl, kdtree/build_scatter.wgsl): the
// lowest rank whose `stops` is true, WG_SIZE when none, for every invocation (all must call it:
// it holds barriers).
var<workgroup> wg_first_rank: atomic<u32>;
var<workgroup> wg_first_rank_read: u32;
fn workgroup_first_rank(lane: Lane, stops: bool) -> u32 {
    if lane.rank == 0u {
        atomicStore(&wg_first_rank, WG_SIZE);
    }
    workgroupBarrier();
    if stops {
        atomicMin(&wg_first_rank, lane.rank);
    }
    workgroupBarrier();
    if lane.rank == 0u {
        wg_first_rank_read = atomicLoad(&wg_first_rank);
    }
    return workgroupUniformLoad(&wg_first_rank_read);
}

var<workgroup> scan_scratch: array<u32, WG_SIZE>;
var<workgroup> scan_total: u32;

//!if SUBGROUPS
// The builtins a block kernel's entry point takes (WGSL entry points accept a struct of them).
struct BlockInputs {
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) local_index: u32,
    @builtin(subgroup_id) sg_id: u32,
    @builtin(subgroup_invocation_id) sg_lane: u32,
    @builtin(subgroup_size) sg_size: u32,
    @builtin(num_subgroups) num_sg: u32,
}

// Ranks follow subgroups: rank = subgroup id * subgroup size + lane, which is a bijection onto
// 0..WG_SIZE because every subgroup is full (WG_SIZE is a multiple of the subgroup size).
fn make_lane(inputs: BlockInputs) -> Lane {
    return Lane(inputs.sg_id * inputs.sg_size + inputs.sg_lane, inputs.sg_id, inputs.sg_lane, inputs.sg_size, inputs.num_sg);
}

// Exclusive prefix sum of `value` over the workgroup in rank order: (prefix, workgroup total).
// Must be called by every invocation of the workgroup (it holds barriers).
fn workgroup_exclusive_scan(lane: Lane, value: u32) -> vec2<u32> {
    let inclusive = subgroupInclusiveAdd(value);
    if lane.sg_lane == lane.sg_size - 1u {
        scan_scratch[lane.sg_id] = inclusive;
    }
    workgroupBarrier();
    if lane.sg_id == 0u {
        // The first subgroup scans the subgroup totals, sg_size at a time (there may be more
        // subgroups than lanes, e.g. 32 subgroups of 8).
        var carry = 0u;
        for (var base = 0u; base < lane.num_sg; base += lane.sg_size) {
            let i = base + lane.sg_lane;
            var v = 0u;
            if i < lane.num_sg {
                v = scan_scratch[i];
            }
            let incl = subgroupInclusiveAdd(v);
            if i < lane.num_sg {
                scan_scratch[i] = carry + incl - v;
            }
            carry += subgroupAdd(v);
        }
        if lane.sg_lane == 0u {
            scan_total = carry;
        }
    }
    workgroupBarrier();
    let result = vec2<u32>(scan_scratch[lane.sg_id] + inclusive - value, scan_total);
    workgroupBarrier();
    return result;
}
//!else
// The builtins a block kernel's entry point takes.
struct BlockInputs {
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) local_index: u32,
}

// Without subgroups the rank is the local invocation index.
fn make_lane(inputs: BlockInputs) -> Lane {
    return Lane(inputs.local_index, 0u, 0u, 1u, WG_SIZE);
}

// Exclusive prefix sum of `value` over the workgroup in rank order: (prefix, workgroup total).
// Hillis-Steele in shared memory. Must be called by every invocation of the workgroup.
fn workgroup_exclusive_scan(lane: Lane, value: u32) -> vec2<u32> {
    let r = lane.rank;
    scan_scratch[r] = value;
    workgroupBarrier();
    for (var offset = 1u; offset < WG_SIZE; offset <<= 1u) {
        var add = 0u;
        if r >= offset {
            add = scan_scratch[r - offset];
        }
        workgroupBarrier();
        scan_scratch[r] += add;
        workgroupBarrier();
    }
    let result = vec2<u32>(scan_scratch[r] - value, scan_scratch[WG_SIZE - 1u]);
    workgroupBarrier();
    return result;
}
//!endif
