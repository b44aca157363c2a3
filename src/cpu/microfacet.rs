//! The GGX (Trowbridge–Reitz) microfacet distribution for rough materials: its normal
//! distribution `D`, Smith's masking (`G1`) and height-correlated masking-shadowing (`G2`), and
//! sampling of the visible normals (Heitz, "Sampling the GGX Distribution of Visible Normals",
//! JCGT 2018), all in the shading frame where the normal is +Z.
//!
//! Roughness maps to the distribution's width as `α = roughness²` (the convention of Disney's
//! principled BRDF, Blender and glTF; pbrt-v4 uses √roughness, Mitsuba takes α itself).
//!
//! Its GPU twin is `shaders/shared/microfacet.wgsl` (compared in `tests/gpu_context.rs`).
//! Neither is wired into the renderer yet: the rough conductor, rough dielectric and plastic
//! materials of issue 14 will be built on them.

use glam::{Vec2, Vec3};

/// The smallest α: below it the distribution is a mirror in all but name and its `D` overflows.
pub const MIN_ALPHA: f32 = 1e-4;

/// An isotropic GGX distribution of microfacet normals.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ggx {
    pub alpha: f32,
}

impl Ggx {
    /// The distribution of a material's `roughness` in [0, 1] (`α = roughness²`).
    pub fn from_roughness(roughness: f32) -> Ggx {
        Ggx {
            alpha: (roughness.clamp(0.0, 1.0) * roughness.clamp(0.0, 1.0)).max(MIN_ALPHA),
        }
    }

    /// The density of microfacet normals `h` (unit, shading frame) per unit solid angle,
    /// projected: `∫ D(h) cos θ_h dω_h = 1`.
    pub fn d(&self, h: Vec3) -> f32 {
        if h.z <= 0.0 {
            return 0.0;
        }
        let a2 = self.alpha * self.alpha;
        // cos²θ (α² − 1) + 1 written with sin²θ itself: no cancellation near the normal,
        // where narrow lobes peak.
        let t = (h.x * h.x + h.y * h.y) + h.z * h.z * a2;
        a2 / (std::f32::consts::PI * t * t)
    }

    /// Smith's Λ for direction `w`: `G1 = 1 / (1 + Λ)`.
    pub fn lambda(&self, w: Vec3) -> f32 {
        let cos2 = w.z * w.z;
        if cos2 <= 0.0 {
            return f32::INFINITY;
        }
        let tan2 = ((1.0 - cos2) / cos2).max(0.0);
        0.5 * ((1.0 + self.alpha * self.alpha * tan2).sqrt() - 1.0)
    }

    /// The fraction of microfacets visible from `w` (Smith's masking).
    pub fn g1(&self, w: Vec3) -> f32 {
        1.0 / (1.0 + self.lambda(w))
    }

    /// The fraction visible from both `wo` and `wi` (height-correlated masking-shadowing).
    pub fn g2(&self, wo: Vec3, wi: Vec3) -> f32 {
        1.0 / (1.0 + self.lambda(wo) + self.lambda(wi))
    }

    /// A microfacet normal visible from `wo` (whose `z` is positive), chosen in proportion to
    /// its visible projected area from two uniform numbers (Heitz 2018, listing 1).
    pub fn sample_visible_normal(&self, wo: Vec3, u: Vec2) -> Vec3 {
        let a = self.alpha;
        // The view direction in the hemisphere configuration (α stretched to 1).
        let v = Vec3::new(a * wo.x, a * wo.y, wo.z).normalize();
        let len2 = v.x * v.x + v.y * v.y;
        let t1 = if len2 > 0.0 {
            Vec3::new(-v.y, v.x, 0.0) / len2.sqrt()
        } else {
            Vec3::X
        };
        let t2 = v.cross(t1);
        // A point on the disk, warped towards the part the view sees.
        let r = u.x.sqrt();
        let phi = 2.0 * std::f32::consts::PI * u.y;
        let p1 = r * phi.cos();
        let s = 0.5 * (1.0 + v.z);
        let p2 = (1.0 - s) * (1.0 - p1 * p1).max(0.0).sqrt() + s * r * phi.sin();
        let n = t1 * p1 + t2 * p2 + v * (1.0 - p1 * p1 - p2 * p2).max(0.0).sqrt();
        // Back to the ellipsoid configuration.
        Vec3::new(a * n.x, a * n.y, n.z.max(0.0)).normalize()
    }

    /// The density per unit solid angle of the normals [`Ggx::sample_visible_normal`] gives for
    /// `wo`: `G1(wo) max(0, wo·h) D(h) / cos θ_o`.
    pub fn visible_normal_pdf(&self, wo: Vec3, h: Vec3) -> f32 {
        if wo.z <= 0.0 {
            return 0.0;
        }
        self.g1(wo) * wo.dot(h).max(0.0) * self.d(h) / wo.z
    }

    /// The density per unit solid angle of the reflected direction `wi` when `wo` is reflected
    /// about a visible normal: the normal's density times `1 / (4 wo·h)`.
    pub fn reflection_pdf(&self, wo: Vec3, wi: Vec3) -> f32 {
        let h = (wo + wi).normalize_or_zero();
        if h == Vec3::ZERO || wo.dot(h) <= 0.0 {
            return 0.0;
        }
        self.visible_normal_pdf(wo, h) / (4.0 * wo.dot(h))
    }

    /// The reflection BRDF of a surface whose microfacets reflect all light (`F = 1`), times the
    /// cosine at `wi`: `D G2 / (4 cos θ_o)`. A rough conductor multiplies it by its Fresnel term
    /// at `wo·h`.
    pub fn reflection_cos(&self, wo: Vec3, wi: Vec3) -> f32 {
        if wo.z <= 0.0 || wi.z <= 0.0 {
            return 0.0;
        }
        let h = (wo + wi).normalize_or_zero();
        if h == Vec3::ZERO {
            return 0.0;
        }
        self.d(h) * self.g2(wo, wi) / (4.0 * wo.z)
    }
}

/// Reflects `wo` about the microfacet normal `h`.
pub fn reflect_about(wo: Vec3, h: Vec3) -> Vec3 {
    2.0 * wo.dot(h) * h - wo
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f32::consts::PI;

    /// ∫ f(h) over the hemisphere of directions, by the midpoint rule in (cos θ, φ).
    fn hemisphere_integral(n: usize, f: impl Fn(Vec3) -> f64) -> f64 {
        let mut sum = 0.0;
        for i in 0..n {
            let cos = (i as f32 + 0.5) / n as f32;
            let sin = (1.0 - cos * cos).max(0.0).sqrt();
            for j in 0..n {
                let phi = 2.0 * PI * (j as f32 + 0.5) / n as f32;
                sum += f(Vec3::new(sin * phi.cos(), sin * phi.sin(), cos));
            }
        }
        sum * 2.0 * PI as f64 / (n * n) as f64
    }

    /// `∫ f cos dω_i` as an integral over the microfacet normals (dω_i = 4 (wo·h) dω_h), on a
    /// grid uniform in θ_h up to 40 α (the tail beyond holds under 0.1% of the normals), so
    /// that even the narrow lobe of α = 0.01 spans hundreds of steps.
    fn albedo_over_normals(ggx: &Ggx, wo: Vec3) -> f64 {
        let theta_max = (40.0 * ggx.alpha).min(0.5 * PI) as f64;
        let (nt, np) = (4000usize, 400usize);
        let mut sum = 0.0f64;
        for i in 0..nt {
            let theta = (i as f64 + 0.5) / nt as f64 * theta_max;
            for j in 0..np {
                let phi = 2.0 * std::f64::consts::PI * (j as f64 + 0.5) / np as f64;
                let h = Vec3::new(
                    (theta.sin() * phi.cos()) as f32,
                    (theta.sin() * phi.sin()) as f32,
                    theta.cos() as f32,
                );
                let wi = reflect_about(wo, h);
                let cos_oh = wo.dot(h);
                if wi.z <= 0.0 || cos_oh <= 0.0 {
                    continue;
                }
                let f = ggx.reflection_cos(wo, wi) as f64 * 4.0 * cos_oh as f64;
                sum += f * theta.sin();
            }
        }
        sum * theta_max / nt as f64 * 2.0 * std::f64::consts::PI / np as f64
    }

    fn direction(theta_deg: f32) -> Vec3 {
        let t = theta_deg.to_radians();
        Vec3::new(t.sin(), 0.0, t.cos())
    }

    #[test]
    fn the_projected_normal_distribution_integrates_to_one() {
        // Narrow lobes need a fine grid: θ steps of 1/2000 in cos θ resolve α = 0.1.
        for roughness in [0.3, 0.5, 0.8, 1.0] {
            let ggx = Ggx::from_roughness(roughness);
            let total = hemisphere_integral(2000, |h| ggx.d(h) as f64 * h.z as f64);
            assert!((total - 1.0).abs() < 2e-3, "roughness {roughness}: {total}");
        }
    }

    #[test]
    fn the_visible_normals_integrate_to_one_for_every_view() {
        // ∫ G1(wo) max(0, wo·h) D(h) / cos θ_o dω_h = 1: the visible area equals the
        // projected area of the macrosurface (Heitz 2014, equation 5).
        for roughness in [0.3, 0.8] {
            let ggx = Ggx::from_roughness(roughness);
            for theta in [0.0, 45.0, 80.0] {
                let wo = direction(theta);
                let total = hemisphere_integral(1500, |h| ggx.visible_normal_pdf(wo, h) as f64);
                assert!(
                    (total - 1.0).abs() < 5e-3,
                    "roughness {roughness}, θ {theta}: {total}"
                );
            }
        }
    }

    /// The white furnace of a rough reflector that reflects everything at each microfacet:
    /// the directional albedo `∫ f cos dω_i` computed twice, by quadrature of the BRDF and by
    /// importance sampling with the visible normals (each sample weighing `G2/G1`). The two
    /// must agree to 1% at roughness 0.1 and 0.8, and lie below 1 (single scattering loses
    /// the light that bounces between microfacets, more at high roughness).
    #[test]
    fn sampled_and_integrated_directional_albedo_agree_within_one_percent() {
        for roughness in [0.1, 0.8] {
            let ggx = Ggx::from_roughness(roughness);
            for theta in [0.0, 30.0, 60.0, 75.0] {
                let wo = direction(theta);
                let n = 512;
                let mut sampled = 0.0f64;
                for i in 0..n {
                    for j in 0..n {
                        let u = Vec2::new((i as f32 + 0.5) / n as f32, (j as f32 + 0.5) / n as f32);
                        let h = ggx.sample_visible_normal(wo, u);
                        let wi = reflect_about(wo, h);
                        if wi.z > 0.0 {
                            let pdf = ggx.reflection_pdf(wo, wi);
                            sampled += (ggx.reflection_cos(wo, wi) / pdf) as f64;
                        }
                    }
                }
                sampled /= (n * n) as f64;
                let integrated = albedo_over_normals(&ggx, wo);
                eprintln!("roughness {roughness}, θ {theta}: sampled {sampled:.5}, integrated {integrated:.5}");
                assert!(
                    (sampled - integrated).abs() < 0.01 * integrated,
                    "roughness {roughness}, θ {theta}: sampled {sampled}, integrated {integrated}"
                );
                assert!(sampled <= 1.0 + 1e-3 && sampled > 0.5, "{sampled}");
            }
        }
    }

    #[test]
    fn a_sampled_direction_has_the_density_reflection_pdf_reports() {
        let ggx = Ggx::from_roughness(0.5);
        let wo = direction(40.0);
        // The density of the sampled reflections, histogrammed over cells of the hemisphere,
        // against reflection_pdf integrated over the same cells.
        let cells = 16usize;
        let cell_of = |w: Vec3| -> usize {
            let c = ((w.z * cells as f32) as usize).min(cells - 1);
            let phi = w.y.atan2(w.x) + PI;
            let p = ((phi / (2.0 * PI) * cells as f32) as usize).min(cells - 1);
            c * cells + p
        };
        let mut counts = vec![0.0f64; cells * cells];
        let n = 600;
        for i in 0..n {
            for j in 0..n {
                let u = Vec2::new((i as f32 + 0.5) / n as f32, (j as f32 + 0.5) / n as f32);
                let wi = reflect_about(wo, ggx.sample_visible_normal(wo, u));
                if wi.z > 0.0 {
                    counts[cell_of(wi)] += 1.0 / (n * n) as f64;
                }
            }
        }
        let mut expected = vec![0.0f64; cells * cells];
        let m = 800;
        for i in 0..m {
            let cos = (i as f32 + 0.5) / m as f32;
            let sin = (1.0 - cos * cos).sqrt();
            for j in 0..m {
                let phi = 2.0 * PI * (j as f32 + 0.5) / m as f32 - PI;
                let w = Vec3::new(sin * phi.cos(), sin * phi.sin(), cos);
                expected[cell_of(w)] +=
                    ggx.reflection_pdf(wo, w) as f64 * 2.0 * PI as f64 / (m * m) as f64;
            }
        }
        for (k, (c, e)) in counts.iter().zip(&expected).enumerate() {
            assert!(
                (c - e).abs() < 0.02 * e.max(0.01),
                "cell {k}: sampled {c}, expected {e}"
            );
        }
    }
}
