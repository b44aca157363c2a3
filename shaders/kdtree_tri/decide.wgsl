// Triangle kd-tree, large stage, step 2: each node's decision from its cell, its tight box,
// its pairs and its depth, the twin of tri_kdtree.rs decide_large: (code, axis, plane bits).
//!include "kdtree_tri/common.wgsl"

@group(0) @binding(0) var<uniform> params: KdBuildParams;
@group(0) @binding(1) var<storage, read> level: array<LevelNode>;
@group(0) @binding(2) var<storage, read> tight: array<u32>;
@group(0) @binding(3) var<storage, read_write> decisions: array<vec4<u32>>;

fn decide(node: u32) -> vec4<u32> {
    let info = level[node];
    let count = info.span.y;
    let depth = info.span.z;
    if count == 0u || depth >= KT_MAX_DEPTH {
        return vec4<u32>(KT_LEAF_CODE, 0u, 0u, 0u);
    }
    if count <= KT_SMALL_NODE {
        return vec4<u32>(KT_SMALL_CODE, 0u, 0u, 0u);
    }
    var lo: vec3<f32>;
    var hi: vec3<f32>;
    for (var a = 0u; a < 3u; a++) {
        lo[a] = bitcast<f32>(kt_unkey(~tight[6u * node + a]));
        hi[a] = bitcast<f32>(kt_unkey(tight[6u * node + 3u + a]));
    }
    let clo = info.lo.xyz;
    let chi = info.hi.xyz;
    for (var a = 0u; a < 3u; a++) {
        let quarter = KT_EMPTY_CUT_FRACTION * (chi[a] - clo[a]);
        if lo[a] - clo[a] > quarter {
            return vec4<u32>(KT_SPLIT_CODE, a, bitcast<u32>(lo[a]), 0u);
        }
        if chi[a] - hi[a] > quarter {
            return vec4<u32>(KT_SPLIT_CODE, a, bitcast<u32>(hi[a]), 0u);
        }
    }
    let ext = hi - lo;
    var axis = 2u;
    if ext.x >= ext.y && ext.x >= ext.z {
        axis = 0u;
    } else if ext.y >= ext.z {
        axis = 1u;
    }
    let plane = lo[axis] * 0.5 + hi[axis] * 0.5;
    if !(lo[axis] < plane && plane < hi[axis]) {
        return vec4<u32>(KT_LEAF_CODE, 0u, 0u, 0u);
    }
    return vec4<u32>(KT_SPLIT_CODE, axis, bitcast<u32>(plane), 0u);
}

@compute @workgroup_size(KT_WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let node = kt_index(gid, nwg);
    if node < params.nodes {
        decisions[node] = decide(node);
    }
}
