//! An emissive analytic sphere as a light (`mesh { sphere analytic }` with an emissive
//! material): its centre and radius in world space, and the density with which shadow rays
//! choose directions towards it. Seen from a point outside, the sphere covers a cone of
//! directions; shadow rays are spread uniformly over that cone (as pbrt's and Mitsuba's
//! sphere lights), which is exact in solid angle where area sampling wastes the far side.
//! Points inside receive nothing: the sphere emits from its outer side. The sampler is
//! `render::lights::sample_sphere_light`; the GPU twins are in `shaders/whitted/shade.wgsl`.

use glam::{Affine3A, Vec3};

/// A sphere light's geometry in world space.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SphereLight {
    pub centre: Vec3,
    pub radius: f32,
}

/// The cone of directions a sphere covers as seen from a point outside it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SphereCone {
    /// Unit direction from the point to the centre.
    pub axis: Vec3,
    /// Distance from the point to the centre.
    pub distance: f32,
    /// `sin²` of the cone's half-angle, `(r / d)²`.
    pub sin2_max: f32,
    /// `1 − cos` of the cone's half-angle, computed without cancellation for small spheres.
    pub one_minus_cos: f32,
}

impl SphereLight {
    /// The sphere of `radius` about the object-space origin placed by `transform`, when the
    /// transform scales every axis alike (rotations and reflections allowed): the world-space
    /// radius is `radius` times that scale. `None` for a shear or an uneven scale, which makes
    /// an ellipsoid.
    pub fn placed(radius: f32, transform: &Affine3A) -> Option<SphereLight> {
        let m = transform.matrix3;
        let lengths = [m.x_axis.length(), m.y_axis.length(), m.z_axis.length()];
        let scale = lengths[0];
        let orthogonal = m.x_axis.dot(m.y_axis).abs()
            + m.y_axis.dot(m.z_axis).abs()
            + m.z_axis.dot(m.x_axis).abs();
        let uniform = lengths.iter().all(|l| (l - scale).abs() <= 1e-4 * scale)
            && orthogonal <= 1e-4 * scale * scale;
        let world_radius = radius * scale;
        (uniform && world_radius > 0.0 && world_radius.is_finite()).then(|| SphereLight {
            centre: transform.translation.into(),
            radius: world_radius,
        })
    }

    pub fn area(&self) -> f32 {
        4.0 * std::f32::consts::PI * self.radius * self.radius
    }

    /// The cone the sphere covers from `origin`; `None` from inside or on the sphere.
    pub fn cone(&self, origin: Vec3) -> Option<SphereCone> {
        let to_centre = self.centre - origin;
        let d2 = to_centre.length_squared();
        let r2 = self.radius * self.radius;
        if d2.is_nan() || d2 <= r2 {
            return None;
        }
        let sin2_max = r2 / d2;
        let cos_max = (1.0 - sin2_max).max(0.0).sqrt();
        let distance = d2.sqrt();
        Some(SphereCone {
            axis: to_centre / distance,
            distance,
            sin2_max,
            one_minus_cos: sin2_max / (1.0 + cos_max),
        })
    }

    /// The density per unit solid angle with which one shadow ray from `origin` chooses its
    /// direction: uniform over the cone, `1 / (2π (1 − cos θmax))`; 0 from inside.
    pub fn pdf(&self, origin: Vec3) -> f32 {
        match self.cone(origin) {
            Some(c) if c.one_minus_cos > 0.0 => {
                1.0 / (2.0 * std::f32::consts::PI * c.one_minus_cos)
            }
            _ => 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uniformly_scaled_rotated_sphere_is_a_sphere_light_and_a_stretched_one_is_not() {
        let t = Affine3A::from_scale_rotation_translation(
            Vec3::splat(2.0),
            glam::Quat::from_rotation_y(0.7),
            Vec3::new(1.0, 2.0, 3.0),
        );
        let s = SphereLight::placed(0.5, &t).unwrap();
        assert_eq!(s.centre, Vec3::new(1.0, 2.0, 3.0));
        assert!((s.radius - 1.0).abs() < 1e-6);
        let stretched = Affine3A::from_scale(Vec3::new(1.0, 2.0, 1.0));
        assert_eq!(SphereLight::placed(0.5, &stretched), None);
    }

    #[test]
    fn the_cone_density_integrates_to_one_over_the_cone_and_vanishes_inside() {
        let s = SphereLight {
            centre: Vec3::new(0.0, 3.0, 0.0),
            radius: 1.0,
        };
        // Half-angle asin(1/3): the cone's solid angle is 2π(1 − cos θ).
        let cos_max = (1.0f32 - 1.0 / 9.0).sqrt();
        let solid_angle = 2.0 * std::f32::consts::PI * (1.0 - cos_max);
        assert!((s.pdf(Vec3::ZERO) * solid_angle - 1.0).abs() < 1e-5);
        assert_eq!(s.pdf(Vec3::new(0.0, 3.5, 0.0)), 0.0);
        // A far, small sphere keeps its density finite and right: 1 − cos ≈ sin²/2.
        let far = SphereLight {
            centre: Vec3::new(0.0, 0.0, 1.0e4),
            radius: 1.0,
        };
        let expected = 1.0 / (2.0 * std::f32::consts::PI * 0.5e-8);
        assert!((far.pdf(Vec3::ZERO) / expected - 1.0).abs() < 1e-4);
    }
}
