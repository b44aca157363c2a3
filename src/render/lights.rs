//! Choosing points on lights for shadow rays where the choice needs more than the scene's own
//! records: a sphere light's points, uniform over the cone of directions it covers
//! ([`crate::scene::SphereLight`]). Twin of `sphere_light_point` in
//! `shaders/whitted/shade.wgsl`.

use glam::{Vec2, Vec3};

use super::photons::orthonormal_basis;
use crate::scene::SphereLight;

/// A shadow ray's point on a sphere light.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SphereLightSample {
    /// The point on the sphere's near side.
    pub point: Vec3,
    /// The sphere's outward unit normal there.
    pub normal: Vec3,
    /// The density per unit solid angle of the direction from the shading point.
    pub pdf: f32,
}

/// The point of `sphere` seen from `origin` in the direction chosen from the uniform numbers
/// `u`, uniform over the cone the sphere covers: the direction's angle θ to the axis has
/// `1 − cos θ = u.x (1 − cos θmax)`, and the point is where it first meets the sphere, found
/// by the angle α at the centre between the point and the origin,
/// `cos α = sin²θ / sin θmax + cos θ √(1 − sin²θ / sin²θmax)` (the law of sines in the triangle
/// origin–centre–point), which stays accurate at the cone's rim. `None` from inside the sphere.
pub fn sample_sphere_light(
    sphere: &SphereLight,
    origin: Vec3,
    u: Vec2,
) -> Option<SphereLightSample> {
    let cone = sphere.cone(origin)?;
    if cone.one_minus_cos.is_nan() || cone.one_minus_cos <= 0.0 {
        return None;
    }
    let one_minus_cos = u.x * cone.one_minus_cos;
    let cos = 1.0 - one_minus_cos;
    let sin2 = (one_minus_cos * (2.0 - one_minus_cos)).max(0.0);
    let ratio = (sin2 / cone.sin2_max).min(1.0);
    let cos_alpha = (sin2 / cone.sin2_max.sqrt() + cos * (1.0 - ratio).sqrt()).clamp(-1.0, 1.0);
    let sin_alpha = (1.0 - cos_alpha * cos_alpha).max(0.0).sqrt();
    let phi = 2.0 * std::f32::consts::PI * u.y;
    let (t, b) = orthonormal_basis(cone.axis);
    let normal = -cone.axis * cos_alpha + (t * phi.cos() + b * phi.sin()) * sin_alpha;
    Some(SphereLightSample {
        point: sphere.centre + normal * sphere.radius,
        normal,
        pdf: 1.0 / (2.0 * std::f32::consts::PI * cone.one_minus_cos),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn halton(i: u32, base: u32) -> f32 {
        let (mut f, mut r, mut i) = (1.0f32, 0.0f32, i);
        while i > 0 {
            f /= base as f32;
            r += f * (i % base) as f32;
            i /= base;
        }
        r
    }

    #[test]
    fn sampled_points_lie_on_the_near_side_inside_the_cone() {
        let sphere = SphereLight {
            centre: Vec3::new(0.3, 2.0, -0.5),
            radius: 0.7,
        };
        let origin = Vec3::new(0.1, -0.4, 0.2);
        let cone = sphere.cone(origin).unwrap();
        let cos_max = 1.0 - cone.one_minus_cos;
        for i in 0..4096 {
            let u = Vec2::new(halton(i + 1, 2), halton(i + 1, 3));
            let s = sample_sphere_light(&sphere, origin, u).unwrap();
            assert!(((s.point - sphere.centre).length() - sphere.radius).abs() < 1e-5);
            let dir = (s.point - origin).normalize();
            assert!(dir.dot(cone.axis) >= cos_max - 1e-5, "outside the cone");
            assert!(-s.normal.dot(dir) >= -1e-4, "the far side");
            // The first point along the direction: nothing of the sphere lies nearer.
            let b = dir.dot(sphere.centre - origin);
            let c = (sphere.centre - origin).length_squared() - sphere.radius * sphere.radius;
            let near = b - (b * b - c).max(0.0).sqrt();
            assert!(((s.point - origin).length() - near).abs() < 1e-4);
        }
    }

    /// A surface facing a sphere of radius r and radiance L at distance d from its centre gets
    /// irradiance π L (r/d)², exactly, whatever the sampler's cone.
    #[test]
    fn cone_samples_give_the_irradiance_a_facing_surface_gets_from_a_sphere() {
        for (radius, distance) in [(1.0f32, 3.0f32), (0.05, 10.0), (0.99, 1.0)] {
            let sphere = SphereLight {
                centre: Vec3::new(0.0, distance, 0.0),
                radius,
            };
            let n = 1 << 16;
            let mut sum = 0.0f64;
            for i in 0..n {
                let u = Vec2::new(halton(i + 1, 2), halton(i + 1, 3));
                let s = sample_sphere_light(&sphere, Vec3::ZERO, u).unwrap();
                let cos = (s.point).normalize().y;
                sum += (cos / s.pdf) as f64;
            }
            let estimate = sum / n as f64;
            let expected = std::f64::consts::PI * (radius as f64 / distance as f64).powi(2);
            assert!(
                (estimate / expected - 1.0).abs() < 2e-3,
                "r {radius} d {distance}: {estimate} against {expected}"
            );
        }
    }
}
