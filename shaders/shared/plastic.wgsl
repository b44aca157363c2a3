// Plastic, a diffuse base under a dielectric coat: twin of src/cpu/plastic.rs over a material
// record of kind MATERIAL_PLASTIC (color: the base albedo; ior: the coat's index; eta.w: the
// coat's GGX width, 0 for a smooth coat; k.x: 1 / (η² (1 − F̄_inside)); k.y: 1 − F̄_outside).
//!include "shared/rough.wgsl"

// Plastic::fresnel: the smooth coat's reflectance for light arriving from outside at `cos`.
fn plastic_fresnel(m: Material, cos_in: f32) -> f32 {
    let eta = 1.0 / m.ior;
    let cos = clamp(cos_in, 0.0, 1.0);
    let sin2_t = eta * eta * max(1.0 - cos * cos, 0.0);
    if sin2_t >= 1.0 {
        return 1.0;
    }
    return exact_fresnel(cos, sqrt(1.0 - sin2_t), eta);
}

// PlasticHit (valid false for None); rough: the rough coat's frame when eta.w > 0.
struct PlasticHit {
    albedo: vec3<f32>,
    fresnel_out: f32,
    n: vec3<f32>,
    valid: bool,
    ng: vec3<f32>,
    dir: vec3<f32>,
    rough: RoughHit,
}

// PlasticHit::new, with the base albedo already looked up.
fn plastic_hit(m: Material, albedo: vec3<f32>, dir: vec3<f32>, shading_normal: vec3<f32>, geometric_normal: vec3<f32>) -> PlasticHit {
    let n = face_forward(shading_normal, dir);
    let ng = face_forward(geometric_normal, dir);
    let cos_o = -dot3(dir, n);
    let rough = rough_hit(dir, shading_normal, ng);
    var valid = cos_o > 0.0;
    if m.eta.w > 0.0 && !rough.valid {
        valid = false;
    }
    return PlasticHit(albedo, plastic_fresnel(m, cos_o), n, valid, ng, dir, rough);
}

// PlasticHit::base_albedo.
fn plastic_base_albedo(m: Material, h: PlasticHit) -> vec3<f32> {
    return h.albedo * (m.k.x * (1.0 - h.fresnel_out) * m.k.y);
}

// PlasticHit::sample_coat: the mirror direction with weight F(θo) and density 0 for a smooth
// coat, a direction its facets sample for a rough one.
fn plastic_sample_coat(m: Material, h: PlasticHit, u: vec2<f32>) -> RoughSample {
    if m.eta.w > 0.0 {
        return rough_sample_reflection(m, h.rough, u);
    }
    let dir = reflect_dir(h.dir, h.n);
    return RoughSample(dir, 0.0, vec3<f32>(h.fresnel_out), false, dot3(dir, h.ng) > 0.0);
}

// PlasticHit::eval: the base's f cos, the rough coat's f cos and its density.
struct PlasticEval {
    base: vec3<f32>,
    coat_pdf: f32,
    coat: vec3<f32>,
}

fn plastic_eval(m: Material, h: PlasticHit, wi: vec3<f32>) -> PlasticEval {
    let cos_i = dot3(h.n, wi);
    if !(cos_i > 0.0) {
        return PlasticEval(vec3<f32>(0.0), 0.0, vec3<f32>(0.0));
    }
    let base = h.albedo * (m.k.x * (1.0 - plastic_fresnel(m, cos_i)) * (1.0 - h.fresnel_out) * cos_i * (1.0 / 3.14159265358979323846));
    if m.eta.w > 0.0 {
        let lobe = rough_reflection_lobe(m, h.rough, wi);
        return PlasticEval(base, lobe.pdf, lobe.f_cos);
    }
    return PlasticEval(base, 0.0, vec3<f32>(0.0));
}

// PlasticHit::base_bounce_weight.
fn plastic_base_bounce_weight(m: Material, h: PlasticHit, wi: vec3<f32>) -> vec3<f32> {
    return h.albedo * (m.k.x * (1.0 - plastic_fresnel(m, max(dot3(h.n, wi), 0.0))));
}
