// Triangle kd-tree, large stage, step 3: whether each pair goes to its node's left child (its
// box starts before the plane) and to its right child (it ends after it); 0 for the pairs of a
// node that does not split. The exclusive scans of both make each pair's place in its child.
//!include "kdtree_tri/common.wgsl"

@group(0) @binding(0) var<uniform> params: KdBuildParams;
@group(0) @binding(1) var<storage, read> pair_lo: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> pair_hi: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> decisions: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read_write> left_flags: array<u32>;
@group(0) @binding(5) var<storage, read_write> right_flags: array<u32>;

@compute @workgroup_size(KT_WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = kt_index(gid, nwg);
    if i >= params.pairs {
        return;
    }
    let hi = pair_hi[i];
    let d = decisions[hi.w];
    var l = 0u;
    var r = 0u;
    if d.x == KT_SPLIT_CODE {
        let plane = bitcast<f32>(d.z);
        l = select(0u, 1u, bitcast<f32>(pair_lo[i][d.y]) < plane);
        r = select(0u, 1u, bitcast<f32>(hi[d.y]) > plane);
    }
    left_flags[i] = l;
    right_flags[i] = r;
}
