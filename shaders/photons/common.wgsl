// Photon tracing shared by the kernels of shaders/photons/: twins of src/render/photons.rs
// (emitters, emission, sampling helpers) and src/cpu/photons.rs (interact), same random
// dimensions: 4 at emission, 3 per surface interaction.
//!include "shared/scene.wgsl"
//!include "shared/rng.wgsl"
//!include "shared/shading.wgsl"
//!include "shared/plastic.wgsl"
//!include "shared/photon_types.wgsl"

const EMITTER_POINT: u32 = 0u;
const EMITTER_SPOT: u32 = 1u;
const EMITTER_DIRECTIONAL: u32 = 2u;
const EMITTER_QUAD: u32 = 3u;
const EMITTER_MESH: u32 = 4u;
const EMITTER_TRIANGLE: u32 = 5u;
const EMITTER_ENVIRONMENT: u32 = 6u;
const EMITTER_SPHERE: u32 = 7u;
const PHOTON_BOUNCES_MASK: u32 = 0xffu;
const PHOTON_SPECULAR_PATH: u32 = 256u;
const PASS_GLOBAL: u32 = 0u;
const PASS_CAUSTIC: u32 = 1u;
const PI: f32 = 3.14159265358979;

// render::photons::cosine_direction.
fn cosine_direction(n: vec3<f32>, u: vec2<f32>) -> vec3<f32> {
    let d = concentric_disk(u);
    let z = sqrt(max(1.0 - d.x * d.x - d.y * d.y, 0.0));
    return orthonormal_basis_t(n) * d.x + orthonormal_basis_b(n) * d.y + n * z;
}

// render::photons::spot_falloff.
fn spot_falloff(cos_outer: f32, cos_inner: f32, c: f32) -> f32 {
    if cos_inner <= cos_outer {
        return select(0.0, 1.0, c >= cos_outer);
    }
    let t = clamp((c - cos_outer) / (cos_inner - cos_outer), 0.0, 1.0);
    return t * t * (3.0 - 2.0 * t);
}

// cpu::photons::survival_probability.
fn survival_probability(reflectance: vec3<f32>, power: vec3<f32>) -> f32 {
    let max_in = max(max(power.x, power.y), power.z);
    if !(max_in > 0.0) || !is_finite_f32(max_in) {
        return 0.0;
    }
    let out = reflectance * power;
    return clamp(max(max(out.x, out.y), out.z) / max_in, 0.0, 1.0);
}

// cosine_bounce: a cosine-distributed direction about the shading normal turned towards the
// photon (xyz), w 0 when it goes below the geometric surface.
fn cosine_bounce(dir: vec3<f32>, shading_normal: vec3<f32>, geometric_normal: vec3<f32>, u: vec2<f32>) -> vec4<f32> {
    let n = face_forward(shading_normal, dir);
    let ng = face_forward(geometric_normal, dir);
    let next = cosine_direction(n, u);
    return vec4<f32>(next, select(0.0, 1.0, dot3(next, ng) > 0.0));
}

struct Interaction {
    store: bool,
    next: bool,
    transmitted: bool,
    specular: bool,
    dir: vec3<f32>,
    power: vec3<f32>,
}

// cpu::photons::interact, with the material record's kind and the looked-up albedo.
fn interact(pass_kind: u32, m: Material, albedo: vec3<f32>, dir: vec3<f32>, power: vec3<f32>, shading_normal: vec3<f32>, geometric_normal: vec3<f32>, specular_path: bool, bounces: u32, can_continue: bool, stream: ptr<function, SampleStream>) -> Interaction {
    let u = next_f32(stream);
    let ux = next_f32(stream);
    let u_dir = vec2<f32>(ux, next_f32(stream));
    var out = Interaction(false, false, false, false, vec3<f32>(0.0), vec3<f32>(0.0));
    if m.kind == 0u {
        out.store = pass_kind == PASS_GLOBAL || (specular_path && bounces > 0u);
        if pass_kind == PASS_CAUSTIC || !can_continue {
            return out;
        }
        let p = survival_probability(albedo, power);
        if u >= p {
            return out;
        }
        let next = cosine_bounce(dir, shading_normal, geometric_normal, u_dir);
        if next.w == 0.0 {
            return out;
        }
        out.next = true;
        out.dir = next.xyz;
        out.power = power * albedo / p;
        return out;
    }
    if m.kind == MATERIAL_PLASTIC {
        out.store = pass_kind == PASS_GLOBAL || (specular_path && bounces > 0u);
        if !can_continue {
            return out;
        }
        let h = plastic_hit(m, albedo, dir, shading_normal, geometric_normal);
        if !h.valid {
            return out;
        }
        // The coat with the probability of its Fresnel term (a specular step), else the base
        // (a diffuse one, which ends a caustic photon's path).
        let p_coat = h.fresnel_out;
        if u < p_coat {
            let s = plastic_sample_coat(m, h, u_dir);
            if !s.valid {
                return out;
            }
            out.next = true;
            out.specular = true;
            out.dir = s.dir;
            out.power = power * s.weight / p_coat;
            return out;
        }
        if pass_kind == PASS_CAUSTIC {
            return out;
        }
        let next = cosine_bounce(dir, shading_normal, geometric_normal, u_dir);
        if next.w == 0.0 {
            return out;
        }
        let weight = plastic_base_bounce_weight(m, h, next.xyz);
        let p = survival_probability(weight, power);
        if (u - p_coat) / (1.0 - p_coat) >= p {
            return out;
        }
        out.next = true;
        out.dir = next.xyz;
        out.power = power * weight / p;
        return out;
    }
    if material_alpha(m) > 0.0 {
        // Glossy: a caustic path goes on through it, as through a mirror.
        out.specular = true;
        if !can_continue {
            return out;
        }
        let hit = rough_hit(dir, shading_normal, geometric_normal);
        if !hit.valid {
            return out;
        }
        let s = rough_sample(m, hit, u, u_dir);
        if !s.valid {
            return out;
        }
        if m.kind == MATERIAL_CONDUCTOR {
            // Russian roulette on the Fresnel weight, as for a smooth conductor.
            let p = survival_probability(s.weight, power);
            if u >= p {
                return out;
            }
            out.power = power * s.weight / p;
        } else {
            out.power = power * s.weight;
        }
        out.next = true;
        out.transmitted = s.transmitted;
        out.dir = s.dir;
        return out;
    }
    if m.kind == MATERIAL_MIRROR || m.kind == MATERIAL_CONDUCTOR {
        out.specular = true;
        if !can_continue {
            return out;
        }
        let n = face_forward(shading_normal, dir);
        let reflectance = specular_reflectance(m, -dot3(dir, n));
        let p = survival_probability(reflectance, power);
        if u >= p {
            return out;
        }
        out.next = true;
        out.dir = reflect_dir(dir, n);
        out.power = power * reflectance / p;
        return out;
    }
    if m.kind == 2u {
        out.specular = true;
        if !can_continue {
            return out;
        }
        let split = dielectric_split(dir, shading_normal, geometric_normal, m.ior, m.flags);
        if u < split.fresnel {
            out.next = true;
            out.dir = split.reflected;
            out.power = power;
            return out;
        }
        if split.has_refracted {
            out.next = true;
            out.transmitted = true;
            out.dir = split.refracted;
            out.power = power * m.color.xyz;
        }
        return out;
    }
    return out;
}
