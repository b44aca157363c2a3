// One step of the gather rays (twin of one iteration of cpu::gather::gather_radiance): a miss
// ends the ray; a diffuse hit ends it with a density query of the global map (position and the
// normal facing the ray, flagged; gather/reduce.wgsl adds weight · albedo/π · density); an
// emissive hit adds its radiance; a mirror, a conductor or a dielectric (Fresnel-chosen) sends
// it on, and so does a rough one in a direction its BSDF samples. The step's rays are a queue (all the rays at step 0, in order; then the ones the step
// before sent on, in any order): a ray's own index, which its path and query have, comes from
// its seed (`pixel`) and its stream (`sample`). The rays sent on are appended to the next queue.
//!include "gather/common.wgsl"

@group(0) @binding(20) var<uniform> gather_params: GatherParams;
@group(0) @binding(21) var<storage, read> rays: array<Ray>;
@group(0) @binding(22) var<storage, read> hits: array<Hit>;
@group(0) @binding(23) var<storage, read_write> paths: array<GatherPath>;
// Two vec4 per ray (position, normal) and the weight (albedo/π times the throughput) of a query.
@group(0) @binding(24) var<storage, read_write> queries: array<vec4<f32>>;
@group(0) @binding(25) var<storage, read_write> query_weights: array<vec4<f32>>;
@group(0) @binding(26) var<storage, read_write> query_flags: array<u32>;
// The next step's queue and each step's count of rays appended to it.
@group(0) @binding(27) var<storage, read_write> next_rays: array<Ray>;
@group(0) @binding(28) var<storage, read_write> step_counts: array<atomic<u32>>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let e = gid.x + gid.y * groups.x * 64u;
    if e >= gather_params.ray_count {
        return;
    }
    let ray = rays[e];
    if ray.pixel == NONE {
        return;
    }
    let i = (ray.pixel - gather_params.seed_offset) * gather_params.rays_per_seed + (ray.sample - GATHER_STREAM_TAG);
    var path = paths[i];
    let hit = hits[e];
    // The ray ends here unless a specular surface sends it on.
    var next = ray;
    var goes_on = false;
    if hit.instance == NONE {
        path.weight.w = 0.0;
        paths[i] = path;
        return;
    }
    if gather_params.step == 0u {
        path.first_t = hit.t * sqrt(dot3(ray.dir, ray.dir));
    }
    let sp = surface_point(ray.origin, ray.dir, hit);
    let dir = normalize3(ray.dir);
    let m = material_at(materials[sp.material], sp);
    var stream = sample_stream(params.seed_lo, params.seed_hi, ray.pixel, ray.sample);
    stream.dimension = ray.dimension;
    let u = next_f32(&stream);
    let facing = face_forward(sp.geometric_normal, dir);
    if m.kind == 0u {
        queries[2u * i] = vec4<f32>(sp.position, 1.0);
        queries[2u * i + 1u] = vec4<f32>(face_forward(sp.shading_normal, dir), 0.0);
        query_weights[i] = vec4<f32>(path.weight.xyz * albedo_of(m, sp) * (1.0 / PI), 0.0);
        query_flags[i] = 1u;
        path.weight.w = 0.0;
    } else if m.kind == MATERIAL_PLASTIC {
        // The coat with the probability of its Fresnel term, else the base's density query,
        // each weighed by its probability (two more numbers for the coat).
        let ux = next_f32(&stream);
        let u_dir = vec2<f32>(ux, next_f32(&stream));
        let h = plastic_hit(m, albedo_of(m, sp), dir, sp.shading_normal, sp.geometric_normal);
        let p_coat = h.fresnel_out;
        path.weight.w = 0.0;
        if h.valid && u >= p_coat {
            queries[2u * i] = vec4<f32>(sp.position, 1.0);
            queries[2u * i + 1u] = vec4<f32>(face_forward(sp.shading_normal, dir), 0.0);
            query_weights[i] = vec4<f32>(path.weight.xyz * plastic_base_albedo(m, h) * (1.0 / PI) / (1.0 - p_coat), 0.0);
            query_flags[i] = 1u;
        } else if h.valid {
            let s = plastic_sample_coat(m, h, u_dir);
            if s.valid {
                path.weight = vec4<f32>(path.weight.xyz * s.weight / p_coat, 1.0);
                next = Ray(offset_origin(sp.position, facing, params.epsilon), ray.pixel, s.dir, ray.sample, stream.dimension, 0u, 0u, 0u);
                goes_on = true;
            }
        }
    } else if material_alpha(m) > 0.0 {
        // A glossy lobe: one direction it samples (two more numbers), u choosing a dielectric's
        // branch.
        let ux = next_f32(&stream);
        let u_dir = vec2<f32>(ux, next_f32(&stream));
        let rough = rough_hit(dir, sp.shading_normal, sp.geometric_normal);
        var s = RoughSample(vec3<f32>(0.0), 0.0, vec3<f32>(0.0), false, false);
        if rough.valid {
            s = rough_sample(m, rough, u, u_dir);
        }
        if s.valid {
            path.weight = vec4<f32>(path.weight.xyz * s.weight, 1.0);
            var side = facing;
            if s.transmitted {
                side = -facing;
            }
            next = Ray(offset_origin(sp.position, side, params.epsilon), ray.pixel, s.dir, ray.sample, stream.dimension, 0u, 0u, 0u);
            goes_on = true;
        } else {
            path.weight.w = 0.0;
        }
    } else if m.kind == 3u {
        // Every emitter is a light: its shadow rays and photons bring its light, so it is black here.
        path.weight.w = 0.0;
    } else if m.kind == MATERIAL_MIRROR || m.kind == MATERIAL_CONDUCTOR {
        let n = face_forward(sp.shading_normal, dir);
        let w = path.weight.xyz * specular_reflectance(m, -dot3(dir, n));
        path.weight = vec4<f32>(w, 1.0);
        next = Ray(offset_origin(sp.position, facing, params.epsilon), ray.pixel, reflect_dir(dir, n), ray.sample, stream.dimension, 0u, 0u, 0u);
        goes_on = true;
    } else {
        let split = dielectric_split(dir, sp.shading_normal, sp.geometric_normal, m.ior, m.flags);
        if split.has_refracted && u >= split.fresnel {
            path.weight = vec4<f32>(path.weight.xyz * m.color.xyz, 1.0);
            next = Ray(offset_origin(sp.position, -facing, params.epsilon), ray.pixel, split.refracted, ray.sample, stream.dimension, 0u, 0u, 0u);
        } else {
            next = Ray(offset_origin(sp.position, facing, params.epsilon), ray.pixel, split.reflected, ray.sample, stream.dimension, 0u, 0u, 0u);
        }
        goes_on = true;
    }
    if path.weight.w > 0.0 && max(max(path.weight.x, path.weight.y), path.weight.z) <= 0.0 {
        path.weight.w = 0.0;
        goes_on = false;
    }
    paths[i] = path;
    if goes_on {
        next_rays[atomicAdd(&step_counts[gather_params.step], 1u)] = next;
    }
}
