// PLOC, each round's last step: the clusters that stay written in order to the next round's
// arrays, at their block's prefix (ploc_scan.wgsl) plus their place in the block. A merge of
// cluster i with its mutual neighbour j > i makes internal node next - 1 - (merges before it),
// whose children are i's node and j's (their parents set), whose box is the exact union and
// whose count is the sum; it takes i's place. Twin: the loop over the neighbours in
// caustica::accel::ploc::build_ploc.
//!include "bvh/ploc_common.wgsl"
//!include "bvh/ploc_workgroup_scan.wgsl"

@group(0) @binding(0) var<uniform> params: PlocParams;
@group(0) @binding(1) var<storage, read_write> state: array<u32>;
@group(0) @binding(2) var<storage, read> nearest: array<u32>;
@group(0) @binding(3) var<storage, read> block_sums: array<vec2<u32>>;
@group(0) @binding(4) var<storage, read> clusters: array<u32>;
@group(0) @binding(5) var<storage, read> cluster_boxes: array<vec4<u32>>;
@group(0) @binding(6) var<storage, read_write> next_clusters: array<u32>;
@group(0) @binding(7) var<storage, read_write> next_boxes: array<vec4<u32>>;
@group(0) @binding(8) var<storage, read_write> nodes: array<BinaryNodeWords>;

var<workgroup> wg_start: vec2<u32>;

@compute @workgroup_size(PLOC_WG_SIZE)
fn main(
    @builtin(local_invocation_index) t: u32,
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    if t == 0u {
        // The scan has advanced the round already.
        let at = STATE_ROUNDS + 2u * (state[STATE_ROUND] - 1u);
        wg_start = vec2<u32>(state[at], state[at + 1u]);
    }
    let start = workgroupUniformLoad(&wg_start);
    let count = start.x;
    let next = start.y;
    let blocks = blocks_of(count);
    for (var b = wid.x; b < blocks; b += nwg.x) {
        let i = b * PLOC_WG_SIZE + t;
        var j = i;
        var fate = vec2<u32>(0u);
        if i < count {
            j = nearest[i];
            fate = ploc_fate(i, j, nearest[j]);
        }
        let before = block_sums[b] + workgroup_inclusive_scan(t, fate) - fate;
        workgroupBarrier();
        if fate.x != 0u {
            let at = before.x;
            let a = cluster_boxes[2u * i];
            let a_hi = cluster_boxes[2u * i + 1u];
            if fate.y != 0u {
                let node = next - 1u - before.y;
                let b_lo = cluster_boxes[2u * j];
                let b_hi = cluster_boxes[2u * j + 1u];
                let u = union_words(BoxWords(a.xyz, a_hi.xyz), BoxWords(b_lo.xyz, b_hi.xyz));
                let left = clusters[i];
                let right = clusters[j];
                let prims = a.w + b_lo.w;
                nodes[node] = BinaryNodeWords(u.lo, left, u.hi, right, 0u, prims, BVH_NO_NODE, 0u);
                nodes[left].parent = node;
                nodes[right].parent = node;
                next_clusters[at] = node;
                next_boxes[2u * at] = vec4<u32>(u.lo, prims);
                next_boxes[2u * at + 1u] = vec4<u32>(u.hi, 0u);
            } else {
                next_clusters[at] = clusters[i];
                next_boxes[2u * at] = a;
                next_boxes[2u * at + 1u] = a_hi;
            }
        }
    }
}
