// PLOC, each round's first step: the nearest neighbour of every cluster, among the PLOC_RADIUS
// clusters on either side of it (by ploc_distance, ties by ploc_nearer); in the rounds after
// params.natural_rounds, its partner i ^ 1 outright. A cluster without one is its own. A
// workgroup takes a block of PLOC_WG_SIZE clusters at a time, with the boxes of the block and
// its margins in workgroup memory. Twin of caustica::accel::ploc::ploc_neighbours.
//!include "bvh/ploc_common.wgsl"

@group(0) @binding(0) var<uniform> params: PlocParams;
@group(0) @binding(1) var<storage, read_write> state: array<u32>;
@group(0) @binding(2) var<storage, read> cluster_boxes: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> nearest: array<u32>;

const SPAN: u32 = PLOC_WG_SIZE + 2u * PLOC_RADIUS;

var<workgroup> wg_lo: array<vec3<u32>, SPAN>;
var<workgroup> wg_hi: array<vec3<u32>, SPAN>;
var<workgroup> wg_round: vec2<u32>;

@compute @workgroup_size(PLOC_WG_SIZE)
fn main(
    @builtin(local_invocation_index) t: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    if t == 0u {
        let round = state[STATE_ROUND];
        wg_round = vec2<u32>(round, state[STATE_ROUNDS + 2u * round]);
    }
    let r = workgroupUniformLoad(&wg_round);
    let count = r.y;
    let paired = r.x >= params.natural_rounds;
    let blocks = blocks_of(count);
    for (var b = wid.x; b < blocks; b += nwg.x) {
        let base = b * PLOC_WG_SIZE;
        let i = base + t;
        if paired {
            if i < count {
                nearest[i] = select(i, i ^ 1u, (i ^ 1u) < count);
            }
            continue;
        }
        // Boxes base - RADIUS .. base + WG_SIZE + RADIUS (those that exist).
        for (var s = t; s < SPAN; s += PLOC_WG_SIZE) {
            let c = i32(base) - i32(PLOC_RADIUS) + i32(s);
            if c >= 0 && u32(c) < count {
                wg_lo[s] = cluster_boxes[2u * u32(c)].xyz;
                wg_hi[s] = cluster_boxes[2u * u32(c) + 1u].xyz;
            }
        }
        workgroupBarrier();
        if i < count {
            let me = BoxWords(wg_lo[t + PLOC_RADIUS], wg_hi[t + PLOC_RADIUS]);
            let lo = max(i32(i) - i32(PLOC_RADIUS), 0);
            let hi = min(i + PLOC_RADIUS, count - 1u);
            var best = i;
            var best_d = 0;
            for (var j = u32(lo); j <= hi; j++) {
                if j == i {
                    continue;
                }
                let s = j + PLOC_RADIUS - base;
                let d = ploc_distance(me, BoxWords(wg_lo[s], wg_hi[s]));
                if best == i || ploc_nearer(i, j, d, best, best_d) {
                    best = j;
                    best_d = d;
                }
            }
            nearest[i] = best;
        }
        workgroupBarrier();
    }
}
