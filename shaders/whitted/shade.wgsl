// One bounce of the Whitted shade trees as a wavefront (paper 003 section 5.1.2): for each ray of
// the queue (a chunk of it from params.ray_offset), with its hit from trace.wgsl, it adds what the
// ray sees directly (a quad light from its front, an emitter) to the pixel, emits one shadow
// ray per light (and per quad-light sample) at a diffuse hit, and appends the mirror and
// dielectric (reflected + refracted, Schlick) child rays to the next queue with their weights
// multiplied in. Camera rays (bounce 0) also record the first-hit AOV values.
// Twin of Tracer::radiance and Tracer::direct_light in src/cpu/whitted.rs.
//!include "shared/shading.wgsl"
//!include "shared/rng.wgsl"

@group(0) @binding(20) var<storage, read> rays: array<Ray>;
@group(0) @binding(21) var<storage, read> hits: array<Hit>;
@group(0) @binding(22) var<storage, read_write> next_rays: array<Ray>;
@group(0) @binding(23) var<storage, read_write> shadow_rays: array<ShadowRay>;
// 0: length of next_rays, 1: length of shadow_rays (this chunk), 2: shadow rays in all.
@group(0) @binding(24) var<storage, read_write> counters: array<atomic<u32>>;
@group(0) @binding(26) var<storage, read_write> first_hits: array<FirstHit>;

const PI: f32 = 3.14159265358979323846;
const FRAC_1_PI: f32 = 0.318309886183790671538;

fn emit_shadow(origin: vec3<f32>, pixel: u32, dir: vec3<f32>, t_max: f32, contribution: vec3<f32>) {
    let slot = atomicAdd(&counters[1], 1u);
    atomicAdd(&counters[2], 1u);
    if slot < params.shadow_capacity {
        shadow_rays[slot] = ShadowRay(origin, pixel, dir, t_max, contribution, 0u);
    }
}

fn emit_ray(parent: Ray, origin: vec3<f32>, dir: vec3<f32>, weight: vec3<f32>) {
    let slot = atomicAdd(&counters[0], 1u);
    if slot < params.ray_capacity {
        next_rays[slot] = Ray(origin, parent.pixel, dir, parent.sample, weight, parent.dimension);
    }
}

// Tracer::point_irradiance without the visibility: emits the shadow ray with its contribution.
fn point_light(origin: vec3<f32>, n: vec3<f32>, position: vec3<f32>, intensity: vec3<f32>, pixel: u32, scale: vec3<f32>) {
    let to_light = position - origin;
    let dist2 = dot3(to_light, to_light);
    if dist2 <= 0.0 {
        return;
    }
    let cos = dot3(n, to_light) / sqrt(dist2);
    if cos <= 0.0 {
        return;
    }
    emit_shadow(origin, pixel, to_light, 1.0 - 1e-4, scale * (intensity * (cos / dist2)));
}

fn smoothstep_cpu(edge0: f32, edge1: f32, x: f32) -> f32 {
    if edge1 <= edge0 {
        if x >= edge0 { return 1.0; }
        return 0.0;
    }
    let t = clamp((x - edge0) / (edge1 - edge0), 0.0, 1.0);
    return t * t * (3.0 - 2.0 * t);
}

// Tracer::direct_light: shadow rays towards every light, each carrying weight · albedo/π · E_i.
fn direct_light(sp: SurfacePoint, view_dir: vec3<f32>, ray: Ray, scale: vec3<f32>) {
    let n = face_forward(sp.shading_normal, view_dir);
    let ng = face_forward(sp.geometric_normal, view_dir);
    let origin = offset_origin(sp.position, ng, params.epsilon);
    var stream = sample_stream(params.seed_lo, params.seed_hi, ray.pixel, ray.sample);
    stream.dimension = ray.dimension;
    for (var l = 0u; l < params.light_count; l++) {
        let light = lights[l];
        switch light.kind {
            case 0u: {
                point_light(origin, n, light.position.xyz, light.color.xyz, ray.pixel, scale);
            }
            case 1u: {
                let to_point = normalize_or(sp.position - light.position.xyz, vec3<f32>(0.0));
                let cos = dot3(to_point, light.direction.xyz);
                let falloff = smoothstep_cpu(light.cos_outer, light.cos_inner, cos);
                if falloff > 0.0 {
                    point_light(origin, n, light.position.xyz, light.color.xyz * falloff / (4.0 * PI), ray.pixel, scale);
                }
            }
            case 2u: {
                let wi = light.direction.xyz;
                let cos = dot3(n, wi);
                if cos > 0.0 && dot3(ng, wi) > 0.0 {
                    emit_shadow(origin, ray.pixel, wi, f32_infinity(), scale * (light.color.xyz * cos));
                }
            }
            default: {
                let area = light.normal.w;
                if area <= 0.0 {
                    continue;
                }
                let count = max(light.samples, 1u);
                let per_sample = area / f32(count);
                for (var s = 0u; s < count; s++) {
                    let jx = next_f32(&stream);
                    let uv = stratified_sample(s, count, vec2<f32>(jx, next_f32(&stream)));
                    let target_point = light.position.xyz + light.direction.xyz * uv.x + light.edge_v.xyz * uv.y;
                    let to_light = target_point - origin;
                    let dist2 = dot3(to_light, to_light);
                    if dist2 <= 0.0 {
                        continue;
                    }
                    let wi = to_light / sqrt(dist2);
                    let cos_surface = dot3(n, wi);
                    let cos_light = -dot3(light.normal.xyz, wi);
                    if cos_surface <= 0.0 || cos_light <= 0.0 || dot3(ng, wi) <= 0.0 {
                        continue;
                    }
                    emit_shadow(origin, ray.pixel, to_light, 1.0 - 1e-4,
                        scale * (light.color.xyz * (cos_surface * cos_light / dist2)) * per_sample);
                }
            }
        }
    }
}

struct QuadLightHit {
    found: bool,
    t: f32,
    radiance: vec3<f32>,
}

// Tracer::visible_quad_light: the closest quad light seen from its emitting side before t_max.
fn visible_quad_light(origin: vec3<f32>, dir: vec3<f32>, t_max: f32) -> QuadLightHit {
    var best = QuadLightHit(false, f32_infinity(), vec3<f32>(0.0));
    for (var l = 0u; l < params.light_count; l++) {
        let light = lights[l];
        if light.kind != 3u {
            continue;
        }
        let corner = light.position.xyz;
        let eu = light.direction.xyz;
        let ev = light.edge_v.xyz;
        let n = cross3(eu, ev);
        let denom = dot3(dir, n);
        if denom >= 0.0 {
            continue;
        }
        let t = dot3(corner - origin, n) / denom;
        if t <= 0.0 || t >= min(t_max, best.t) {
            continue;
        }
        let p = origin + dir * t - corner;
        let uu = dot3(eu, eu);
        let uv = dot3(eu, ev);
        let vv = dot3(ev, ev);
        let pu = dot3(p, eu);
        let pv = dot3(p, ev);
        let det = uu * vv - uv * uv;
        if det <= 0.0 {
            continue;
        }
        let a = (pu * vv - pv * uv) / det;
        let b = (pv * uu - pu * uv) / det;
        if a >= 0.0 && a <= 1.0 && b >= 0.0 && b <= 1.0 {
            best = QuadLightHit(true, t, light.color.xyz);
        }
    }
    return best;
}

fn record_first_hit(ray: Ray, albedo: vec3<f32>, normal: vec3<f32>, depth: f32) {
    if params.bounce == 0u {
        first_hits[ray.pixel * params.spp + ray.sample] = FirstHit(albedo, depth, normal, 0u);
    }
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let i = params.ray_offset + gid.x + gid.y * groups.x * 64u;
    if i >= params.ray_count {
        return;
    }
    let ray = rays[i];
    if ray.pixel == NONE {
        return;
    }
    let hit = hits[i];
    var t_hit = f32_infinity();
    if hit.instance != NONE {
        t_hit = hit.t;
    }
    let light_hit = visible_quad_light(ray.origin, ray.dir, t_hit);
    if light_hit.found {
        record_first_hit(ray, vec3<f32>(1.0), -normalize3(ray.dir), light_hit.t * sqrt(dot3(ray.dir, ray.dir)));
        accumulate(ray.pixel, ray.weight * light_hit.radiance);
        return;
    }
    if hit.instance == NONE {
        record_first_hit(ray, vec3<f32>(0.0), vec3<f32>(0.0), f32_infinity());
        return;
    }
    let sp = surface_point(ray.dir, hit);
    let material = materials[sp.material];
    let dir = normalize3(ray.dir);
    record_first_hit(ray, albedo_of(material, sp), sp.shading_normal, hit.t * sqrt(dot3(ray.dir, ray.dir)));
    switch material.kind {
        case 3u: {
            if dot3(dir, sp.geometric_normal) < 0.0 {
                accumulate(ray.pixel, ray.weight * material.color.xyz);
            }
        }
        case 0u: {
            direct_light(sp, dir, ray, ray.weight * albedo_of(material, sp) * FRAC_1_PI);
        }
        case 1u: {
            if params.bounce >= params.max_depth {
                return;
            }
            let n = face_forward(sp.shading_normal, dir);
            let ng = face_forward(sp.geometric_normal, dir);
            emit_ray(ray, offset_origin(sp.position, ng, params.epsilon), reflect_dir(dir, n), ray.weight * material.color.xyz);
        }
        default: {
            if params.bounce >= params.max_depth {
                return;
            }
            let split = dielectric_split(dir, sp.shading_normal, sp.geometric_normal, material.ior);
            let ng_out = face_forward(sp.geometric_normal, dir);
            if split.fresnel > 0.0 {
                emit_ray(ray, offset_origin(sp.position, ng_out, params.epsilon), split.reflected, ray.weight * split.fresnel);
            }
            if split.has_refracted {
                emit_ray(ray, offset_origin(sp.position, -ng_out, params.epsilon), split.refracted,
                    ray.weight * ((1.0 - split.fresnel) * material.color.xyz));
            }
        }
    }
}
