//! Rough conductors and dielectrics: microfacet BSDFs over the GGX distribution of
//! `cpu::microfacet` (Walter et al., "Microfacet Models for Refraction through Rough Surfaces",
//! EGSR 2007), sampled through the visible normals (Heitz 2018). Camera paths, photons and
//! gather rays all sample them here; camera paths also evaluate them for light samples, which
//! multiple importance sampling weighs against the sampled lobe ([`power_heuristic`]): on the
//! viewer's side through the reflection lobe, and beyond a dielectric through its transmission
//! lobe (a light behind frosted glass).
//!
//! Every microfacet is a smooth interface of the material: a conductor's facets reflect with
//! its Fresnel term at `wo·h`, a dielectric's reflect or refract as `optics::dielectric_split`
//! says. Transmission carries no `η²` radiance scaling, as the smooth dielectric's does not:
//! through a closed object the two interfaces' factors cancel. The sampling weight
//! `f cos / pdf` is then `F G2 / G1` for a conductor and `G2 / G1` (times the tint when
//! refracting) for a dielectric, whose `F` chooses the branch.
//!
//! Its GPU twin is `shaders/shared/rough.wgsl`.

use glam::{Vec2, Vec3};

use crate::cpu::microfacet::{reflect_about, Ggx};
use crate::cpu::optics::{conductor_fresnel, dielectric_split, face_forward};
use crate::render::photons::orthonormal_basis;
use crate::scene::{FresnelMode, MaterialKind};

/// What a rough material's microfacets are.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Facets {
    Conductor {
        eta: Vec3,
        k: Vec3,
        tint: Vec3,
    },
    Dielectric {
        ior: f32,
        tint: Vec3,
        fresnel: FresnelMode,
    },
}

/// A rough material: its facets and their distribution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RoughSurface {
    pub ggx: Ggx,
    pub facets: Facets,
}

impl RoughSurface {
    /// The rough surface of `kind`; `None` unless it is a conductor or dielectric with a
    /// roughness ([`MaterialKind::alpha`]).
    pub fn of(kind: &MaterialKind) -> Option<RoughSurface> {
        let alpha = kind.alpha()?;
        let facets = match *kind {
            MaterialKind::Conductor { eta, k, tint, .. } => Facets::Conductor { eta, k, tint },
            MaterialKind::Dielectric {
                ior, tint, fresnel, ..
            } => Facets::Dielectric { ior, tint, fresnel },
            _ => return None,
        };
        Some(RoughSurface {
            ggx: Ggx { alpha },
            facets,
        })
    }
}

/// A direction a rough surface scatters to: `weight` is `f cos / pdf`, `pdf` the density per
/// unit solid angle (the branch's probability included), `transmitted` whether it crossed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RoughSample {
    pub dir: Vec3,
    pub weight: Vec3,
    pub pdf: f32,
    pub transmitted: bool,
}

/// A rough surface met by a ray: the shading frame turned towards the viewer, and the
/// direction back to it in that frame (`wo`, `z` > 0).
#[derive(Clone, Copy, Debug)]
pub struct RoughHit {
    pub surface: RoughSurface,
    tangent: Vec3,
    bitangent: Vec3,
    normal: Vec3,
    /// The geometric normal on the viewer's side.
    facing: Vec3,
    wo: Vec3,
    /// Whether the ray arrives from outside (against the geometric normal), for a dielectric.
    entering: bool,
}

impl RoughHit {
    /// The surface met by the unit direction `dir` where its normals are `shading_normal` and
    /// `geometric_normal` (outwards); `None` when `dir` grazes the shading normal.
    pub fn new(
        surface: RoughSurface,
        dir: Vec3,
        shading_normal: Vec3,
        geometric_normal: Vec3,
    ) -> Option<RoughHit> {
        let normal = face_forward(shading_normal, dir);
        let (tangent, bitangent) = orthonormal_basis(normal);
        let wo = Vec3::new(-dir.dot(tangent), -dir.dot(bitangent), -dir.dot(normal));
        if !positive(wo.z) {
            return None;
        }
        Some(RoughHit {
            surface,
            tangent,
            bitangent,
            normal,
            facing: face_forward(geometric_normal, dir),
            wo,
            entering: dir.dot(geometric_normal) < 0.0,
        })
    }

    /// Whether light passes through the surface (a dielectric's facets refract).
    pub fn transmits(&self) -> bool {
        matches!(self.surface.facets, Facets::Dielectric { .. })
    }

    fn local(&self, v: Vec3) -> Vec3 {
        Vec3::new(
            v.dot(self.tangent),
            v.dot(self.bitangent),
            v.dot(self.normal),
        )
    }

    fn world(&self, v: Vec3) -> Vec3 {
        self.tangent * v.x + self.bitangent * v.y + self.normal * v.z
    }

    /// A dielectric facet `h` (local, facing `wo`): how it splits the view ray.
    fn dielectric_facet(
        &self,
        h: Vec3,
        ior: f32,
        fresnel: FresnelMode,
    ) -> crate::cpu::optics::DielectricSplit {
        // dielectric_split tells inside from outside by the normal it is given.
        let outward = if self.entering { h } else { -h };
        dielectric_split(-self.wo, outward, outward, ior, fresnel)
    }

    /// A facet visible from the viewer, from two uniform numbers, with `wo·h`; `None` when
    /// rounding leaves it facing away.
    fn visible_facet(&self, u: Vec2) -> Option<(Vec3, f32)> {
        let h = self.surface.ggx.sample_visible_normal(self.wo, u);
        let c = self.wo.dot(h);
        positive(c).then_some((h, c))
    }

    /// A scattered direction from three uniform numbers: `u_branch` chooses a dielectric's
    /// reflection (below its Fresnel term) or refraction, `u` the visible normal. `None` when
    /// the sample leaves below the surface (light the single-scattering model loses).
    pub fn sample(&self, u_branch: f32, u: Vec2) -> Option<RoughSample> {
        // A conductor's facets only reflect.
        let Facets::Dielectric { ior, tint, fresnel } = self.surface.facets else {
            return self.sample_reflection(u);
        };
        let ggx = self.surface.ggx;
        let wo = self.wo;
        let (h, c) = self.visible_facet(u)?;
        let normal_pdf = ggx.visible_normal_pdf(wo, h);
        let split = self.dielectric_facet(h, ior, fresnel);
        let (wi, weight, pdf, transmitted) = match split.refracted {
            Some(t) if u_branch >= split.fresnel => {
                // η of the far side over this one; dω_h/dω_i = η² |wi·h| / (wo·h + η wi·h)².
                let eta = if self.entering { ior } else { 1.0 / ior };
                let denom = c + eta * t.dot(h);
                let jacobian = eta * eta * t.dot(h).abs() / (denom * denom);
                (t, tint, (1.0 - split.fresnel) * normal_pdf * jacobian, true)
            }
            _ => (
                split.reflected,
                Vec3::ONE,
                split.fresnel * normal_pdf / (4.0 * c),
                false,
            ),
        };
        // Reflection stays above the surface, refraction goes below it.
        if (wi.z > 0.0) == transmitted {
            return None;
        }
        let dir = self.world(wi);
        if (dir.dot(self.facing) > 0.0) == transmitted {
            return None;
        }
        let masking = ggx.g2(wo, wi) / ggx.g1(wo);
        Some(RoughSample {
            dir,
            weight: weight * masking,
            pdf,
            transmitted,
        })
    }

    /// For unit direction `wi` on the viewer's side (a light sample), `f cos` and the density
    /// [`RoughHit::sample`] gives `wi` with (for a dielectric, reflection's share of it);
    /// zeros below the surface.
    pub fn eval_reflection(&self, wi: Vec3) -> (Vec3, f32) {
        let (f_cos, pdf, fresnel) = self.reflection_lobe(wi);
        match self.surface.facets {
            Facets::Conductor { .. } => (f_cos, pdf),
            Facets::Dielectric { .. } => (f_cos, fresnel.x * pdf),
        }
    }

    /// For unit direction `wi` (world) on either side (a light sample), `f cos` and the density
    /// [`RoughHit::sample`] gives `wi` with: [`RoughHit::eval_reflection`] on the viewer's side
    /// of the shading normal, [`RoughHit::eval_transmission`] beyond it.
    pub fn eval(&self, wi: Vec3) -> (Vec3, f32) {
        if wi.dot(self.normal) < 0.0 {
            self.eval_transmission(wi)
        } else {
            self.eval_reflection(wi)
        }
    }

    /// For unit direction `wi` (world) beyond the surface (a light sample behind rough glass),
    /// `f cos` and the density [`RoughHit::sample`] refracts into `wi` with (the refraction's
    /// share `1 − F` included); zeros for a conductor, on the viewer's side, or where no facet
    /// refracts the view into `wi`.
    ///
    /// The facet is the generalized half vector `−(wo + η wi)` (η: the far side's index over
    /// this one's), and `f cos` is the sampling weight `tint G2 / G1` times that density, so
    /// that the two strategies of multiple importance sampling see one BTDF.
    pub fn eval_transmission(&self, wi: Vec3) -> (Vec3, f32) {
        let Facets::Dielectric { ior, tint, fresnel } = self.surface.facets else {
            return (Vec3::ZERO, 0.0);
        };
        let ggx = self.surface.ggx;
        let (wo, wi) = (self.wo, self.local(wi));
        if !positive(-wi.z) {
            return (Vec3::ZERO, 0.0);
        }
        let eta = if self.entering { ior } else { 1.0 / ior };
        let mut h = -(wo + eta * wi).normalize_or_zero();
        if h.z < 0.0 {
            h = -h;
        }
        let (c, ci) = (wo.dot(h), wi.dot(h));
        // The facet must face the viewer and have the light behind it.
        if !positive(c) || !positive(-ci) {
            return (Vec3::ZERO, 0.0);
        }
        let split = self.dielectric_facet(h, ior, fresnel);
        if split.refracted.is_none() {
            return (Vec3::ZERO, 0.0);
        }
        let denom = c + eta * ci;
        let jacobian = eta * eta * ci.abs() / (denom * denom);
        let refracted = (1.0 - split.fresnel) * jacobian;
        // G1(wo) (wo·h) D / wo.z is the visible normal's density; G2 in place of G1 is f cos.
        let normal = c * ggx.d(h) / wo.z;
        let pdf = refracted * ggx.g1(wo) * normal;
        let f_cos = tint * (refracted * ggx.g2(wo, wi) * normal);
        if !pdf.is_finite() || !f_cos.is_finite() {
            return (Vec3::ZERO, 0.0);
        }
        (f_cos, pdf)
    }

    /// The reflection lobe at unit direction `wi` (world): `f cos`, the density with which
    /// [`RoughHit::sample_reflection`] gives `wi`, and the facet's Fresnel term.
    pub fn reflection_lobe(&self, wi: Vec3) -> (Vec3, f32, Vec3) {
        let ggx = self.surface.ggx;
        let (wo, wi) = (self.wo, self.local(wi));
        if !positive(wi.z) {
            return (Vec3::ZERO, 0.0, Vec3::ZERO);
        }
        let h = (wo + wi).normalize_or_zero();
        let c = wo.dot(h);
        if !positive(c) {
            return (Vec3::ZERO, 0.0, Vec3::ZERO);
        }
        let f = self.facet_fresnel(h, c);
        (
            f * ggx.reflection_cos(wo, wi),
            ggx.reflection_pdf(wo, wi),
            f,
        )
    }

    /// The Fresnel term of facet `h` (local) at `c = wo·h`: a conductor's (times its tint) or a
    /// dielectric's reflectance.
    fn facet_fresnel(&self, h: Vec3, c: f32) -> Vec3 {
        match self.surface.facets {
            Facets::Conductor { eta, k, tint } => conductor_fresnel(c, eta, k) * tint,
            Facets::Dielectric { ior, fresnel, .. } => {
                Vec3::splat(self.dielectric_facet(h, ior, fresnel).fresnel)
            }
        }
    }

    /// A reflected direction from two uniform numbers, whatever the facets are: the visible
    /// facet reflects the view with weight `F G2 / G1` (a dielectric coat's reflection, which
    /// never refracts here). `None` below the surface.
    pub fn sample_reflection(&self, u: Vec2) -> Option<RoughSample> {
        let ggx = self.surface.ggx;
        let wo = self.wo;
        let (h, c) = self.visible_facet(u)?;
        let wi = reflect_about(wo, h);
        let dir = self.world(wi);
        if !positive(wi.z) || !positive(dir.dot(self.facing)) {
            return None;
        }
        Some(RoughSample {
            dir,
            weight: self.facet_fresnel(h, c) * (ggx.g2(wo, wi) / ggx.g1(wo)),
            pdf: ggx.visible_normal_pdf(wo, h) / (4.0 * c),
            transmitted: false,
        })
    }
}

/// Whether `x` is above 0 (false for NaN): where a sample or a frame is usable.
pub(crate) fn positive(x: f32) -> bool {
    x > 0.0
}

/// Veach's power heuristic for a sample of the strategy with density `a` (its sample count
/// folded in) against the other strategy's `b`: `a² / (a² + b²)`, 0 when `a` is 0.
pub fn power_heuristic(a: f32, b: f32) -> f32 {
    if !positive(a) {
        return 0.0;
    }
    // Bounded so that neither the ratio nor its square overflows.
    let r = b.clamp(0.0, 1e30) / a.min(1e30);
    1.0 / (1.0 + r * r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::sampling::SampleStream;

    fn gold(roughness: f32) -> RoughSurface {
        RoughSurface::of(&MaterialKind::Conductor {
            eta: Vec3::new(0.143, 0.375, 1.442),
            k: Vec3::new(3.983, 2.386, 1.603),
            tint: Vec3::ONE,
            roughness,
            texture: None,
        })
        .expect("a rough conductor")
    }

    fn glass(roughness: f32) -> RoughSurface {
        RoughSurface::of(&MaterialKind::Dielectric {
            ior: 1.5,
            tint: Vec3::ONE,
            fresnel: FresnelMode::Exact,
            roughness,
        })
        .expect("a rough dielectric")
    }

    /// A view at `theta` degrees from the normal of a surface facing +Z (outward).
    fn view(theta: f32) -> Vec3 {
        let t = theta.to_radians();
        Vec3::new(t.sin(), 0.0, -t.cos())
    }

    #[test]
    fn smooth_materials_and_other_kinds_have_no_rough_surface() {
        let smooth = MaterialKind::Conductor {
            eta: Vec3::ONE,
            k: Vec3::ONE,
            tint: Vec3::ONE,
            roughness: 0.0,
            texture: None,
        };
        assert!(RoughSurface::of(&smooth).is_none());
        assert!(RoughSurface::of(&MaterialKind::Mirror {
            reflectance: Vec3::ONE
        })
        .is_none());
        assert_eq!(gold(0.5).ggx.alpha, 0.25);
    }

    /// The sampled weights' mean is the directional albedo `∫ f cos dω`, which evaluating
    /// `f cos / pdf` over the same samples estimates too: sampling and evaluation agree.
    #[test]
    fn sampled_weights_equal_evaluated_f_cos_over_pdf() {
        for (roughness, theta, surface) in [0.1, 0.5, 0.9]
            .into_iter()
            .flat_map(|r| [0.0, 45.0, 75.0].map(|t| (r, t)))
            .flat_map(|(r, t)| [(r, t, gold(r)), (r, t, glass(r))])
        {
            {
                let hit = RoughHit::new(surface, view(theta), Vec3::Z, Vec3::Z).unwrap();
                let mut rng = SampleStream::new(7, 0, 0);
                for _ in 0..2000 {
                    let Some(s) = hit.sample(rng.next_f32(), rng.next_vec2()) else {
                        continue;
                    };
                    let (f_cos, pdf) = hit.eval(s.dir);
                    assert!(
                        (pdf - s.pdf).abs() <= 2e-3 * s.pdf,
                        "roughness {roughness}, θ {theta}: pdf {} vs {pdf}",
                        s.pdf
                    );
                    let w = f_cos / pdf;
                    assert!(
                        (w - s.weight).abs().max_element() <= 2e-3 * s.weight.max_element(),
                        "roughness {roughness}, θ {theta}: weight {} vs {w}",
                        s.weight
                    );
                }
            }
        }
    }

    /// Over the far side, the density `eval_transmission` reports integrates to the share of
    /// samples that refract, and its `f cos` to their mean weight (the directional
    /// transmittance), from outside and from inside, near and far from the normal.
    #[test]
    fn transmission_density_integrates_to_the_share_of_samples_that_refract() {
        for (roughness, theta, entering) in [0.3, 0.7]
            .into_iter()
            .flat_map(|r| [0.0, 40.0, 70.0].map(|t| (r, t)))
            .flat_map(|(r, t)| [(r, t, true), (r, t, false)])
        {
            let outward = if entering { Vec3::Z } else { -Vec3::Z };
            let hit = RoughHit::new(glass(roughness), view(theta), outward, outward).unwrap();
            let n = 1_000_000;
            let (mut share, mut weight) = (0.0f64, 0.0f64);
            let mut rng = SampleStream::new(11, 2, 0);
            for _ in 0..n {
                if let Some(s) = hit.sample(rng.next_f32(), rng.next_vec2()) {
                    if s.transmitted {
                        share += 1.0;
                        weight += s.weight.x as f64;
                    }
                }
            }
            let (share, weight) = (share / n as f64, weight / n as f64);
            // The far hemisphere by angle from its pole (the sampled side's −normal), fine
            // enough in θ for the narrowest lobe (α = 0.09).
            let (steps_theta, steps_phi) = (2000, 256);
            let (mut pdf_integral, mut f_integral) = (0.0f64, 0.0f64);
            let pole = hit.normal * -1.0;
            let (t, b) = orthonormal_basis(pole);
            for i in 0..steps_theta {
                let th = (i as f64 + 0.5) * std::f64::consts::FRAC_PI_2 / steps_theta as f64;
                for j in 0..steps_phi {
                    let ph = (j as f64 + 0.5) * std::f64::consts::TAU / steps_phi as f64;
                    let dir = (t * (th.sin() * ph.cos()) as f32
                        + b * (th.sin() * ph.sin()) as f32
                        + pole * th.cos() as f32)
                        .normalize();
                    let (f_cos, pdf) = hit.eval_transmission(dir);
                    let d_omega = th.sin()
                        * (std::f64::consts::FRAC_PI_2 / steps_theta as f64)
                        * (std::f64::consts::TAU / steps_phi as f64);
                    pdf_integral += pdf as f64 * d_omega;
                    f_integral += f_cos.x as f64 * d_omega;
                }
            }
            // Four standard errors of the sampled share (binomial), at least 0.002.
            let tolerance = (4.0 * (share * (1.0 - share) / n as f64).sqrt()).max(0.002);
            assert!(
                (pdf_integral - share).abs() <= tolerance,
                "roughness {roughness}, θ {theta}, entering {entering}: ∫pdf {pdf_integral} vs share {share}"
            );
            assert!(
                (f_integral - weight).abs() <= tolerance,
                "roughness {roughness}, θ {theta}, entering {entering}: ∫f cos {f_integral} vs mean weight {weight}"
            );
        }
    }

    /// A conductor transmits nothing, and a dielectric nothing towards the viewer's side.
    #[test]
    fn transmission_is_zero_for_conductors_and_on_the_viewers_side() {
        let hit = RoughHit::new(gold(0.5), view(20.0), Vec3::Z, Vec3::Z).unwrap();
        assert_eq!(hit.eval_transmission(-Vec3::Z), (Vec3::ZERO, 0.0));
        let hit = RoughHit::new(glass(0.5), view(20.0), Vec3::Z, Vec3::Z).unwrap();
        assert_eq!(hit.eval_transmission(Vec3::Z), (Vec3::ZERO, 0.0));
        assert!(hit.eval_transmission(-Vec3::Z).1 > 0.0);
    }

    /// Seen near the normal, from outside or inside, a rough dielectric's samples reflect or
    /// refract, each on its own side, and almost none are lost below the surface.
    #[test]
    fn dielectric_samples_reflect_or_refract_and_almost_none_are_lost() {
        for entering in [true, false] {
            let hit = RoughHit::new(
                glass(0.3),
                view(10.0),
                Vec3::Z,
                if entering { Vec3::Z } else { -Vec3::Z },
            )
            .unwrap();
            let (mut reflected, mut refracted, n) = (0, 0, 20000);
            let mut rng = SampleStream::new(3, 1, 0);
            for _ in 0..n {
                match hit.sample(rng.next_f32(), rng.next_vec2()) {
                    Some(s) if s.transmitted => refracted += 1,
                    Some(_) => reflected += 1,
                    None => {}
                }
            }
            let total = (reflected + refracted) as f32 / n as f32;
            assert!(total > 0.99, "entering {entering}: kept {total}");
            assert!(refracted > 0, "entering {entering}: nothing refracted");
        }
    }

    #[test]
    fn power_heuristic_weights_sum_to_one_and_survive_extremes() {
        let (a, b) = (3.0, 4.0);
        assert!((power_heuristic(a, b) + power_heuristic(b, a) - 1.0).abs() < 1e-6);
        assert_eq!(power_heuristic(0.0, 1.0), 0.0);
        assert_eq!(power_heuristic(1.0, 0.0), 1.0);
        assert!(power_heuristic(f32::INFINITY, f32::INFINITY).is_finite());
        assert!(power_heuristic(1e-30, f32::INFINITY) < 1e-20);
    }
}
