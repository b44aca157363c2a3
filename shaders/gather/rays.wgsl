// Gather rays (paper 003 section 6.2.4): `rays_per_seed` cosine-distributed rays from each seed,
// one in each of its rows x columns strata (render::gather::gather_strata), leaving its point
// along the normal. Twin of the loop head of
// cpu::gather::final_gather.
//!include "gather/common.wgsl"

@group(0) @binding(20) var<uniform> gather_params: GatherParams;
@group(0) @binding(21) var<storage, read> points: array<ShadingPoint>;
@group(0) @binding(22) var<storage, read> seeds: array<u32>;
@group(0) @binding(23) var<storage, read_write> rays: array<Ray>;
@group(0) @binding(24) var<storage, read_write> paths: array<GatherPath>;
// Two vec4 per ray (position, normal): the seed's position and no normal (a query that finds
// nothing, at once) until a diffuse hit writes its own (gather/shade.wgsl), so that every ray's
// query is written before the lookups read it.
@group(0) @binding(25) var<storage, read_write> queries: array<vec4<f32>>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = gid.x + gid.y * groups.x * 64u;
    if i >= gather_params.ray_count {
        return;
    }
    // The seed's index in the frame (this chunk starts at seed_offset): its streams and the
    // rays' `pixel`.
    let s = gather_params.seed_offset + i / gather_params.rays_per_seed;
    let j = i % gather_params.rays_per_seed;
    let p = points[seeds[s]];
    var stream = sample_stream(params.seed_lo, params.seed_hi, s, GATHER_STREAM_TAG + j);
    let jx = next_f32(&stream);
    let columns = gather_params.rays_per_seed / gather_params.rows;
    let dir = gather_direction(p.normal, j, gather_params.rows, columns, vec2<f32>(jx, next_f32(&stream)));
    rays[i] = Ray(offset_origin(p.position, p.normal, params.epsilon), s, dir, GATHER_STREAM_TAG + j, stream.dimension, 0u, 0u, 0u);
    paths[i] = GatherPath(vec4<f32>(1.0, 1.0, 1.0, 1.0), vec3<f32>(0.0), f32_infinity());
    queries[2u * i] = vec4<f32>(p.position, 1.0);
    queries[2u * i + 1u] = vec4<f32>(0.0);
}
