// Rough conductors and dielectrics: twin of src/cpu/rough.rs (RoughHit::new, sample,
// eval_reflection, eval_transmission, power_heuristic) over a material record whose eta.w holds the GGX width α
// (0 for a smooth material; gpu::upload writes MaterialKind::alpha).
//!include "shared/shading.wgsl"
//!include "shared/microfacet.wgsl"

// The GGX width of a rough conductor or dielectric, 0 for every other material.
fn material_alpha(m: Material) -> f32 {
    if m.kind == MATERIAL_CONDUCTOR || m.kind == MATERIAL_DIELECTRIC {
        return m.eta.w;
    }
    return 0.0;
}

// A rough surface met by a ray: the shading frame turned towards the viewer (t, b, n), the
// geometric normal on the viewer's side, the direction back to the viewer in that frame, and
// whether the ray arrives from outside. valid is false when the ray grazes the shading normal.
struct RoughHit {
    t: vec3<f32>,
    b: vec3<f32>,
    n: vec3<f32>,
    facing: vec3<f32>,
    wo: vec3<f32>,
    entering: bool,
    valid: bool,
}

// RoughHit::new.
fn rough_hit(dir: vec3<f32>, shading_normal: vec3<f32>, geometric_normal: vec3<f32>) -> RoughHit {
    let n = face_forward(shading_normal, dir);
    let t = orthonormal_basis_t(n);
    let b = orthonormal_basis_b(n);
    let wo = vec3<f32>(-dot3(dir, t), -dot3(dir, b), -dot3(dir, n));
    return RoughHit(t, b, n, face_forward(geometric_normal, dir), wo, dot3(dir, geometric_normal) < 0.0, wo.z > 0.0);
}

fn rough_to_world(hit: RoughHit, v: vec3<f32>) -> vec3<f32> {
    return hit.t * v.x + hit.b * v.y + hit.n * v.z;
}

// RoughHit::dielectric_facet: how facet h (local, facing wo) splits the view ray.
fn rough_facet(m: Material, hit: RoughHit, h: vec3<f32>) -> DielectricSplit {
    var outward = h;
    if !hit.entering {
        outward = -h;
    }
    return dielectric_split(-hit.wo, outward, outward, m.ior, m.flags);
}

// RoughSample (valid false for None).
struct RoughSample {
    dir: vec3<f32>,
    pdf: f32,
    weight: vec3<f32>,
    transmitted: bool,
    valid: bool,
}

// RoughHit::visible_facet: a facet visible from wo and wo·h (valid false when rounding leaves
// it facing away).
struct VisibleFacet {
    h: vec3<f32>,
    c: f32,
    valid: bool,
}

fn rough_visible_facet(alpha: f32, wo: vec3<f32>, u: vec2<f32>) -> VisibleFacet {
    let h = ggx_sample_visible_normal(alpha, wo, u);
    let c = dot(wo, h);
    return VisibleFacet(h, c, c > 0.0);
}

// RoughHit::sample.
fn rough_sample(m: Material, hit: RoughHit, u_branch: f32, u: vec2<f32>) -> RoughSample {
    // A conductor's facets only reflect.
    if m.kind == MATERIAL_CONDUCTOR {
        return rough_sample_reflection(m, hit, u);
    }
    var out = RoughSample(vec3<f32>(0.0), 0.0, vec3<f32>(0.0), false, false);
    let alpha = m.eta.w;
    let wo = hit.wo;
    let facet = rough_visible_facet(alpha, wo, u);
    if !facet.valid {
        return out;
    }
    let h = facet.h;
    let c = facet.c;
    let normal_pdf = ggx_visible_normal_pdf(alpha, wo, h);
    var wi: vec3<f32>;
    var weight: vec3<f32>;
    var pdf: f32;
    var transmitted = false;
    let split = rough_facet(m, hit, h);
    if split.has_refracted && u_branch >= split.fresnel {
        var eta = 1.0 / m.ior;
        if hit.entering {
            eta = m.ior;
        }
        let t = split.refracted;
        let denom = c + eta * dot(t, h);
        let jacobian = eta * eta * abs(dot(t, h)) / (denom * denom);
        wi = t;
        weight = m.color.xyz;
        pdf = (1.0 - split.fresnel) * normal_pdf * jacobian;
        transmitted = true;
    } else {
        wi = split.reflected;
        weight = vec3<f32>(1.0);
        pdf = split.fresnel * normal_pdf / (4.0 * c);
    }
    if (wi.z > 0.0) == transmitted {
        return out;
    }
    let dir = rough_to_world(hit, wi);
    if (dot3(dir, hit.facing) > 0.0) == transmitted {
        return out;
    }
    let masking = ggx_g2(alpha, wo, wi) / ggx_g1(alpha, wo);
    return RoughSample(dir, pdf, weight * masking, transmitted, true);
}

// RoughHit::facet_fresnel: a conductor's Fresnel term times its tint, or a dielectric's (any
// other kind: a plastic's coat) reflectance, at facet h with c = wo·h.
fn rough_facet_fresnel(m: Material, hit: RoughHit, h: vec3<f32>, c: f32) -> vec3<f32> {
    if m.kind == MATERIAL_CONDUCTOR {
        return conductor_fresnel(c, m.eta.xyz, m.k.xyz) * m.color.xyz;
    }
    return vec3<f32>(rough_facet(m, hit, h).fresnel);
}

// RoughHit::reflection_lobe: f cos, the density of rough_sample_reflection, the facet's Fresnel.
struct RoughLobe {
    f_cos: vec3<f32>,
    pdf: f32,
    fresnel: vec3<f32>,
}

fn rough_reflection_lobe(m: Material, hit: RoughHit, wi_world: vec3<f32>) -> RoughLobe {
    let none = RoughLobe(vec3<f32>(0.0), 0.0, vec3<f32>(0.0));
    let alpha = m.eta.w;
    let wo = hit.wo;
    let wi = vec3<f32>(dot3(wi_world, hit.t), dot3(wi_world, hit.b), dot3(wi_world, hit.n));
    if !(wi.z > 0.0) {
        return none;
    }
    let h = normalize_or(wo + wi, vec3<f32>(0.0));
    let c = dot(wo, h);
    if !(c > 0.0) {
        return none;
    }
    let f = rough_facet_fresnel(m, hit, h, c);
    return RoughLobe(f * ggx_reflection_cos(alpha, wo, wi), ggx_reflection_pdf(alpha, wo, wi), f);
}

// RoughHit::eval_reflection: f cos (xyz) and the density (w) for unit world direction wi.
fn rough_eval_reflection(m: Material, hit: RoughHit, wi_world: vec3<f32>) -> vec4<f32> {
    let lobe = rough_reflection_lobe(m, hit, wi_world);
    if m.kind == MATERIAL_CONDUCTOR {
        return vec4<f32>(lobe.f_cos, lobe.pdf);
    }
    return vec4<f32>(lobe.f_cos, lobe.fresnel.x * lobe.pdf);
}

// RoughHit::eval_transmission: f cos (xyz) and the density (w) of the refraction into unit world
// direction wi beyond the surface; zeros for a conductor, on the viewer's side, or where no facet
// refracts the view into wi. The facet is the generalized half vector -(wo + eta wi).
fn rough_eval_transmission(m: Material, hit: RoughHit, wi_world: vec3<f32>) -> vec4<f32> {
    let none = vec4<f32>(0.0);
    if m.kind != MATERIAL_DIELECTRIC {
        return none;
    }
    let alpha = m.eta.w;
    let wo = hit.wo;
    let wi = vec3<f32>(dot3(wi_world, hit.t), dot3(wi_world, hit.b), dot3(wi_world, hit.n));
    if !(wi.z < 0.0) {
        return none;
    }
    var eta = 1.0 / m.ior;
    if hit.entering {
        eta = m.ior;
    }
    var h = -normalize_or(wo + eta * wi, vec3<f32>(0.0));
    if h.z < 0.0 {
        h = -h;
    }
    let c = dot(wo, h);
    let ci = dot(wi, h);
    // The facet must face the viewer and have the light behind it.
    if !(c > 0.0) || !(ci < 0.0) {
        return none;
    }
    let split = rough_facet(m, hit, h);
    if !split.has_refracted {
        return none;
    }
    let denom = c + eta * ci;
    let jacobian = eta * eta * abs(ci) / (denom * denom);
    let refracted = (1.0 - split.fresnel) * jacobian;
    let normal = c * ggx_d(alpha, h) / wo.z;
    let pdf = refracted * ggx_g1(alpha, wo) * normal;
    let f_cos = m.color.xyz * (refracted * ggx_g2(alpha, wo, wi) * normal);
    if !is_finite_f32(pdf) || !is_finite3(f_cos) {
        return none;
    }
    return vec4<f32>(f_cos, pdf);
}

// RoughHit::sample_reflection: the visible facet reflects the view, weight F G2 / G1.
fn rough_sample_reflection(m: Material, hit: RoughHit, u: vec2<f32>) -> RoughSample {
    var out = RoughSample(vec3<f32>(0.0), 0.0, vec3<f32>(0.0), false, false);
    let alpha = m.eta.w;
    let wo = hit.wo;
    let facet = rough_visible_facet(alpha, wo, u);
    if !facet.valid {
        return out;
    }
    let h = facet.h;
    let c = facet.c;
    let wi = ggx_reflect_about(wo, h);
    let dir = rough_to_world(hit, wi);
    if !(wi.z > 0.0) || !(dot3(dir, hit.facing) > 0.0) {
        return out;
    }
    let weight = rough_facet_fresnel(m, hit, h, c) * (ggx_g2(alpha, wo, wi) / ggx_g1(alpha, wo));
    return RoughSample(dir, ggx_visible_normal_pdf(alpha, wo, h) / (4.0 * c), weight, false, true);
}

// power_heuristic: a² / (a² + b²) for the strategy of density a against b, 0 when a is 0.
fn power_heuristic(a: f32, b: f32) -> f32 {
    if !(a > 0.0) {
        return 0.0;
    }
    let r = clamp(b, 0.0, 1e30) / min(a, 1e30);
    return 1.0 / (1.0 + r * r);
}
