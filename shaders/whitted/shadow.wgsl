// Shadow rays of one shade chunk: an any-hit traversal each; an unblocked ray adds its
// contribution to its pixel. The queue length is counters[1], written by shade.wgsl.
//!include "shared/traverse.wgsl"
//!include "shared/shading.wgsl"

@group(0) @binding(23) var<storage, read> shadow_rays: array<ShadowRay>;
@group(0) @binding(24) var<storage, read> counters: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = gid.x + gid.y * groups.x * 64u;
    if i >= min(counters[1], params.shadow_capacity) {
        return;
    }
    let s = shadow_rays[i];
    let h = trace_ray(s.origin, s.dir, 0.0, s.t_max, true);
    if h.instance == NONE {
        accumulate(s.pixel, s.contribution);
    }
}
