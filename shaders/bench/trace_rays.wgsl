// Traces a list of rays through the fused two-level hierarchy for the ray-throughput benchmark:
// closest hit, or any hit for shadow rays. Writes (t as bits, instance) per ray. Experiments of
// `gpu_rays --variants`: WG128 (workgroups of 128), LEAN (bench/trace_lean.wgsl: the wide
// layout's loop over the first instance's mesh alone, in world space, without the top level).
//!include "shared/traverse.wgsl"
//!if LEAN
//!include "bench/trace_lean.wgsl"
//!endif

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
    //!if LEAN
    let h = trace_ray_lean(r.origin, r.dir, 0.0, r.t_max, r.any_hit != 0u);
    //!else
    let h = trace_ray(r.origin, r.dir, 0.0, r.t_max, r.any_hit != 0u);
    //!endif
    bench_hits[i] = vec2<u32>(bitcast<u32>(h.t), h.instance);
}
