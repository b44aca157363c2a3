// Shadow rays of one shade chunk: an any-hit traversal each; a blocked ray's contribution is
// zeroed in its own slot, which direct.wgsl then adds to its node. The slots to trace are
// shadow_slots[0..shadow_count[0]]: with VD_PATCHES the used ones, compacted by a scan of their
// flags (paper 003 listing 5.6), and an unblocked ray records the VD patches it reaches (hit
// slot = its compacted index; whitted/vd_shadow.wgsl zeroes the ones the batched bottom level
// finds blocked); without, every slot of the chunk, an unused one (flag 0) returning at once.
//!include "shared/traverse.wgsl"

@group(0) @binding(25) var<storage, read_write> shadow_rays: array<ShadowRay>;
@group(0) @binding(26) var<storage, read> shadow_flags: array<u32>;
@group(0) @binding(28) var<storage, read> shadow_slots: array<u32>;
@group(0) @binding(29) var<storage, read> shadow_count: array<u32, 4>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = gid.x + gid.y * groups.x * 64u;
    if i >= shadow_count[0] {
        return;
    }
    let slot = shadow_slots[i];
    if shadow_flags[slot] == 0u {
        return;
    }
    let s = shadow_rays[slot];
    //!if VD_PATCHES
    vd_slot = i;
    //!endif
    let h = trace_ray(s.origin, s.dir, 0.0, s.t_max, true);
    if h.instance != NONE {
        shadow_rays[slot].contribution = vec3<f32>(0.0);
    }
}
