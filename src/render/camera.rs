//! The camera model shared by both backends: pixel and lens samples to world-space rays.

use glam::{Vec2, Vec3};

use crate::scene::{Camera, Film};

/// A pinhole or thin-lens perspective camera, precomputed for one film size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CameraModel {
    pub origin: Vec3,
    /// Unit axes of the camera frame: right, up, and forward (towards `look_at`).
    pub right: Vec3,
    pub up: Vec3,
    pub forward: Vec3,
    /// Half extents of the image plane at distance 1.
    pub half_width: f32,
    pub half_height: f32,
    pub lens_radius: f32,
    pub focus_distance: f32,
    pub width: u32,
    pub height: u32,
}

impl CameraModel {
    pub fn new(camera: &Camera, film: &Film) -> CameraModel {
        let forward = (camera.look_at - camera.position)
            .try_normalize()
            .unwrap_or(Vec3::NEG_Z);
        let mut right = forward
            .cross(camera.up)
            .try_normalize()
            .unwrap_or(Vec3::ZERO);
        if right == Vec3::ZERO {
            // `up` is parallel to the view direction: pick any perpendicular axis.
            right = forward.any_orthonormal_vector();
        }
        let up = right.cross(forward);
        let half_height = (camera.fov_deg.to_radians() * 0.5).tan();
        let aspect = film.width.max(1) as f32 / film.height.max(1) as f32;
        CameraModel {
            origin: camera.position,
            right,
            up,
            forward,
            half_width: half_height * aspect,
            half_height,
            lens_radius: camera.lens_radius.max(0.0),
            focus_distance: camera.focus_distance.max(1e-6),
            width: film.width.max(1),
            height: film.height.max(1),
        }
    }

    /// The ray through film position `pixel` (continuous pixel coordinates, (0,0) at the top-left
    /// corner of the image, (width, height) at the bottom-right) and lens sample `lens` in
    /// [0,1)². Returns `(origin, unit direction)`.
    pub fn generate_ray(&self, pixel: Vec2, lens: Vec2) -> (Vec3, Vec3) {
        let ndc_x = pixel.x / self.width as f32 * 2.0 - 1.0;
        let ndc_y = 1.0 - pixel.y / self.height as f32 * 2.0;
        let dir = (self.forward
            + self.right * (ndc_x * self.half_width)
            + self.up * (ndc_y * self.half_height))
            .normalize();
        if self.lens_radius <= 0.0 {
            return (self.origin, dir);
        }
        let focus_point = self.origin + dir * (self.focus_distance / dir.dot(self.forward));
        let disk = concentric_disk(lens) * self.lens_radius;
        let origin = self.origin + self.right * disk.x + self.up * disk.y;
        (origin, (focus_point - origin).normalize())
    }
}

/// Shirley–Chiu concentric mapping of the unit square onto the unit disk.
pub fn concentric_disk(u: Vec2) -> Vec2 {
    let o = u * 2.0 - Vec2::ONE;
    if o == Vec2::ZERO {
        return Vec2::ZERO;
    }
    let (r, theta) = if o.x.abs() > o.y.abs() {
        (o.x, std::f32::consts::FRAC_PI_4 * (o.y / o.x))
    } else {
        (
            o.y,
            std::f32::consts::FRAC_PI_2 - std::f32::consts::FRAC_PI_4 * (o.x / o.y),
        )
    };
    Vec2::new(theta.cos(), theta.sin()) * r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn centre_pixel_looks_at_the_target_and_corners_span_the_fov() {
        let camera = Camera {
            position: Vec3::new(0.0, 1.0, 5.0),
            look_at: Vec3::new(0.0, 1.0, 0.0),
            fov_deg: 90.0,
            ..Default::default()
        };
        let film = Film {
            width: 200,
            height: 100,
            ..Default::default()
        };
        let model = CameraModel::new(&camera, &film);
        let (o, d) = model.generate_ray(Vec2::new(100.0, 50.0), Vec2::ZERO);
        assert_eq!(o, camera.position);
        assert!((d - Vec3::NEG_Z).length() < 1e-6);
        // Top edge centre: 45 degrees up for a 90 degree vertical fov.
        let (_, top) = model.generate_ray(Vec2::new(100.0, 0.0), Vec2::ZERO);
        assert!(
            (top.y - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-5,
            "{top}"
        );
        // Left edge: twice the vertical extent because of the 2:1 aspect.
        let (_, left) = model.generate_ray(Vec2::new(0.0, 50.0), Vec2::ZERO);
        assert!((left.x / -left.z + 2.0).abs() < 1e-5, "{left}");
    }

    #[test]
    fn thin_lens_rays_converge_on_the_focus_plane() {
        let camera = Camera {
            lens_radius: 0.2,
            focus_distance: 4.0,
            ..Default::default()
        };
        let film = Film {
            width: 64,
            height: 64,
            ..Default::default()
        };
        let model = CameraModel::new(&camera, &film);
        let pixel = Vec2::new(10.0, 20.0);
        let (o0, d0) = model.generate_ray(pixel, Vec2::new(0.1, 0.9));
        let (o1, d1) = model.generate_ray(pixel, Vec2::new(0.8, 0.3));
        assert_ne!(o0, o1);
        let p0 = o0 + d0 * (4.0 / d0.dot(model.forward));
        let p1 = o1 + d1 * (4.0 / d1.dot(model.forward));
        assert!((p0 - p1).length() < 1e-4, "{p0} {p1}");
    }
}
