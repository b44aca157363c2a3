// Shadow rays blocked by VD patches: after shadow.wgsl traced the compacted shadow rays through
// triangles and flat quads (and recorded the VD patches they reach with hit slot = compacted
// index), the batched bottom level found which slots hit a patch in (0, t_max); their
// contributions are zeroed here, before direct.wgsl sums the slots into their nodes.
//!include "shared/scene.wgsl"

@group(0) @binding(25) var<storage, read_write> shadow_rays: array<ShadowRay>;
@group(0) @binding(28) var<storage, read> shadow_slots: array<u32>;
@group(0) @binding(29) var<storage, read> shadow_count: array<u32, 4>;
// Two words per slot: the winning record or 0xffffffff, and the f32 bits of its t.
@group(0) @binding(44) var<storage, read> vd_hits: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = gid.x + gid.y * groups.x * 64u;
    if i >= shadow_count[0] {
        return;
    }
    if vd_hits[2u * i] != NONE {
        shadow_rays[shadow_slots[i]].contribution = vec3<f32>(0.0);
    }
}
