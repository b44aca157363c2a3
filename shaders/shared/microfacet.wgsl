// The GGX (Trowbridge-Reitz) distribution of microfacet normals: twin of src/cpu/microfacet.rs
// (D, Smith's Λ, G1 and height-correlated G2, visible-normal sampling after Heitz 2018 and its
// densities), in the shading frame where the normal is +Z. `alpha` is roughness².

const GGX_PI: f32 = 3.14159265358979323846;

// Ggx::d.
fn ggx_d(alpha: f32, h: vec3<f32>) -> f32 {
    if h.z <= 0.0 {
        return 0.0;
    }
    let a2 = alpha * alpha;
    let t = (h.x * h.x + h.y * h.y) + h.z * h.z * a2;
    return a2 / (GGX_PI * t * t);
}

// Ggx::lambda.
fn ggx_lambda(alpha: f32, w: vec3<f32>) -> f32 {
    let cos2 = w.z * w.z;
    if cos2 <= 0.0 {
        return bitcast<f32>(0x7f800000u);
    }
    let tan2 = max((1.0 - cos2) / cos2, 0.0);
    return 0.5 * (sqrt(1.0 + alpha * alpha * tan2) - 1.0);
}

fn ggx_g1(alpha: f32, w: vec3<f32>) -> f32 {
    return 1.0 / (1.0 + ggx_lambda(alpha, w));
}

fn ggx_g2(alpha: f32, wo: vec3<f32>, wi: vec3<f32>) -> f32 {
    return 1.0 / (1.0 + ggx_lambda(alpha, wo) + ggx_lambda(alpha, wi));
}

// Ggx::sample_visible_normal.
fn ggx_sample_visible_normal(alpha: f32, wo: vec3<f32>, u: vec2<f32>) -> vec3<f32> {
    let v = normalize(vec3<f32>(alpha * wo.x, alpha * wo.y, wo.z));
    let len2 = v.x * v.x + v.y * v.y;
    var t1 = vec3<f32>(1.0, 0.0, 0.0);
    if len2 > 0.0 {
        t1 = vec3<f32>(-v.y, v.x, 0.0) / sqrt(len2);
    }
    let t2 = cross(v, t1);
    let r = sqrt(u.x);
    let phi = 2.0 * GGX_PI * u.y;
    let p1 = r * cos(phi);
    let s = 0.5 * (1.0 + v.z);
    let p2 = (1.0 - s) * sqrt(max(1.0 - p1 * p1, 0.0)) + s * r * sin(phi);
    let n = t1 * p1 + t2 * p2 + v * sqrt(max(1.0 - p1 * p1 - p2 * p2, 0.0));
    return normalize(vec3<f32>(alpha * n.x, alpha * n.y, max(n.z, 0.0)));
}

// Ggx::visible_normal_pdf.
fn ggx_visible_normal_pdf(alpha: f32, wo: vec3<f32>, h: vec3<f32>) -> f32 {
    if wo.z <= 0.0 {
        return 0.0;
    }
    return ggx_g1(alpha, wo) * max(dot(wo, h), 0.0) * ggx_d(alpha, h) / wo.z;
}

// Ggx::reflection_pdf.
fn ggx_reflection_pdf(alpha: f32, wo: vec3<f32>, wi: vec3<f32>) -> f32 {
    let sum = wo + wi;
    let len2 = dot(sum, sum);
    if len2 <= 0.0 {
        return 0.0;
    }
    let h = sum / sqrt(len2);
    if dot(wo, h) <= 0.0 {
        return 0.0;
    }
    return ggx_visible_normal_pdf(alpha, wo, h) / (4.0 * dot(wo, h));
}

// Ggx::reflection_cos: D G2 / (4 cos θ_o) for microfacets that reflect everything.
fn ggx_reflection_cos(alpha: f32, wo: vec3<f32>, wi: vec3<f32>) -> f32 {
    if wo.z <= 0.0 || wi.z <= 0.0 {
        return 0.0;
    }
    let sum = wo + wi;
    let len2 = dot(sum, sum);
    if len2 <= 0.0 {
        return 0.0;
    }
    let h = sum / sqrt(len2);
    return ggx_d(alpha, h) * ggx_g2(alpha, wo, wi) / (4.0 * wo.z);
}

// microfacet::reflect_about.
fn ggx_reflect_about(wo: vec3<f32>, h: vec3<f32>) -> vec3<f32> {
    return 2.0 * dot(wo, h) * h - wo;
}
