// Closest hits of a queue of rays through the fused two-level QBVH (shared/traverse.wgsl):
// t, instance, prim and the barycentrics / patch parameter per ray; padding rays miss. With
// VD_PATCHES the VD patches a ray reaches are recorded (hit slot = ray index) for the batched
// bottom level, and whitted/vd_merge.wgsl merges their hits in afterwards.
//!include "shared/traverse.wgsl"

@group(0) @binding(20) var<storage, read> rays: array<Ray>;
@group(0) @binding(21) var<storage, read_write> hits: array<Hit>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = gid.x + gid.y * groups.x * 64u;
    if i >= params.ray_count {
        return;
    }
    let ray = rays[i];
    var out = Hit(f32_infinity(), NONE, NONE, 0u, vec2<f32>(0.0));
    if ray.pixel != NONE {
        //!if VD_PATCHES
        vd_slot = i;
        //!endif
        let h = trace_ray(ray.origin, ray.dir, 0.0, f32_infinity(), false);
        out = Hit(h.t, h.instance, h.prim, 0u, h.st);
    }
    hits[i] = out;
}
