// One bounce of the Whitted shade trees as a wavefront (paper 003 section 5.1.2): for each ray of
// the level (a chunk of it from params.ray_offset), with its hit from trace.wgsl, it writes the
// ray's shade-tree node: what the ray sees directly (a quad light from its front, an emitter,
// the environment light when it leaves the scene) as a leaf; at a diffuse hit albedo/pi, and one shadow ray per light (and per quad-light sample)
// into the ray's own shadow slots, flagged for compaction; at a mirror or dielectric hit the
// child weights, and the child rays (reflected, refracted) as candidates 2i and 2i + 1, flagged
// for the scan that places them in the next level (spawn.wgsl); at a rough conductor or
// dielectric shadow rays carrying f cos (weighed by multiple importance sampling; rough glass's
// also towards lights beyond it, leaving from its far side) and one child its BSDF samples,
// reflected or refracted, whose density rides in the child ray's _pad0 so that the light it
// finds is weighed too; at a plastic hit a diffuse node, its shadow rays carrying the base's and the
// coat's f cos (flagged to be added unscaled), and one child, the coat's reflection, whose weight
// is the node's `fresnel`. Camera rays (bounce 0) also record the first-hit AOV values. The
// rough and plastic code is compiled only for scenes with such materials (GLOSSY_MATERIALS): it
// costs every shade kernel about 15% of its time otherwise (docs/performance.md).
// Twin of Tracer::radiance and Tracer::direct_light in src/cpu/whitted.rs.
//!include "shared/shading.wgsl"
//!include "shared/plastic.wgsl"
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
// The lobe that light samples are weighed by: LOBE_DIFFUSE (shadow rays carry irradiance, which
// direct.wgsl scales by the node's albedo/pi), LOBE_ROUGH or LOBE_PLASTIC (they carry f cos,
// and a plastic's are flagged to be added as they are: shadow_unscaled).
const LOBE_DIFFUSE: u32 = 0u;
const LOBE_ROUGH: u32 = 1u;
const LOBE_PLASTIC: u32 = 2u;
var<private> lobe_kind: u32;
var<private> lobe_material: Material;
var<private> lobe_hit: RoughHit;
var<private> lobe_plastic: PlasticHit;
var<private> shadow_unscaled: u32;
// At rough glass (shade_rough), shadow rays that leave through the surface (against
// shadow_facing, the geometric normal on the viewer's side) start at shadow_far_origin.
var<private> shadow_transmits: bool;
var<private> shadow_facing: vec3<f32>;
var<private> shadow_far_origin: vec3<f32>;

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

// The shadow ray from `origin` along `dir` (to its end at t_max just under 1, or a direction to
// infinity), leaving from the far side of rough glass when it goes through it
// (LightSample::origin_toward; a segment keeps its end).
fn emit_shadow(origin: vec3<f32>, pixel: u32, dir: vec3<f32>, t_max: f32, contribution: vec3<f32>) {
    if shadow_used >= params.shadows_per_hit {
        return;
    }
    var start = origin;
    var along = dir;
    if shadow_transmits && dot3(dir, shadow_facing) < 0.0 {
        start = shadow_far_origin;
        if t_max <= 1.0 {
            along = origin + dir - start;
        }
    }
    let slot = shadow_slot(shadow_base, shadow_used);
    shadow_used += 1u;
    shadow_rays[slot] = ShadowRay(start, node_index, along, t_max, contribution, shadow_unscaled);
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

// LightSample::response: what light from unit direction wi is multiplied by, the cosine at a
// diffuse point, f cos at a rough one times the power heuristic of the light's counted density
// light_pdf (negative: a light rays cannot meet) against the lobe's. `geometric`: whether the
// geometric normal is tested too (all but point and spot lights): wi must lie on the shading
// normal's side of it. Only rough glass takes light from below the normals, through its
// transmission lobe.
fn light_response(n: vec3<f32>, ng: vec3<f32>, wi: vec3<f32>, light_pdf: f32, geometric: bool) -> vec3<f32> {
    let cos = dot3(n, wi);
    if geometric {
        let side = dot3(ng, wi);
        if side == 0.0 || (side > 0.0) != (cos > 0.0) {
            return vec3<f32>(0.0);
        }
    }
    //!if GLOSSY_MATERIALS
    if lobe_kind == LOBE_ROUGH && cos < 0.0 {
        let f = rough_eval_transmission(lobe_material, lobe_hit, wi);
        if light_pdf < 0.0 {
            return f.xyz;
        }
        return f.xyz * power_heuristic(light_pdf, f.w);
    }
    //!endif
    if cos <= 0.0 {
        return vec3<f32>(0.0);
    }
    //!if GLOSSY_MATERIALS
    if lobe_kind == LOBE_ROUGH {
        let f = rough_eval_reflection(lobe_material, lobe_hit, wi);
        if light_pdf < 0.0 {
            return f.xyz;
        }
        return f.xyz * power_heuristic(light_pdf, f.w);
    }
    if lobe_kind == LOBE_PLASTIC {
        // The base's light only shadow rays find; a smooth coat's none.
        let f = plastic_eval(lobe_material, lobe_plastic, wi);
        if light_pdf < 0.0 || !(f.coat_pdf > 0.0) {
            return f.base + f.coat;
        }
        return f.base + f.coat * power_heuristic(light_pdf, f.coat_pdf);
    }
    //!endif
    return vec3<f32>(cos);
}

fn is_zero3(v: vec3<f32>) -> bool {
    return v.x == 0.0 && v.y == 0.0 && v.z == 0.0;
}

// Tracer::point_light without the visibility: emits the shadow ray with its contribution.
fn point_light(origin: vec3<f32>, n: vec3<f32>, ng: vec3<f32>, position: vec3<f32>, intensity: vec3<f32>, pixel: u32) {
    let to_light = position - origin;
    let dist2 = dot3(to_light, to_light);
    if dist2 <= 0.0 {
        return;
    }
    let response = light_response(n, ng, to_light / sqrt(dist2), -1.0, false);
    if is_zero3(response) {
        return;
    }
    emit_shadow(origin, pixel, to_light, 1.0 - 1e-4, intensity * response / dist2);
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

// AreaSampling::counted_pdf: the density with which `count` shadow rays over an area light of
// `area` choose a direction to a point at `distance` whose cosine with the light's normal is
// cos_light, times the count.
fn area_counted_pdf(area: f32, count: u32, distance: f32, cos_light: f32) -> f32 {
    if !(cos_light > 0.0 && area > 0.0) {
        return 0.0;
    }
    return f32(count) * distance * distance / (cos_light * area);
}

// Tracer::area_light_sample without the visibility: the shadow ray from `origin` to the point
// `target_point` of an area light (unit normal `light_n` on its emitting side; `count` shadow
// rays over its `area`), carrying radiance · response · cos_light / d² times the sample's share
// of the area.
fn area_light_shadow(origin: vec3<f32>, n: vec3<f32>, ng: vec3<f32>, target_point: vec3<f32>, light_n: vec3<f32>, radiance: vec3<f32>, area: f32, count: u32, pixel: u32) {
    let to_light = target_point - origin;
    let dist2 = dot3(to_light, to_light);
    if dist2 <= 0.0 {
        return;
    }
    let distance = sqrt(dist2);
    let wi = to_light / distance;
    let cos_light = -dot3(light_n, wi);
    if cos_light <= 0.0 {
        return;
    }
    let response = light_response(n, ng, wi, area_counted_pdf(area, count, distance, cos_light), true);
    if is_zero3(response) {
        return;
    }
    emit_shadow(origin, pixel, to_light, 1.0 - 1e-4, radiance * response * (cos_light / dist2) * (area / f32(count)));
}

// SphereLight::cone: from `origin` outside sphere light `light` (position = centre, w =
// radius), the unit axis towards the centre, 1 − cos of the cone's half-angle (without
// cancellation for small spheres; 0 from inside or on the sphere) and sin² of it.
struct SphereCone {
    axis: vec3<f32>,
    one_minus_cos: f32,
    sin2_max: f32,
}

fn sphere_cone(light: Light, origin: vec3<f32>) -> SphereCone {
    let to_centre = light.position.xyz - origin;
    let d2 = dot3(to_centre, to_centre);
    let r2 = light.position.w * light.position.w;
    if !(d2 > r2) {
        return SphereCone(vec3<f32>(0.0, 0.0, 1.0), 0.0, 0.0);
    }
    let sin2_max = r2 / d2;
    let cos_max = sqrt(max(1.0 - sin2_max, 0.0));
    return SphereCone(to_centre / sqrt(d2), sin2_max / (1.0 + cos_max), sin2_max);
}

// SphereLight::pdf: the density per unit solid angle of one shadow ray's direction from
// `origin`, uniform over the cone; 0 from inside.
fn sphere_light_pdf(light: Light, origin: vec3<f32>) -> f32 {
    let cone = sphere_cone(light, origin);
    if !(cone.one_minus_cos > 0.0) {
        return 0.0;
    }
    return 1.0 / (2.0 * PI * cone.one_minus_cos);
}

// render::lights::sample_sphere_light: a point on the near side of sphere light `light` seen
// from `origin` in a direction uniform over the cone it covers (pdf 0: none, from inside).
struct SphereLightSample {
    point: vec3<f32>,
    normal: vec3<f32>,
    pdf: f32,
}

fn sphere_light_point(light: Light, origin: vec3<f32>, u: vec2<f32>) -> SphereLightSample {
    let cone = sphere_cone(light, origin);
    if !(cone.one_minus_cos > 0.0) {
        return SphereLightSample(vec3<f32>(0.0), vec3<f32>(0.0, 0.0, 1.0), 0.0);
    }
    let one_minus_cos = u.x * cone.one_minus_cos;
    let cos_theta = 1.0 - one_minus_cos;
    let sin2 = max(one_minus_cos * (2.0 - one_minus_cos), 0.0);
    let ratio = min(sin2 / cone.sin2_max, 1.0);
    let cos_alpha = clamp(sin2 / sqrt(cone.sin2_max) + cos_theta * sqrt(1.0 - ratio), -1.0, 1.0);
    let sin_alpha = sqrt(max(1.0 - cos_alpha * cos_alpha, 0.0));
    let phi = 2.0 * PI * u.y;
    let t = orthonormal_basis_t(cone.axis);
    let b = orthonormal_basis_b(cone.axis);
    let normal = -cone.axis * cos_alpha + (t * cos(phi) + b * sin(phi)) * sin_alpha;
    return SphereLightSample(light.position.xyz + normal * light.position.w, normal, 1.0 / (2.0 * PI * cone.one_minus_cos));
}

// Tracer::sphere_light_sample without the visibility: the shadow ray from `origin` to just in
// front of the sphere light's point `s`, carrying radiance · response / pdf over `count` rays.
fn sphere_light_shadow(origin: vec3<f32>, n: vec3<f32>, ng: vec3<f32>, s: SphereLightSample, radiance: vec3<f32>, count: u32, pixel: u32) {
    let to_light = s.point + s.normal * params.epsilon - origin;
    let wi = normalize_or(to_light, vec3<f32>(0.0));
    if -dot3(s.normal, wi) <= 0.0 {
        return;
    }
    let response = light_response(n, ng, wi, f32(count) * s.pdf, true);
    if is_zero3(response) {
        return;
    }
    emit_shadow(origin, pixel, to_light, 1.0 - 1e-4, radiance * response / (s.pdf * f32(count)));
}

// Tracer::direct_light: shadow rays towards every light, each carrying its irradiance E_i at a
// diffuse point, or L f cos / pdf at a rough one (lobe_rough), from the ray's stream at
// `dimension`; returns the stream's next dimension.
fn direct_light(sp: SurfacePoint, view_dir: vec3<f32>, ray: Ray, dimension: u32) -> u32 {
    let n = face_forward(sp.shading_normal, view_dir);
    let ng = face_forward(sp.geometric_normal, view_dir);
    let origin = offset_origin(sp.position, ng, params.epsilon);
    var stream = camera_stream(params.seed_lo, params.seed_hi, ray.pixel, ray.sample, params.sampler);
    stream.dimension = dimension;
    for (var l = 0u; l < params.light_count; l++) {
        let light = lights[l];
        switch light.kind {
            case 0u: {
                point_light(origin, n, ng, light.position.xyz, light.color.xyz, ray.pixel);
            }
            case 1u: {
                let to_point = normalize_or(sp.position - light.position.xyz, vec3<f32>(0.0));
                let cos = dot3(to_point, light.direction.xyz);
                let falloff = smoothstep_cpu(light.cos_outer, light.cos_inner, cos);
                if falloff > 0.0 {
                    point_light(origin, n, ng, light.position.xyz, light.color.xyz * falloff / (4.0 * PI), ray.pixel);
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
                let response = light_response(n, ng, wi, -1.0, true);
                if !is_zero3(response) {
                    emit_shadow(origin, ray.pixel, wi, f32_infinity(), light.color.xyz * scale * response);
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
                    let response = light_response(n, ng, wi, f32(count) * e.pdf, true);
                    if !is_zero3(response) {
                        let radiance = env_lookup(m, e.dir) * light.color.xyz;
                        emit_shadow(origin, ray.pixel, wi, f32_infinity(), radiance * response / e.pdf / f32(count));
                    }
                }
            }
            case LIGHT_MESH: {
                let count = max(light.samples, 1u);
                for (var s = 0u; s < count; s++) {
                    let jx = next_f32(&stream);
                    let u = stratified_sample(s, count, vec2<f32>(jx, next_f32(&stream)));
                    let e = mesh_light_point(light, u);
                    // Just in front of the emitter, which is geometry.
                    let target_point = e.point + e.normal * params.epsilon;
                    area_light_shadow(origin, n, ng, target_point, e.normal, light.color.xyz, light.normal.w, count, ray.pixel);
                }
            }
            case LIGHT_SPHERE: {
                let count = max(light.samples, 1u);
                for (var s = 0u; s < count; s++) {
                    let jx = next_f32(&stream);
                    let u = stratified_sample(s, count, vec2<f32>(jx, next_f32(&stream)));
                    let e = sphere_light_point(light, origin, u);
                    if e.pdf > 0.0 {
                        sphere_light_shadow(origin, n, ng, e, light.color.xyz, count, ray.pixel);
                    }
                }
            }
            default: {
                let area = light.normal.w;
                if area <= 0.0 {
                    continue;
                }
                let count = max(light.samples, 1u);
                for (var s = 0u; s < count; s++) {
                    let jx = next_f32(&stream);
                    let uv = stratified_sample(s, count, vec2<f32>(jx, next_f32(&stream)));
                    let target_point = light.position.xyz + light.direction.xyz * uv.x + light.edge_v.xyz * uv.y;
                    area_light_shadow(origin, n, ng, target_point, light.normal.xyz, light.color.xyz, area, count, ray.pixel);
                }
            }
        }
    }
    return stream.dimension;
}

// The density with which the glossy surface that sampled `ray` chose it (0 for a camera ray or
// one a specular surface sent): the child ray's _pad0.
fn sampled_pdf(ray: Ray) -> f32 {
    return bitcast<f32>(ray._pad0);
}

// The Plastic arm of Tracer::radiance_sampled: a diffuse node of the base's albedo-equivalent
// (for the photon map's estimates) whose shadow rays carry the base's and the coat's f cos,
// with the coat's reflection as its child, weighted by the node's `fresnel`.
fn shade_plastic(ray: Ray, sp: SurfacePoint, material: Material, dir: vec3<f32>) {
    let h = plastic_hit(material, albedo_of(material, sp), dir, sp.shading_normal, sp.geometric_normal);
    if !h.valid {
        write_node(NODE_LEAF, vec3<f32>(0.0), vec3<f32>(0.0), 0.0);
        return;
    }
    diffuse_points[node_index] = ShadingPoint(sp.position, ray.pixel, face_forward(sp.shading_normal, dir), node_index);
    var stream = camera_stream(params.seed_lo, params.seed_hi, ray.pixel, ray.sample, params.sampler);
    stream.dimension = ray.dimension;
    _ = next_f32(&stream);
    let ux = next_f32(&stream);
    let s = plastic_sample_coat(material, h, vec2<f32>(ux, next_f32(&stream)));
    lobe_kind = LOBE_PLASTIC;
    lobe_material = material;
    lobe_plastic = h;
    shadow_unscaled = 1u;
    let dimension = direct_light(sp, dir, ray, stream.dimension);
    lobe_kind = LOBE_DIFFUSE;
    shadow_unscaled = 0u;
    let base = plastic_base_albedo(material, h) * FRAC_1_PI;
    if params.bounce >= params.max_depth || !s.valid {
        write_node(NODE_DIFFUSE, vec3<f32>(0.0), base, 0.0);
        return;
    }
    write_node(NODE_DIFFUSE, vec3<f32>(0.0), base, s.weight.x);
    let slot = 2u * node_index;
    child_candidates[slot] = Ray(offset_origin(sp.position, h.ng, params.epsilon), ray.pixel, s.dir, ray.sample, dimension, bitcast<u32>(s.pdf), 0u, 0u);
    child_flags[slot] = 1u;
}

// The Conductor / Dielectric arm of Tracer::radiance_sampled for a rough material: the lobe's
// direction first, then the shadow rays, then the child's numbers.
fn shade_rough(ray: Ray, sp: SurfacePoint, material: Material, dir: vec3<f32>) {
    let hit = rough_hit(dir, sp.shading_normal, sp.geometric_normal);
    if params.bounce >= params.max_depth || !hit.valid {
        write_node(NODE_LEAF, vec3<f32>(0.0), vec3<f32>(0.0), 0.0);
        return;
    }
    var stream = camera_stream(params.seed_lo, params.seed_hi, ray.pixel, ray.sample, params.sampler);
    stream.dimension = ray.dimension;
    let u_branch = next_f32(&stream);
    let ux = next_f32(&stream);
    let s = rough_sample(material, hit, u_branch, vec2<f32>(ux, next_f32(&stream)));
    lobe_kind = LOBE_ROUGH;
    lobe_material = material;
    lobe_hit = hit;
    shadow_transmits = material.kind == MATERIAL_DIELECTRIC;
    shadow_facing = hit.facing;
    shadow_far_origin = offset_origin(sp.position, -hit.facing, params.epsilon);
    let dimension = direct_light(sp, dir, ray, stream.dimension);
    lobe_kind = LOBE_DIFFUSE;
    shadow_transmits = false;
    if !s.valid {
        write_node(NODE_LEAF, vec3<f32>(0.0), vec3<f32>(0.0), 0.0);
        return;
    }
    write_node(NODE_ONE_CHILD, vec3<f32>(0.0), s.weight, 0.0);
    var side = hit.facing;
    if s.transmitted {
        side = -side;
    }
    let slot = 2u * node_index;
    child_candidates[slot] = Ray(offset_origin(sp.position, side, params.epsilon), ray.pixel, s.dir, ray.sample, dimension, bitcast<u32>(s.pdf), 0u, 0u);
    child_flags[slot] = 1u;
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
        //!if GLOSSY_MATERIALS
        let bsdf_pdf = sampled_pdf(ray);
        //!endif
        for (var l = 0u; l < params.light_count; l++) {
            let light = lights[l];
            if light.kind == LIGHT_ENVIRONMENT {
                let d = normalize3(ray.dir);
                var radiance = env_radiance(light, d);
                //!if GLOSSY_MATERIALS
                if bsdf_pdf > 0.0 {
                    let light_pdf = f32(max(light.samples, 1u)) * env_pdf(env_map_of(light), env_to_map(light, d));
                    radiance *= power_heuristic(bsdf_pdf, light_pdf);
                }
                //!endif
                seen += radiance;
            }
        }
        record_first_hit(0.0, vec3<f32>(0.0), none);
        write_node(NODE_LEAF, seen, vec3<f32>(0.0), 0.0);
        return;
    }
    let sp = surface_point(ray.origin, ray.dir, hit);
    let material = material_at(materials[sp.material], sp);
    let dir = normalize3(ray.dir);
    record_first_hit(1.0, albedo_of(material, sp), sp);
    switch material.kind {
        case 3u: {
            var emitted = vec3<f32>(0.0);
            let cos_light = -dot3(dir, sp.geometric_normal);
            if cos_light > 0.0 {
                emitted = material.color.xyz;
                //!if GLOSSY_MATERIALS
                let bsdf_pdf = sampled_pdf(ray);
                let light_index = instances[hit.instance].light;
                if bsdf_pdf > 0.0 && light_index != NONE {
                    let light = lights[light_index];
                    let distance = hit.t * sqrt(dot3(ray.dir, ray.dir));
                    var light_pdf = area_counted_pdf(light.normal.w, max(light.samples, 1u), distance, cos_light);
                    if light.kind == LIGHT_SPHERE {
                        light_pdf = f32(max(light.samples, 1u)) * sphere_light_pdf(light, ray.origin);
                    }
                    emitted *= power_heuristic(bsdf_pdf, light_pdf);
                }
                //!endif
            }
            write_node(NODE_LEAF, emitted, vec3<f32>(0.0), 0.0);
        }
        //!if GLOSSY_MATERIALS
        case MATERIAL_PLASTIC: {
            shade_plastic(ray, sp, material, dir);
        }
        //!endif
        case 0u: {
            write_node(NODE_DIFFUSE, vec3<f32>(0.0), albedo_of(material, sp) * FRAC_1_PI, 0.0);
            diffuse_points[i] = ShadingPoint(sp.position, ray.pixel, face_forward(sp.shading_normal, dir), i);
            direct_light(sp, dir, ray, ray.dimension);
        }
        case 1u, 4u: {
            //!if GLOSSY_MATERIALS
            if material_alpha(material) > 0.0 {
                shade_rough(ray, sp, material, dir);
                return;
            }
            //!endif
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
            //!if GLOSSY_MATERIALS
            if material_alpha(material) > 0.0 {
                shade_rough(ray, sp, material, dir);
                return;
            }
            //!endif
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
