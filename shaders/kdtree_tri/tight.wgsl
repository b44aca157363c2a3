// Triangle kd-tree, large stage, step 1: each node's tight box, the minimum and the maximum of
// its pairs' clipped boxes in the order of f32::total_cmp (tri_kdtree.rs tight_box), as
// atomics on ordered keys: `tight[6 * node + a]` holds the complement of the least key on axis
// a, `tight[6 * node + 3 + a]` the greatest key (both start at 0). A workgroup whose pairs all
// belong to one node reduces them in workgroup memory first and adds six atomics; with
// SUBGROUPS each subgroup reduces its pairs first where they share a node.
//!include "kdtree_tri/common.wgsl"

@group(0) @binding(0) var<uniform> params: KdBuildParams;
@group(0) @binding(1) var<storage, read> pair_lo: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> pair_hi: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> tight: array<atomic<u32>>;

var<workgroup> wg_box: array<atomic<u32>, 6>;
var<workgroup> wg_nodes: vec2<u32>;

@compute @workgroup_size(KT_WG_SIZE)
fn main(inputs: KtGroupInputs) {
    let lid = inputs.lid;
    let first = (inputs.wid.x + inputs.wid.y * inputs.nwg.x) * KT_WG_SIZE;
    if first >= params.pairs {
        return;
    }
    let i = first + lid;
    let last = min(first + KT_WG_SIZE, params.pairs) - 1u;
    if lid == 0u {
        wg_nodes = vec2<u32>(pair_hi[first].w, pair_hi[last].w);
    }
    if lid < 6u {
        atomicStore(&wg_box[lid], 0u);
    }
    workgroupBarrier();
    let nodes = wg_nodes;
    let one_node = nodes.x == nodes.y;
    // The pair's six keys (0, which no maximum needs, past the last pair) and its node.
    var keys = array<u32, 6>(0u, 0u, 0u, 0u, 0u, 0u);
    var node = 0xffffffffu;
    if i < params.pairs {
        let lo = pair_lo[i];
        let hi = pair_hi[i];
        node = hi.w;
        for (var a = 0u; a < 3u; a++) {
            keys[a] = ~kt_key(lo[a]);
            keys[3u + a] = kt_key(hi[a]);
        }
    }
//!if SUBGROUPS
    // The paper's warp reduction: a subgroup whose pairs share one node adds one atomic per
    // key, in workgroup memory when the whole workgroup shares it, else in the node's words.
    let one_subgroup_node = subgroupAll(node == subgroupBroadcastFirst(node));
    if one_subgroup_node {
        for (var k = 0u; k < 6u; k++) {
            let m = subgroupMax(keys[k]);
            if inputs.sg_lane == 0u && node != 0xffffffffu {
                if one_node {
                    atomicMax(&wg_box[k], m);
                } else {
                    atomicMax(&tight[6u * node + k], m);
                }
            }
        }
    } else if node != 0xffffffffu {
        for (var k = 0u; k < 6u; k++) {
            atomicMax(&tight[6u * node + k], keys[k]);
        }
    }
//!else
    if node != 0xffffffffu {
        for (var k = 0u; k < 6u; k++) {
            if one_node {
                atomicMax(&wg_box[k], keys[k]);
            } else {
                atomicMax(&tight[6u * node + k], keys[k]);
            }
        }
    }
//!endif
    workgroupBarrier();
    if one_node && lid < 6u {
        atomicMax(&tight[6u * nodes.x + lid], atomicLoad(&wg_box[lid]));
    }
}
