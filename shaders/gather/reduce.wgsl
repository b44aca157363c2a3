// The irradiance sample of each seed (twin of the end of cpu::gather::final_gather): its rays'
// radiance summed in ray order (plus each ray's density estimate times its weight), E = π/N Σ L,
// Ward's radius from the harmonic mean of the first-hit distances, clamped, and the
// translational gradient (render::gather::translational_gradient).
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

// Ray i's radiance: what its path brought, or its query's density estimate times its weight.
fn ray_radiance(i: u32) -> vec3<f32> {
    if query_flags[i] != 0u {
        return query_weights[i].xyz * densities[query_slots[i]].xyz;
    }
    return paths[i].radiance;
}

// Ray i's first-hit distance, infinite for a miss (as cpu::gather::final_gather keeps it).
fn ray_distance(i: u32) -> f32 {
    let t = paths[i].first_t;
    if is_finite_f32(t) && t > 0.0 {
        return t;
    }
    return f32_infinity();
}

// 1 / max(min(a, b), r_min).
fn inverse_nearer(a: f32, b: f32) -> f32 {
    return 1.0 / max(min(a, b), gather_params.radius_min);
}

// render::gather::translational_gradient over the rays first..first + rows * columns.
fn translational_gradient(n: vec3<f32>, first: u32) -> array<vec4<f32>, 3> {
    let rows = gather_params.rows;
    let columns = gather_params.rays_per_seed / rows;
    let t = orthonormal_basis_t(n);
    let b = orthonormal_basis_b(n);
    var g = array<vec4<f32>, 3>(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    for (var k = 0u; k < columns; k++) {
        let km = (k + columns - 1u) % columns;
        var across_theta = vec3<f32>(0.0);
        var across_phi = vec3<f32>(0.0);
        for (var j = 0u; j < rows; j++) {
            let here = first + j * columns + k;
            let lower_edge = f32(j) / f32(rows);
            let l = ray_radiance(here);
            let r = ray_distance(here);
            if j > 0u {
                let below = here - columns;
                let w = sqrt(lower_edge) * (1.0 - lower_edge) * inverse_nearer(r, ray_distance(below));
                across_theta += (l - ray_radiance(below)) * w;
            }
            if columns > 1u {
                let before = first + j * columns + km;
                let upper_edge = f32(j + 1u) / f32(rows);
                let w = (sqrt(upper_edge) - sqrt(lower_edge)) * inverse_nearer(r, ray_distance(before));
                across_phi += (l - ray_radiance(before)) * w;
            }
        }
        let sector = TAU / f32(columns);
        let middle = sector * (f32(k) + 0.5);
        let edge = sector * f32(k);
        let u = t * cos(middle) + b * sin(middle);
        let v = t * -sin(edge) + b * cos(edge);
        across_theta *= sector;
        for (var c = 0u; c < 3u; c++) {
            g[c] += vec4<f32>(u * across_theta[c] + v * across_phi[c], 0.0);
        }
    }
    return g;
}

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
        sum += ray_radiance(i);
        let t = ray_distance(i);
        if is_finite_f32(t) {
            inverse += 1.0 / t;
        }
    }
    // The seed's index in the frame: this chunk's rays start at its seed_offset.
    let seed = gather_params.seed_offset + s;
    let p = points[seeds[seed]];
    var radius = gather_params.radius_max;
    if inverse > 0.0 {
        radius = clamp(f32(n) / inverse, gather_params.radius_min, gather_params.radius_max);
    }
    let gradient = translational_gradient(p.normal, s * n);
    samples[seed] = IrradianceSample(p.position, radius, p.normal, 0u, sum * (PI / f32(n)), 0u, gradient);
    sample_positions[seed] = vec4<f32>(p.position, 0.0);
}
