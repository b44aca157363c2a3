// Triangle kd-tree, large stage, step 5: each pair to where its node's fate sends it (the
// host's plan, tri_kdtree::plan_level): a split's pairs to its children's places in the next
// level, clipped to their cells by comparisons (tri_kdtree.rs split_items); a small root's to
// the small items; a leaf's primitive to the large stage's references. A fate is (kind,
// place of the first, place of the right child's first, the left child's index in the next
// level); pairs keep their order within each.
//!include "kdtree_tri/common.wgsl"

@group(0) @binding(0) var<uniform> params: KdBuildParams;
@group(0) @binding(1) var<storage, read> level: array<LevelNode>;
@group(0) @binding(2) var<storage, read> pair_lo: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> pair_hi: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read> decisions: array<vec4<u32>>;
@group(0) @binding(5) var<storage, read> fates: array<vec4<u32>>;
@group(0) @binding(6) var<storage, read> left_flags: array<u32>;
@group(0) @binding(7) var<storage, read> right_flags: array<u32>;
@group(0) @binding(8) var<storage, read> left_offsets: array<u32>;
@group(0) @binding(9) var<storage, read> right_offsets: array<u32>;
@group(0) @binding(10) var<storage, read_write> next_lo: array<vec4<u32>>;
@group(0) @binding(11) var<storage, read_write> next_hi: array<vec4<u32>>;
@group(0) @binding(12) var<storage, read_write> small_items: array<vec4<u32>>;
@group(0) @binding(13) var<storage, read_write> large_refs: array<u32>;

@compute @workgroup_size(KT_WG_SIZE)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = kt_index(gid, nwg);
    if i >= params.pairs {
        return;
    }
    let lo = pair_lo[i];
    let hi = pair_hi[i];
    let node = hi.w;
    let fate = fates[node];
    let first = level[node].span.x;
    if fate.x == KT_LEAF_CODE {
        large_refs[fate.y + i - first] = lo.w;
        return;
    }
    if fate.x == KT_SMALL_CODE {
        small_items[2u * (fate.y + i - first)] = lo;
        small_items[2u * (fate.y + i - first) + 1u] = hi;
        return;
    }
    let a = decisions[node].y;
    let plane_bits = decisions[node].z;
    let plane = bitcast<f32>(plane_bits);
    if left_flags[i] != 0u {
        var h = hi;
        if bitcast<f32>(h[a]) > plane {
            h[a] = plane_bits;
        }
        h.w = fate.w;
        let at = fate.y + left_offsets[i] - left_offsets[first];
        next_lo[at] = lo;
        next_hi[at] = h;
    }
    if right_flags[i] != 0u {
        var l = lo;
        if bitcast<f32>(l[a]) < plane {
            l[a] = plane_bits;
        }
        var h = hi;
        h.w = fate.w + 1u;
        let at = fate.z + right_offsets[i] - right_offsets[first];
        next_lo[at] = l;
        next_hi[at] = h;
    }
}
