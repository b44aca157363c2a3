// Traces a list of rays through the fused two-level QBVH for the ray-throughput benchmark:
// closest hit, or any hit for shadow rays. Writes (t as bits, instance) per ray.
//!include "shared/traverse.wgsl"

@group(0) @binding(20) var<storage, read> bench_rays: array<BenchRay>;
@group(0) @binding(21) var<storage, read_write> bench_hits: array<vec2<u32>>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = gid.x + gid.y * groups.x * 64u;
    if i >= params.ray_count {
        return;
    }
    let r = bench_rays[i];
    let h = trace_ray(r.origin, r.dir, 0.0, r.t_max, r.any_hit != 0u);
    bench_hits[i] = vec2<u32>(bitcast<u32>(h.t), h.instance);
}
