//! Plastic: a diffuse base under a dielectric coat, as Mitsuba's `plastic` and `roughplastic`
//! model it. The coat reflects like a dielectric interface of index `ior` (a mirror-like
//! reflection weighted by its Fresnel term, or GGX microfacets when rough); the light it lets
//! in scatters in the base and leaves through it again:
//!
//! `f_base = ρ (1 − F(θi)) (1 − F(θo)) / (π η² (1 − F̄_inside))`,
//!
//! with `F` the smooth coat's Fresnel term at the macroscopic normal and `F̄_inside` its
//! diffuse (hemispherical-average) reflectance from inside, which the light bouncing between
//! base and coat meets (Mitsuba's linear form). A rough coat keeps the smooth coat's `1 − F`
//! terms, where Mitsuba tabulates the rough interface's transmittance: they differ at grazing
//! angles.
//!
//! Photon mapping sees the base as a diffuse surface of albedo [`PlasticHit::base_albedo`]:
//! the Lambertian albedo that gives the same light for diffuse illumination, where
//! `1 − F(θi)` averages to `1 − F̄_outside`. Shadow rays weigh each light sample by the exact
//! `f_base`. Its GPU twin is `shaders/shared/plastic.wgsl`.

use glam::{Vec2, Vec3};

use crate::cpu::microfacet::Ggx;
use crate::cpu::optics::{dielectric_fresnel, face_forward, reflect};
use crate::cpu::rough::{positive, Facets, RoughHit, RoughSample, RoughSurface};
use crate::scene::{FresnelMode, MaterialKind};

/// A plastic material at a hit, with its base's albedo looked up (textures included).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plastic {
    pub albedo: Vec3,
    pub ior: f32,
    /// The rough coat's distribution; `None` for a smooth coat.
    pub coat: Option<Ggx>,
    /// `1 / (η² (1 − F̄_inside))`.
    pub base_scale: f32,
    /// `1 − F̄_outside`: the share of diffuse light the coat lets in.
    pub transmit_outside: f32,
}

impl Plastic {
    /// The plastic of `kind` with its base albedo `albedo` (already textured); `None` for
    /// other materials.
    pub fn of(kind: &MaterialKind, albedo: Vec3) -> Option<Plastic> {
        let MaterialKind::Plastic { ior, .. } = *kind else {
            return None;
        };
        let (base_scale, transmit_outside) = kind.plastic_constants()?;
        Some(Plastic {
            albedo,
            ior,
            coat: kind.alpha().map(|alpha| Ggx { alpha }),
            base_scale,
            transmit_outside,
        })
    }

    /// The smooth coat's Fresnel reflectance for light arriving from outside at cosine `cos`.
    pub fn fresnel(&self, cos: f32) -> f32 {
        dielectric_fresnel(cos, 1.0 / self.ior)
    }
}

/// A plastic surface met by a ray: the normals turned towards the viewer (the coat is on both
/// sides of a surface) and the rough coat's frame when it has one.
#[derive(Clone, Copy, Debug)]
pub struct PlasticHit {
    pub plastic: Plastic,
    n: Vec3,
    ng: Vec3,
    dir: Vec3,
    /// The coat's Fresnel term towards the viewer.
    fresnel_out: f32,
    rough: Option<RoughHit>,
}

impl PlasticHit {
    /// The plastic met by unit direction `dir` where its normals are `shading_normal` and
    /// `geometric_normal`; `None` when `dir` grazes the shading normal.
    pub fn new(
        plastic: Plastic,
        dir: Vec3,
        shading_normal: Vec3,
        geometric_normal: Vec3,
    ) -> Option<PlasticHit> {
        let n = face_forward(shading_normal, dir);
        let ng = face_forward(geometric_normal, dir);
        let cos_o = -dir.dot(n);
        if !positive(cos_o) {
            return None;
        }
        let rough = match plastic.coat {
            Some(ggx) => Some(RoughHit::new(
                RoughSurface {
                    ggx,
                    facets: Facets::Dielectric {
                        ior: plastic.ior,
                        tint: Vec3::ONE,
                        fresnel: FresnelMode::Exact,
                    },
                },
                dir,
                shading_normal,
                ng,
            )?),
            None => None,
        };
        Some(PlasticHit {
            plastic,
            n,
            ng,
            dir,
            fresnel_out: plastic.fresnel(cos_o),
            rough,
        })
    }

    /// The base's diffuse-equivalent albedo towards the viewer, for photon-map estimates and
    /// shading points: `ρ · scale · (1 − F(θo)) · (1 − F̄_outside)`.
    pub fn base_albedo(&self) -> Vec3 {
        self.plastic.albedo
            * (self.plastic.base_scale * (1.0 - self.fresnel_out) * self.plastic.transmit_outside)
    }

    /// The coat's Fresnel term towards the viewer: the probability with which photons and
    /// gather rays take the coat rather than the base.
    pub fn coat_probability(&self) -> f32 {
        self.fresnel_out
    }

    /// The coat's reflection: the mirror direction with weight `F(θo)` and density 0 (a delta)
    /// for a smooth coat, a direction its facets sample for a rough one. `None` below the
    /// surface.
    pub fn sample_coat(&self, u: Vec2) -> Option<RoughSample> {
        match &self.rough {
            Some(rough) => rough.sample_reflection(u),
            None => {
                let dir = reflect(self.dir, self.n);
                (dir.dot(self.ng) > 0.0).then_some(RoughSample {
                    dir,
                    weight: Vec3::splat(self.fresnel_out),
                    pdf: 0.0,
                    transmitted: false,
                })
            }
        }
    }

    /// For unit direction `wi` on the viewer's side (a light sample): the base's `f cos`, the
    /// rough coat's `f cos` and the density [`PlasticHit::sample_coat`] gives `wi` with (zeros
    /// for a smooth coat, whose reflection no light sample can meet).
    pub fn eval(&self, wi: Vec3) -> (Vec3, Vec3, f32) {
        let cos_i = self.n.dot(wi);
        if !positive(cos_i) {
            return (Vec3::ZERO, Vec3::ZERO, 0.0);
        }
        let base = self.plastic.albedo
            * (self.plastic.base_scale
                * (1.0 - self.plastic.fresnel(cos_i))
                * (1.0 - self.fresnel_out)
                * cos_i
                * std::f32::consts::FRAC_1_PI);
        match &self.rough {
            Some(rough) => {
                let (coat, pdf, _) = rough.reflection_lobe(wi);
                (base, coat, pdf)
            }
            None => (base, Vec3::ZERO, 0.0),
        }
    }

    /// A photon's or gather ray's diffuse bounce off the base towards `wi` (cosine-sampled):
    /// `f_base cos / (pdf · (1 − F(θo)))`, the base's weight once the coat was passed by with
    /// probability `1 − F(θo)`: `ρ · scale · (1 − F(θi))`.
    pub fn base_bounce_weight(&self, wi: Vec3) -> Vec3 {
        self.plastic.albedo
            * (self.plastic.base_scale * (1.0 - self.plastic.fresnel(self.n.dot(wi).max(0.0))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plastic(roughness: f32) -> Plastic {
        let kind = MaterialKind::plastic(Vec3::splat(0.5), None, 1.5, roughness);
        Plastic::of(&kind, Vec3::splat(0.5)).unwrap()
    }

    /// The diffuse Fresnel reflectances of glass (η = 1.5): about 0.092 from outside and 0.596
    /// from inside (the classical values).
    #[test]
    fn the_coat_reflects_about_a_tenth_of_diffuse_light_from_outside_and_most_from_inside() {
        let MaterialKind::Plastic {
            fdr_outside,
            fdr_inside,
            ..
        } = MaterialKind::plastic(Vec3::ONE, None, 1.5, 0.0)
        else {
            unreachable!()
        };
        assert!((fdr_outside - 0.0918).abs() < 1e-3, "{fdr_outside}");
        assert!((fdr_inside - 0.5963).abs() < 1e-3, "{fdr_inside}");
    }

    #[test]
    fn a_smooth_coat_reflects_the_mirror_direction_with_its_fresnel_weight() {
        let t = 60f32.to_radians();
        let dir = Vec3::new(t.sin(), 0.0, -t.cos());
        let hit = PlasticHit::new(plastic(0.0), dir, Vec3::Z, Vec3::Z).unwrap();
        let s = hit.sample_coat(Vec2::splat(0.5)).unwrap();
        assert!((s.dir - Vec3::new(t.sin(), 0.0, t.cos())).length() < 1e-6);
        assert!((s.weight.x - dielectric_fresnel(t.cos(), 1.0 / 1.5)).abs() < 1e-6);
        assert_eq!(s.pdf, 0.0);
        assert_eq!(hit.eval(s.dir).1, Vec3::ZERO);
    }
}
