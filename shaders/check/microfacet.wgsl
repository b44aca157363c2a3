// Evaluates shared/microfacet.wgsl for a list of cases so that a test can compare it with the
// CPU twin (src/cpu/microfacet.rs): per case (wo with alpha in w, u in xy), the sampled visible
// normal and the reflection's f·cos, pdf, G2 and D.
//!include "shared/microfacet.wgsl"

struct Case {
    wo_alpha: vec4<f32>,
    u: vec4<f32>,
}

@group(0) @binding(0) var<storage, read> cases: array<Case>;
@group(0) @binding(1) var<storage, read_write> results: array<vec4<f32>>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i >= arrayLength(&cases) {
        return;
    }
    let c = cases[i];
    let alpha = c.wo_alpha.w;
    let wo = c.wo_alpha.xyz;
    let h = ggx_sample_visible_normal(alpha, wo, c.u.xy);
    let wi = ggx_reflect_about(wo, h);
    results[2u * i] = vec4<f32>(h, ggx_reflection_cos(alpha, wo, wi));
    results[2u * i + 1u] = vec4<f32>(ggx_reflection_pdf(alpha, wo, wi), ggx_g2(alpha, wo, wi), ggx_d(alpha, h), 0.0);
}
