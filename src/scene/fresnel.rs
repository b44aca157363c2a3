//! The Fresnel reflectance of a smooth dielectric interface: what the CPU tracers
//! (`cpu::optics`, which re-exports it) and the scene's plastic constants both use.

/// The exact unpolarised Fresnel reflectance of a smooth dielectric interface: the average of
/// the s- and p-polarised reflectances. `cos_i` is the cosine of the angle of incidence, `cos_t`
/// that of the transmitted direction (both measured from the normal, in [0, 1]), and `eta` the
/// relative index n_incident / n_transmitted (the `eta` of `cpu::optics::refract`).
pub fn exact_fresnel(cos_i: f32, cos_t: f32, eta: f32) -> f32 {
    let (cos_i, cos_t) = (cos_i.clamp(0.0, 1.0), cos_t.clamp(0.0, 1.0));
    let s_den = eta * cos_i + cos_t;
    let p_den = cos_i + eta * cos_t;
    if s_den <= 0.0 || p_den <= 0.0 {
        // Grazing on both sides (exactly at the critical angle): everything is reflected.
        return 1.0;
    }
    let r_s = (eta * cos_i - cos_t) / s_den;
    let r_p = (cos_i - eta * cos_t) / p_den;
    0.5 * (r_s * r_s + r_p * r_p)
}

/// [`exact_fresnel`] from the incident side alone: the transmitted cosine follows from Snell's
/// law, and beyond the critical angle (total internal reflection) the reflectance is 1.
pub fn dielectric_fresnel(cos_i: f32, eta: f32) -> f32 {
    let cos_i = cos_i.clamp(0.0, 1.0);
    let sin2_t = eta * eta * (1.0 - cos_i * cos_i).max(0.0);
    if sin2_t >= 1.0 {
        return 1.0;
    }
    exact_fresnel(cos_i, (1.0 - sin2_t).sqrt(), eta)
}

/// The hemispherical average of a smooth dielectric interface's Fresnel reflectance for
/// light arriving with a cosine-weighted (diffuse) distribution, `2 ∫ F(μ) μ dμ`, with `eta`
/// the index on the arriving side over the far side's (total internal reflection included);
/// by the midpoint rule on 4096 steps of `μ`.
pub fn diffuse_fresnel(eta: f32) -> f32 {
    let steps = 4096;
    let sum: f64 = (0..steps)
        .map(|i| {
            let mu = (i as f32 + 0.5) / steps as f32;
            (dielectric_fresnel(mu, eta) * mu) as f64
        })
        .sum();
    (2.0 * sum / steps as f64) as f32
}
