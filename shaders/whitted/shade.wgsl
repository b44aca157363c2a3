// One bounce of the Whitted shade trees as a wavefront (paper 003 section 5.1.2): for each ray of
// the level (a chunk of it from params.ray_offset), with its hit from trace.wgsl, it writes the
// ray's shade-tree node: what the ray sees directly (a quad light from its front, an emitter,
// the environment light when it leaves the scene) as a leaf; at a diffuse hit albedo/pi, and one shadow ray per light (and per quad-light sample)
// into the ray's own shadow slots, flagged for compaction; at a mirror or dielectric hit the
// child weights, and the child rays (reflected, refracted) as candidates 2i and 2i + 1, flagged
// for the scan that places them in the next level (spawn.wgsl). Camera rays (bounce 0) also
// record the first-hit AOV values.
// Twin of Tracer::radiance and Tracer::direct_light in src/cpu/whitted.rs.
//!include "shared/shading.wgsl"
//!include "shared/environment.wgsl"
//!include "shared/rng.wgsl"
//!include "shared/gather_types.wgsl"

@group(0) @binding(20) var<storage, read> rays: array<Ray>;
@group(0) @binding(21) var<storage, read> hits: array<Hit>;
@group(0) @binding(22) var<storage, read_write> nodes: array<ShadeNode>;
// Two candidate child rays per ray of the level and their 0/1 flags (the NumBouncedRays scan input).
@group(0) @binding(23) var<storage, read_write> child_candidates: array<Ray>;
@group(0) @binding(24) var<storage, read_write> child_flags: array<u32>;
// params.shadows_per_hit slots per ray of the chunk and their 0/1 flags (the DiffuseHits scan input):
// shadow ray k of the chunk's ray `local` at shadow_slot(local, k), so that the invocations of a
// workgroup write their k-th rays side by side.
@group(0) @binding(25) var<storage, read_write> shadow_rays: array<ShadowRay>;
@group(0) @binding(26) var<storage, read_write> shadow_flags: array<u32>;
@group(0) @binding(27) var<storage, read_write> first_hits: array<FirstHit>;
// The shading point of each diffuse node (node = its index; NONE for other nodes), for photon
// mapping's second half (shaders/gather/).
@group(0) @binding(28) var<storage, read_write> diffuse_points: array<ShadingPoint>;
// How many of the level's params.ray_count slots hold rays (the first word, as spawn.wgsl wrote
// it for the level before; the camera level's is its ray count). A level sized from an earlier
// frame has room to spare, and the slots past the rays hold what an earlier use left: they
// become empty leaves, like padding.
@group(0) @binding(39) var<storage, read> level_count: array<u32, 4>;

// This invocation's ray in the chunk and how many of its shadow slots are used.
var<private> shadow_base: u32;
var<private> shadow_used: u32;
var<private> node_index: u32;

const PI: f32 = 3.14159265358979323846;
const FRAC_1_PI: f32 = 0.318309886183790671538;

// Shadow ray k of the chunk's ray `local`: the chunk's rays' k-th slots lie together, row k of
// shadows_per_hit rows as long as the chunk (the rays from ray_offset, at most shadow_capacity /
// shadows_per_hit of them), so the chunk's slots are the first chunk × shadows_per_hit. Twin of
// direct.wgsl's.
fn shadow_slot(local: u32, k: u32) -> u32 {
    let row = min(params.shadow_capacity / max(params.shadows_per_hit, 1u), params.ray_count - params.ray_offset);
    return k * row + local;
}

fn emit_shadow(origin: vec3<f32>, pixel: u32, dir: vec3<f32>, t_max: f32, contribution: vec3<f32>) {
    if shadow_used >= params.shadows_per_hit {
        return;
    }
    let slot = shadow_slot(shadow_base, shadow_used);
    shadow_used += 1u;
    shadow_rays[slot] = ShadowRay(origin, node_index, dir, t_max, contribution, 0u);
    shadow_flags[slot] = 1u;
}

// Candidate `which` (0: reflected, 1: refracted) of the ray's children.
fn emit_child(parent: Ray, which: u32, origin: vec3<f32>, dir: vec3<f32>) {
    let slot = 2u * node_index + which;
    child_candidates[slot] = Ray(origin, parent.pixel, dir, parent.sample, parent.dimension, 0u, 0u, 0u);
    child_flags[slot] = 1u;
}

fn write_node(state: u32, own: vec3<f32>, weight: vec3<f32>, fresnel: f32) {
    nodes[node_index] = ShadeNode(own, state << NODE_STATE_SHIFT, weight, fresnel);
}

// Tracer::point_irradiance without the visibility: emits the shadow ray with its contribution.
fn point_light(origin: vec3<f32>, n: vec3<f32>, position: vec3<f32>, intensity: vec3<f32>, pixel: u32) {
    let to_light = position - origin;
    let dist2 = dot3(to_light, to_light);
    if dist2 <= 0.0 {
        return;
    }
    let cos = dot3(n, to_light) / sqrt(dist2);
    if cos <= 0.0 {
        return;
    }
    emit_shadow(origin, pixel, to_light, 1.0 - 1e-4, intensity * (cos / dist2));
}

fn smoothstep_cpu(edge0: f32, edge1: f32, x: f32) -> f32 {
    if edge1 <= edge0 {
        if x >= edge0 { return 1.0; }
        return 0.0;
    }
    let t = clamp((x - edge0) / (edge1 - edge0), 0.0, 1.0);
    return t * t * (3.0 - 2.0 * t);
}

// A point on a mesh light and the unit normal of its emitting side there.
struct EmitterPoint {
    point: vec3<f32>,
    normal: vec3<f32>,
}

// MeshEmitter::sample: scene::pick_by_cdf over the triangles of mesh light `light` (records
// first .. first + count, normal.w the area fraction up to each), then triangle_point.
fn mesh_light_point(light: Light, u: vec2<f32>) -> EmitterPoint {
    var lo = light.first;
    var hi = light.first + max(light.count, 1u) - 1u;
    while lo < hi {
        let mid = (lo + hi) / 2u;
        if lights[mid].normal.w <= u.x {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    var below = 0.0;
    if lo > light.first {
        below = lights[lo - 1u].normal.w;
    }
    let t = lights[lo];
    let width = t.normal.w - below;
    var x = 0.5;
    if width > 0.0 {
        x = clamp((u.x - below) / width, 0.0, 1.0);
    }
    return EmitterPoint(triangle_point(t.position.xyz, t.direction.xyz, t.edge_v.xyz, vec2<f32>(x, u.y)), t.normal.xyz);
}

// Tracer::area_light_sample without the visibility: the shadow ray from `origin` to the point
// `target_point` of an area light (unit normal `light_n` on its emitting side), carrying
// radiance · cos_surface · cos_light / d² times the sample's share of the area.
fn area_light_shadow(origin: vec3<f32>, n: vec3<f32>, ng: vec3<f32>, target_point: vec3<f32>, light_n: vec3<f32>, radiance: vec3<f32>, per_sample: f32, pixel: u32) {
    let to_light = target_point - origin;
    let dist2 = dot3(to_light, to_light);
    if dist2 <= 0.0 {
        return;
    }
    let wi = to_light / sqrt(dist2);
    let cos_surface = dot3(n, wi);
    let cos_light = -dot3(light_n, wi);
    if cos_surface <= 0.0 || cos_light <= 0.0 || dot3(ng, wi) <= 0.0 {
        return;
    }
    emit_shadow(origin, pixel, to_light, 1.0 - 1e-4, (radiance * (cos_surface * cos_light / dist2)) * per_sample);
}

// Tracer::direct_light: shadow rays towards every light, each carrying its irradiance E_i.
fn direct_light(sp: SurfacePoint, view_dir: vec3<f32>, ray: Ray) {
    let n = face_forward(sp.shading_normal, view_dir);
    let ng = face_forward(sp.geometric_normal, view_dir);
    let origin = offset_origin(sp.position, ng, params.epsilon);
    var stream = camera_stream(params.seed_lo, params.seed_hi, ray.pixel, ray.sample, params.sampler);
    stream.dimension = ray.dimension;
    for (var l = 0u; l < params.light_count; l++) {
        let light = lights[l];
        switch light.kind {
            case 0u: {
                point_light(origin, n, light.position.xyz, light.color.xyz, ray.pixel);
            }
            case 1u: {
                let to_point = normalize_or(sp.position - light.position.xyz, vec3<f32>(0.0));
                let cos = dot3(to_point, light.direction.xyz);
                let falloff = smoothstep_cpu(light.cos_outer, light.cos_inner, cos);
                if falloff > 0.0 {
                    point_light(origin, n, light.position.xyz, light.color.xyz * falloff / (4.0 * PI), ray.pixel);
                }
            }
            case 2u: {
                // A sun's disk (cos_outer < 1): a direction uniform in its cone, weighted so that
                // a surface facing it gets the irradiance.
                var wi = light.direction.xyz;
                var scale = 1.0;
                if light.cos_outer < 1.0 {
                    let jx = next_f32(&stream);
                    wi = cone_direction(wi, light.cos_outer, vec2<f32>(jx, next_f32(&stream)));
                    scale = 2.0 / (1.0 + light.cos_outer);
                }
                let cos = dot3(n, wi);
                if cos > 0.0 && dot3(ng, wi) > 0.0 {
                    emit_shadow(origin, ray.pixel, wi, f32_infinity(), light.color.xyz * (scale * cos));
                }
            }
            case LIGHT_ENVIRONMENT: {
                // Directions chosen by the map's luminance: L cos / pdf each.
                let count = max(light.samples, 1u);
                let m = env_map_of(light);
                for (var s = 0u; s < count; s++) {
                    let jx = next_f32(&stream);
                    let u = stratified_sample(s, count, vec2<f32>(jx, next_f32(&stream)));
                    let e = env_sample(m, u);
                    if e.pdf <= 0.0 {
                        continue;
                    }
                    let wi = env_to_world(light, e.dir);
                    let cos = dot3(n, wi);
                    if cos > 0.0 && dot3(ng, wi) > 0.0 {
                        let radiance = env_lookup(m, e.dir) * light.color.xyz;
                        emit_shadow(origin, ray.pixel, wi, f32_infinity(), radiance * (cos / e.pdf) / f32(count));
                    }
                }
            }
            case LIGHT_MESH: {
                let count = max(light.samples, 1u);
                let per_sample = light.normal.w / f32(count);
                for (var s = 0u; s < count; s++) {
                    let jx = next_f32(&stream);
                    let u = stratified_sample(s, count, vec2<f32>(jx, next_f32(&stream)));
                    let e = mesh_light_point(light, u);
                    // Just in front of the emitter, which is geometry.
                    let target_point = e.point + e.normal * params.epsilon;
                    area_light_shadow(origin, n, ng, target_point, e.normal, light.color.xyz, per_sample, ray.pixel);
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
                    area_light_shadow(origin, n, ng, target_point, light.normal.xyz, light.color.xyz, per_sample, ray.pixel);
                }
            }
        }
    }
}

// A camera sample's first hit (`hit` 1) or miss (everything 0).
fn record_first_hit(hit: f32, albedo: vec3<f32>, sp: SurfacePoint) {
    if params.bounce == 0u {
        // Camera slot i of the pass (render::plan's layout; the host maps slots to pixels).
        first_hits[node_index] = FirstHit(albedo, hit, sp.shading_normal, 0u,
            sp.geometric_normal, 0u, sp.position, 0u);
    }
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
    let local = gid.x + gid.y * groups.x * 64u;
    let i = params.ray_offset + local;
    if i >= params.ray_count {
        return;
    }
    node_index = i;
    shadow_base = local;
    shadow_used = 0u;
    for (var k = 0u; k < params.shadows_per_hit; k++) {
        shadow_flags[shadow_slot(local, k)] = 0u;
    }
    child_flags[2u * i] = 0u;
    child_flags[2u * i + 1u] = 0u;
    diffuse_points[i] = ShadingPoint(vec3<f32>(0.0), NONE, vec3<f32>(0.0), NONE);
    let ray = rays[i];
    let none = SurfacePoint(vec3<f32>(0.0), vec3<f32>(0.0), vec3<f32>(0.0), vec2<f32>(0.0), 0u);
    if i >= level_count[0] || ray.pixel == NONE {
        // No ray (room past the level's rays, padding, or outside a crop): nothing seen, for a
        // pixel resolve may read.
        record_first_hit(0.0, vec3<f32>(0.0), none);
        write_node(NODE_LEAF, vec3<f32>(0.0), vec3<f32>(0.0), 0.0);
        return;
    }
    let hit = hits[i];
    if hit.instance == NONE {
        // A ray that leaves the scene sees the environment light, if there is one.
        var seen = vec3<f32>(0.0);
        for (var l = 0u; l < params.light_count; l++) {
            if lights[l].kind == LIGHT_ENVIRONMENT {
                seen += env_radiance(lights[l], normalize3(ray.dir));
            }
        }
        record_first_hit(0.0, vec3<f32>(0.0), none);
        write_node(NODE_LEAF, seen, vec3<f32>(0.0), 0.0);
        return;
    }
    let sp = surface_point(ray.origin, ray.dir, hit);
    let material = materials[sp.material];
    let dir = normalize3(ray.dir);
    record_first_hit(1.0, albedo_of(material, sp), sp);
    switch material.kind {
        case 3u: {
            var emitted = vec3<f32>(0.0);
            if dot3(dir, sp.geometric_normal) < 0.0 {
                emitted = material.color.xyz;
            }
            write_node(NODE_LEAF, emitted, vec3<f32>(0.0), 0.0);
        }
        case 0u: {
            write_node(NODE_DIFFUSE, vec3<f32>(0.0), albedo_of(material, sp) * FRAC_1_PI, 0.0);
            diffuse_points[i] = ShadingPoint(sp.position, ray.pixel, face_forward(sp.shading_normal, dir), i);
            direct_light(sp, dir, ray);
        }
        case 1u, 4u: {
            if params.bounce >= params.max_depth {
                write_node(NODE_LEAF, vec3<f32>(0.0), vec3<f32>(0.0), 0.0);
                return;
            }
            let n = face_forward(sp.shading_normal, dir);
            let ng = face_forward(sp.geometric_normal, dir);
            write_node(NODE_ONE_CHILD, vec3<f32>(0.0), specular_reflectance(material, -dot3(dir, n)), 0.0);
            emit_child(ray, 0u, offset_origin(sp.position, ng, params.epsilon), reflect_dir(dir, n));
        }
        default: {
            if params.bounce >= params.max_depth {
                write_node(NODE_LEAF, vec3<f32>(0.0), vec3<f32>(0.0), 0.0);
                return;
            }
            let split = dielectric_split(dir, sp.shading_normal, sp.geometric_normal, material.ior, material.flags);
            let ng_out = face_forward(sp.geometric_normal, dir);
            let reflects = split.fresnel > 0.0;
            let refracted_weight = (1.0 - split.fresnel) * material.color.xyz;
            if reflects && split.has_refracted {
                write_node(NODE_TWO_CHILDREN, vec3<f32>(0.0), material.color.xyz, split.fresnel);
            } else if reflects {
                write_node(NODE_ONE_CHILD, vec3<f32>(0.0), vec3<f32>(split.fresnel), 0.0);
            } else if split.has_refracted {
                write_node(NODE_ONE_CHILD, vec3<f32>(0.0), refracted_weight, 0.0);
            } else {
                write_node(NODE_LEAF, vec3<f32>(0.0), vec3<f32>(0.0), 0.0);
            }
            if reflects {
                emit_child(ray, 0u, offset_origin(sp.position, ng_out, params.epsilon), split.reflected);
            }
            if split.has_refracted {
                emit_child(ray, 1u, offset_origin(sp.position, -ng_out, params.epsilon), split.refracted);
            }
        }
    }
}
