// The irradiance sample of each seed (twin of the end of cpu::gather::final_gather): its rays'
// radiance summed (plus each ray's density estimate times its weight), E = π/N Σ L,
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

// Ray j's (of the seed whose rays start at first) share of render::gather::translational_gradient:
// the gradient is a sum over the strata of terms linear in each stratum's differences with the
// stratum below it (across θ) and the one before it (across φ), so each ray adds its own.
fn gradient_term(t: vec3<f32>, b: vec3<f32>, first: u32, j: u32) -> array<vec3<f32>, 3> {
    let rows = gather_params.rows;
    let columns = gather_params.rays_per_seed / rows;
    let row = j / columns;
    let k = j % columns;
    let here = first + j;
    let lower_edge = f32(row) / f32(rows);
    let l = ray_radiance(here);
    let r = ray_distance(here);
    var across_theta = vec3<f32>(0.0);
    var across_phi = vec3<f32>(0.0);
    if row > 0u {
        let below = here - columns;
        let w = sqrt(lower_edge) * (1.0 - lower_edge) * inverse_nearer(r, ray_distance(below));
        across_theta = (l - ray_radiance(below)) * w;
    }
    if columns > 1u {
        let km = (k + columns - 1u) % columns;
        let before = first + row * columns + km;
        let upper_edge = f32(row + 1u) / f32(rows);
        let w = (sqrt(upper_edge) - sqrt(lower_edge)) * inverse_nearer(r, ray_distance(before));
        across_phi = (l - ray_radiance(before)) * w;
    }
    let sector = TAU / f32(columns);
    let middle = sector * (f32(k) + 0.5);
    let edge = sector * f32(k);
    let u = (t * cos(middle) + b * sin(middle)) * sector;
    let v = t * -sin(edge) + b * cos(edge);
    return array<vec3<f32>, 3>(
        u * across_theta.x + v * across_phi.x,
        u * across_theta.y + v * across_phi.y,
        u * across_theta.z + v * across_phi.z,
    );
}

// One workgroup per seed: each invocation sums its share of the seed's rays, then the shares are
// added up in a fixed tree (the same sum whatever the chunk).
const REDUCE_GROUP: u32 = 64u;
// Per invocation: the radiance sum (xyz) and the inverse distances (w), and the gradient's rows.
var<workgroup> shared_sums: array<vec4<f32>, REDUCE_GROUP>;
var<workgroup> shared_gradient: array<array<vec3<f32>, 3>, REDUCE_GROUP>;

@compute @workgroup_size(64)
fn main(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
    @builtin(num_workgroups) groups: vec3<u32>,
) {
    let s = wid.x + wid.y * groups.x;
    let live = s < gather_params.seed_count;
    let n = gather_params.rays_per_seed;
    // The seed's index in the frame: this chunk's rays start at its seed_offset.
    let seed = gather_params.seed_offset + min(s, max(gather_params.seed_count, 1u) - 1u);
    let p = points[seeds[seed]];
    let t = orthonormal_basis_t(p.normal);
    let b = orthonormal_basis_b(p.normal);
    var sum = vec4<f32>(0.0);
    var g = array<vec3<f32>, 3>(vec3<f32>(0.0), vec3<f32>(0.0), vec3<f32>(0.0));
    if live {
        for (var j = lane; j < n; j += REDUCE_GROUP) {
            let i = s * n + j;
            sum += vec4<f32>(ray_radiance(i), 0.0);
            let d = ray_distance(i);
            if is_finite_f32(d) {
                sum.w += 1.0 / d;
            }
            let term = gradient_term(t, b, s * n, j);
            for (var c = 0u; c < 3u; c++) {
                g[c] += term[c];
            }
        }
    }
    shared_sums[lane] = sum;
    shared_gradient[lane] = g;
    for (var half = REDUCE_GROUP / 2u; half > 0u; half /= 2u) {
        workgroupBarrier();
        if lane < half {
            shared_sums[lane] += shared_sums[lane + half];
            for (var c = 0u; c < 3u; c++) {
                shared_gradient[lane][c] += shared_gradient[lane + half][c];
            }
        }
    }
    if !live || lane != 0u {
        return;
    }
    let total = shared_sums[0];
    var radius = gather_params.radius_max;
    if total.w > 0.0 {
        radius = clamp(f32(n) / total.w, gather_params.radius_min, gather_params.radius_max);
    }
    let sg = shared_gradient[0];
    let gradient = array<vec4<f32>, 3>(vec4<f32>(sg[0], 0.0), vec4<f32>(sg[1], 0.0), vec4<f32>(sg[2], 0.0));
    samples[seed] = IrradianceSample(p.position, radius, p.normal, 0u, total.xyz * (PI / f32(n)), 0u, gradient);
    sample_positions[seed] = vec4<f32>(p.position, 0.0);
}
