// The next level of the shade trees (paper 003 listing 5.7): every flagged child candidate of
// shade.wgsl moves to its place in the exclusive scan of the candidate flags, so the rays keep
// the order of their parents and a dielectric's reflected and refracted children sit next to each
// other; each parent's node records the index of its first child. The last invocation writes the
// next level's length with its indirect-dispatch arguments (as prims/scan_chained.wgsl does for compaction).
//!include "shared/types.wgsl"

@group(0) @binding(0) var<uniform> params: FrameParams;
@group(0) @binding(22) var<storage, read_write> nodes: array<ShadeNode>;
@group(0) @binding(23) var<storage, read> child_candidates: array<Ray>;
@group(0) @binding(24) var<storage, read> child_flags: array<u32>;
@group(0) @binding(30) var<storage, read> child_positions: array<u32>;
@group(0) @binding(31) var<storage, read_write> next_rays: array<Ray>;
@group(0) @binding(32) var<storage, read_write> child_count: array<u32, 4>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = gid.x + gid.y * groups.x * 64u;
    if i >= params.ray_count {
        return;
    }
    let first = child_positions[2u * i];
    let reflected = child_flags[2u * i] != 0u;
    let refracted = child_flags[2u * i + 1u] != 0u;
    if reflected {
        next_rays[first] = child_candidates[2u * i];
    }
    if refracted {
        next_rays[first + select(0u, 1u, reflected)] = child_candidates[2u * i + 1u];
    }
    if reflected || refracted {
        nodes[i].link = (nodes[i].link & ~NODE_CHILD_MASK) | (first & NODE_CHILD_MASK);
    }
    if i == params.ray_count - 1u {
        let total = first + select(0u, 1u, reflected) + select(0u, 1u, refracted);
        child_count[0] = total;
        child_count[1] = (total + 255u) / 256u;
        child_count[2] = 1u;
        child_count[3] = 1u;
    }
}
