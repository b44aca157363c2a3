// The irradiance sample of each seed (twin of the end of cpu::gather::final_gather): its rays'
// radiance summed in ray order (plus each ray's density estimate times its weight), E = π/N Σ L,
// and Ward's radius from the harmonic mean of the first-hit distances, clamped.
//!include "gather/common.wgsl"

@group(0) @binding(20) var<uniform> gather_params: GatherParams;
@group(0) @binding(21) var<storage, read> points: array<ShadingPoint>;
@group(0) @binding(22) var<storage, read> seeds: array<u32>;
@group(0) @binding(23) var<storage, read> paths: array<GatherPath>;
@group(0) @binding(24) var<storage, read> query_weights: array<vec4<f32>>;
@group(0) @binding(25) var<storage, read> query_flags: array<u32>;
// The density of ray i's query at densities[query_slot[i]] (a compacted list).
@group(0) @binding(26) var<storage, read> query_slots: array<u32>;
@group(0) @binding(27) var<storage, read> densities: array<vec4<f32>>;
@group(0) @binding(28) var<storage, read_write> samples: array<IrradianceSample>;
// The samples' positions, the input of the irradiance kd-tree.
@group(0) @binding(29) var<storage, read_write> sample_positions: array<vec4<f32>>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let s = gid.x + gid.y * groups.x * 64u;
    if s >= gather_params.seed_count {
        return;
    }
    let n = gather_params.rays_per_seed;
    var sum = vec3<f32>(0.0);
    var inverse = 0.0;
    for (var j = 0u; j < n; j++) {
        let i = s * n + j;
        let path = paths[i];
        var l = path.radiance;
        if query_flags[i] != 0u {
            l = query_weights[i].xyz * densities[query_slots[i]].xyz;
        }
        sum += l;
        if is_finite_f32(path.first_t) && path.first_t > 0.0 {
            inverse += 1.0 / path.first_t;
        }
    }
    let p = points[seeds[s]];
    var radius = gather_params.radius_max;
    if inverse > 0.0 {
        radius = clamp(f32(n) / inverse, gather_params.radius_min, gather_params.radius_max);
    }
    samples[s] = IrradianceSample(p.position, radius, p.normal, 0u, sum * (PI / f32(n)), 0u);
    sample_positions[s] = vec4<f32>(p.position, 0.0);
}
