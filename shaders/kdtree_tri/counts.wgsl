// Triangle kd-tree, large stage, step 4: each node's decision with its children's counts, read
// off the scanned flags at its pairs' ends: (code | axis << 2, plane bits, left, right), which
// the host reads back (tri_kdtree::plan_level).
//!include "kdtree_tri/common.wgsl"

@group(0) @binding(0) var<uniform> params: KdBuildParams;
@group(0) @binding(1) var<storage, read> level: array<LevelNode>;
@group(0) @binding(2) var<storage, read> decisions: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> left_flags: array<u32>;
@group(0) @binding(4) var<storage, read> right_flags: array<u32>;
@group(0) @binding(5) var<storage, read> left_offsets: array<u32>;
@group(0) @binding(6) var<storage, read> right_offsets: array<u32>;
@group(0) @binding(7) var<storage, read_write> found: array<vec4<u32>>;

@compute @workgroup_size(KT_WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let node = kt_index(gid, nwg);
    if node >= params.nodes {
        return;
    }
    let d = decisions[node];
    let first = level[node].span.x;
    let count = level[node].span.y;
    var l = 0u;
    var r = 0u;
    if d.x == KT_SPLIT_CODE && count > 0u {
        let last = first + count - 1u;
        l = left_offsets[last] + left_flags[last] - left_offsets[first];
        r = right_offsets[last] + right_flags[last] - right_offsets[first];
    }
    found[node] = vec4<u32>(d.x | d.y << 2u, d.z, l, r);
}
