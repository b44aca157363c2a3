// Traces a list of rays with the scene's trace_ray (the fused two-level loop, or the loop of a
// single instance) for the ray-throughput benchmark: closest hit, or any hit for shadow rays.
// Writes (t as bits, instance) per ray. Experiments of `gpu_rays --variants`: WG128 (workgroups
// of 128).
//!include "shared/traverse.wgsl"

//!if WG128
const WG: u32 = 128u;
//!else
const WG: u32 = 64u;
//!endif

@group(0) @binding(20) var<storage, read> bench_rays: array<BenchRay>;
@group(0) @binding(21) var<storage, read_write> bench_hits: array<vec2<u32>>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = gid.x + gid.y * groups.x * WG;
    if i >= params.ray_count {
        return;
    }
    let r = bench_rays[i];
    let h = trace_ray(r.origin, r.dir, 0.0, r.t_max, r.any_hit != 0u);
    bench_hits[i] = vec2<u32>(bitcast<u32>(h.t), h.instance);
}
