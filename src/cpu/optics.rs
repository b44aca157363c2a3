//! Specular optics shared by the CPU tracers (Whitted, photons, final gather): reflection,
//! refraction, the Fresnel terms of dielectrics and conductors, and ray-offset helpers; the CPU
//! twin of the optics in shaders/shared/shading.wgsl.

use glam::Vec3;

pub use crate::scene::fresnel::{dielectric_fresnel, exact_fresnel};
use crate::scene::{FresnelMode, MaterialKind};

/// Fresnel reflectance by Schlick's approximation for a dielectric of index ratio `ior`
/// (inside over outside), given the cosine on the side of the lower index.
pub fn schlick_fresnel(cos_theta: f32, ior: f32) -> f32 {
    let r0 = ((1.0 - ior) / (1.0 + ior)).powi(2);
    r0 + (1.0 - r0) * (1.0 - cos_theta.clamp(0.0, 1.0)).powi(5)
}

/// The exact unpolarised Fresnel reflectance of a smooth conductor, per channel, for light
/// arriving from a medium of index 1 at cosine `cos_i`, with complex index `eta + i·k`
/// (pbrt-v3's `FrConductor`: the s and p reflectances in closed form, averaged).
pub fn conductor_fresnel(cos_i: f32, eta: Vec3, k: Vec3) -> Vec3 {
    let cos_i = cos_i.clamp(0.0, 1.0);
    let cos2 = cos_i * cos_i;
    let sin2 = 1.0 - cos2;
    let eta2 = eta * eta;
    let k2 = k * k;
    let t0 = eta2 - k2 - Vec3::splat(sin2);
    // a² + b², where a + i·b is the complex cosine of the transmitted direction times eta.
    let a2_plus_b2 = (t0 * t0 + 4.0 * eta2 * k2).max(Vec3::ZERO).powf(0.5);
    let t1 = a2_plus_b2 + Vec3::splat(cos2);
    let a = (0.5 * (a2_plus_b2 + t0)).max(Vec3::ZERO).powf(0.5);
    let t2 = 2.0 * cos_i * a;
    let t3 = cos2 * a2_plus_b2 + Vec3::splat(sin2 * sin2);
    let t4 = t2 * sin2;
    let channel = |t1: f32, t2: f32, t3: f32, t4: f32| {
        // A zero denominator is the index-1 limit at grazing or normal incidence: the limits
        // of the quotients are 1.
        let r_s = if t1 + t2 > 0.0 {
            (t1 - t2) / (t1 + t2)
        } else {
            1.0
        };
        let r_p = if t3 + t4 > 0.0 {
            r_s * (t3 - t4) / (t3 + t4)
        } else {
            r_s
        };
        0.5 * (r_s + r_p)
    };
    Vec3::new(
        channel(t1.x, t2.x, t3.x, t4.x),
        channel(t1.y, t2.y, t3.y, t4.y),
        channel(t1.z, t2.z, t3.z, t4.z),
    )
}

/// The reflectance of a perfect specular reflector at incidence cosine `cos_i`: a mirror's
/// constant reflectance, or a conductor's Fresnel term times its tint; zero for other kinds.
pub fn specular_reflectance(kind: &MaterialKind, cos_i: f32) -> Vec3 {
    match *kind {
        MaterialKind::Mirror { reflectance } => reflectance,
        MaterialKind::Conductor { eta, k, tint, .. } => conductor_fresnel(cos_i, eta, k) * tint,
        _ => Vec3::ZERO,
    }
}

/// Mirror reflection of `d` about the unit normal `n`.
pub fn reflect(d: Vec3, n: Vec3) -> Vec3 {
    d - 2.0 * d.dot(n) * n
}

/// Refraction of the unit direction `d` through a surface with unit normal `n` facing against
/// `d`, with `eta` = n_incident / n_transmitted. `None` on total internal reflection.
pub fn refract(d: Vec3, n: Vec3, eta: f32) -> Option<Vec3> {
    let cos_i = -d.dot(n);
    let sin2_t = eta * eta * (1.0 - cos_i * cos_i).max(0.0);
    if sin2_t > 1.0 {
        return None;
    }
    let cos_t = (1.0 - sin2_t).sqrt();
    Some((eta * d + (eta * cos_i - cos_t) * n).normalize())
}

/// How a dielectric interface splits a ray: the reflected direction with its Fresnel weight and,
/// unless totally reflected, the refracted direction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DielectricSplit {
    pub reflected: Vec3,
    pub fresnel: f32,
    pub refracted: Option<Vec3>,
}

/// Splits unit direction `d` at a dielectric with index `ior`, where `geometric_normal` points
/// outside (the winding normal) and `shading_normal` is in the same hemisphere; the Fresnel
/// weight is computed as `mode` says.
pub fn dielectric_split(
    d: Vec3,
    shading_normal: Vec3,
    geometric_normal: Vec3,
    ior: f32,
    mode: FresnelMode,
) -> DielectricSplit {
    let entering = d.dot(geometric_normal) < 0.0;
    let n = if entering {
        shading_normal
    } else {
        -shading_normal
    };
    let eta = if entering { 1.0 / ior } else { ior };
    let reflected = reflect(d, n);
    match refract(d, n, eta) {
        None => DielectricSplit {
            reflected,
            fresnel: 1.0,
            refracted: None,
        },
        Some(t) => {
            let (cos_i, cos_t) = (-d.dot(n), -t.dot(n));
            let fresnel = match mode {
                FresnelMode::Exact => exact_fresnel(cos_i, cos_t, eta),
                FresnelMode::Schlick => {
                    // Schlick uses the cosine on the side of the lower index.
                    let cos = if (ior >= 1.0) == entering {
                        cos_i
                    } else {
                        cos_t
                    };
                    schlick_fresnel(cos, ior.max(1.0 / ior))
                }
            };
            DielectricSplit {
                reflected,
                fresnel,
                refracted: Some(t),
            }
        }
    }
}

/// `n` turned to face against `dir` (towards where the ray came from).
pub fn face_forward(n: Vec3, dir: Vec3) -> Vec3 {
    if n.dot(dir) > 0.0 {
        -n
    } else {
        n
    }
}

/// Moves a surface point off the surface along `n` by a scale-aware epsilon.
pub fn offset_origin(p: Vec3, n: Vec3, epsilon: f32) -> Vec3 {
    p + n * (epsilon + p.abs().max_element() * 1e-6)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GLASS: f32 = 1.5;

    /// Direction arriving at angle `theta` (radians) onto a surface with normal +Y from above.
    fn arriving(theta: f32) -> Vec3 {
        Vec3::new(theta.sin(), -theta.cos(), 0.0)
    }

    #[test]
    fn refraction_obeys_snells_law() {
        let theta = 40f32.to_radians();
        let t = refract(arriving(theta), Vec3::Y, 1.0 / GLASS).unwrap();
        let sin_t = t.x;
        assert!((sin_t - theta.sin() / GLASS).abs() < 1e-6);
        assert!(t.y < 0.0);
    }

    #[test]
    fn total_internal_reflection_reflects_everything() {
        let theta = 60f32.to_radians();
        // Leaving glass (ior 1.5) at 60 degrees: beyond the critical angle of 41.8 degrees.
        let d = Vec3::new(theta.sin(), theta.cos(), 0.0);
        for mode in [FresnelMode::Exact, FresnelMode::Schlick] {
            let split = dielectric_split(d, Vec3::Y, Vec3::Y, GLASS, mode);
            assert_eq!(split.fresnel, 1.0);
            assert!(split.refracted.is_none());
        }
    }

    #[test]
    fn schlick_matches_normal_incidence_reflectance() {
        assert!((schlick_fresnel(1.0, GLASS) - 0.04).abs() < 1e-6);
        assert!((schlick_fresnel(0.0, GLASS) - 1.0).abs() < 1e-6);
    }

    #[test]
    fn exact_fresnel_is_0_04_at_normal_incidence_for_ior_1_5() {
        assert!((dielectric_fresnel(1.0, 1.0 / GLASS) - 0.04).abs() < 1e-6);
        // From inside the glass too.
        assert!((dielectric_fresnel(1.0, GLASS) - 0.04).abs() < 1e-6);
        let split = dielectric_split(-Vec3::Y, Vec3::Y, Vec3::Y, GLASS, FresnelMode::Exact);
        assert!((split.fresnel - 0.04).abs() < 1e-6);
    }

    #[test]
    fn exact_fresnel_is_one_beyond_the_critical_angle() {
        let critical = (1.0 / GLASS).asin();
        for degrees in [0.5f32, 5.0, 20.0, 40.0] {
            let theta = critical + degrees.to_radians();
            assert_eq!(dielectric_fresnel(theta.cos(), GLASS), 1.0, "{degrees}");
        }
        // Just inside the critical angle part of the light is transmitted, though more is
        // reflected than at normal incidence.
        let below = dielectric_fresnel((critical - 0.5f32.to_radians()).cos(), GLASS);
        assert!(below > 0.04 && below < 1.0, "{below}");
    }

    #[test]
    fn exact_fresnel_at_brewsters_angle_is_half_the_s_reflectance() {
        // Entering glass at Brewster's angle the p-polarised reflectance vanishes; the reflected
        // and refracted directions are perpendicular, so R_s = sin²(θi − θt) / sin²(θi + θt)
        // with θi + θt = 90°.
        let theta_i = GLASS.atan();
        let theta_t = (theta_i.sin() / GLASS).asin();
        assert!((theta_i + theta_t - std::f32::consts::FRAC_PI_2).abs() < 1e-6);
        let r_s = ((theta_i - theta_t).sin() / (theta_i + theta_t).sin()).powi(2);
        let f = exact_fresnel(theta_i.cos(), theta_t.cos(), 1.0 / GLASS);
        assert!((f - 0.5 * r_s).abs() < 1e-6, "{f} against {}", 0.5 * r_s);
        // Away from Brewster's angle the p part is not zero.
        let theta = theta_i - 0.3;
        let t = (theta.sin() / GLASS).asin();
        let r_s = ((theta - t).sin() / (theta + t).sin()).powi(2);
        assert!(exact_fresnel(theta.cos(), t.cos(), 1.0 / GLASS) > 0.5 * r_s + 1e-4);
    }

    #[test]
    fn exact_fresnel_entering_at_theta_i_equals_leaving_at_theta_t() {
        // The formulas agree exactly; the bound is the f32 rounding of cosines recomputed
        // through Snell's law, about 1e-4 relative near grazing (89°).
        let bound = 1e-4;
        for degrees in [0.0f32, 10.0, 30.0, 45.0, 60.0, 75.0, 85.0, 89.0] {
            let theta_i = degrees.to_radians();
            let theta_t = (theta_i.sin() / GLASS).asin();
            let entering = dielectric_fresnel(theta_i.cos(), 1.0 / GLASS);
            let leaving = dielectric_fresnel(theta_t.cos(), GLASS);
            assert!(
                (entering - leaving).abs() < bound,
                "{degrees}°: {entering} entering, {leaving} leaving"
            );
            // The same through the split of a ray, both ways across a surface with normal +Y.
            let into = dielectric_split(
                arriving(theta_i),
                Vec3::Y,
                Vec3::Y,
                GLASS,
                FresnelMode::Exact,
            );
            let out_of = dielectric_split(
                -arriving(theta_t) * Vec3::new(-1.0, 1.0, 1.0),
                Vec3::Y,
                Vec3::Y,
                GLASS,
                FresnelMode::Exact,
            );
            assert!(
                (into.fresnel - out_of.fresnel).abs() < bound,
                "{degrees}°: split {} entering, {} leaving",
                into.fresnel,
                out_of.fresnel
            );
        }
    }

    #[test]
    fn schlick_and_exact_fresnel_agree_within_0_01_near_normal_incidence() {
        for i in 0..=200 {
            let cos_i = 0.8 + 0.2 * i as f32 / 200.0;
            let exact = dielectric_fresnel(cos_i, 1.0 / GLASS);
            let schlick = schlick_fresnel(cos_i, GLASS);
            assert!(
                (exact - schlick).abs() < 0.01,
                "cos {cos_i}: exact {exact}, Schlick {schlick}"
            );
        }
    }

    #[test]
    fn exact_split_differs_from_schlick_split_where_the_approximation_is_loose() {
        // At 80° the two formulas differ by more than 0.01: the mode reaches the split.
        let d = arriving(80f32.to_radians());
        let exact = dielectric_split(d, Vec3::Y, Vec3::Y, GLASS, FresnelMode::Exact);
        let schlick = dielectric_split(d, Vec3::Y, Vec3::Y, GLASS, FresnelMode::Schlick);
        assert_eq!(exact.refracted, schlick.refracted);
        assert!((exact.fresnel - schlick.fresnel).abs() > 0.01);
        assert!(
            (exact.fresnel - dielectric_fresnel(80f32.to_radians().cos(), 1.0 / GLASS)).abs()
                < 1e-5
        );
    }

    #[test]
    fn conductor_fresnel_at_normal_incidence_is_the_closed_form() {
        let eta = Vec3::new(0.143, 0.374, 1.442);
        let k = Vec3::new(3.983, 2.386, 1.603);
        let expected = ((eta - 1.0) * (eta - 1.0) + k * k) / ((eta + 1.0) * (eta + 1.0) + k * k);
        let f = conductor_fresnel(1.0, eta, k);
        assert!(
            (f - expected).abs().max_element() < 1e-6,
            "{f} against {expected}"
        );
        // Gold reflects red far more than blue.
        assert!(f.x > 0.9 && f.z < 0.5, "{f}");
    }

    #[test]
    fn conductor_fresnel_tends_to_one_at_grazing_incidence() {
        let eta = Vec3::new(0.143, 0.374, 1.442);
        let k = Vec3::new(3.983, 2.386, 1.603);
        assert!(
            (conductor_fresnel(0.0, eta, k) - Vec3::ONE)
                .abs()
                .max_element()
                < 1e-6
        );
        let near = conductor_fresnel(1e-3, eta, k);
        assert!((near - Vec3::ONE).abs().max_element() < 0.01, "{near}");
        // A conductor with k = 0 is a dielectric seen from outside.
        let eta = Vec3::splat(GLASS);
        for cos in [1.0f32, 0.7, 0.3, 0.05] {
            let f = conductor_fresnel(cos, eta, Vec3::ZERO);
            let d = dielectric_fresnel(cos, 1.0 / GLASS);
            assert!((f.x - d).abs() < 1e-5, "cos {cos}: {} against {d}", f.x);
        }
    }

    #[test]
    fn specular_reflectance_is_constant_for_mirrors_and_angular_for_conductors() {
        let mirror = MaterialKind::Mirror {
            reflectance: Vec3::splat(0.9),
        };
        assert_eq!(specular_reflectance(&mirror, 0.2), Vec3::splat(0.9));
        let conductor = MaterialKind::Conductor {
            eta: Vec3::splat(0.2),
            k: Vec3::splat(3.0),
            tint: Vec3::new(1.0, 0.5, 0.25),
            roughness: 0.0,
            texture: None,
        };
        let f = conductor_fresnel(0.6, Vec3::splat(0.2), Vec3::splat(3.0));
        assert_eq!(
            specular_reflectance(&conductor, 0.6),
            f * Vec3::new(1.0, 0.5, 0.25)
        );
    }
}
