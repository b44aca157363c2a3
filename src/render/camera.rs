//! The camera model shared by both backends: pixel and lens samples to world-space rays.

use glam::{Mat4, Vec2, Vec3, Vec4};

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

/// The near and far planes of [`CameraModel::world_to_ndc`]'s depth, as pbrt-v4 writes it.
const NDC_NEAR: f32 = 1e-2;
const NDC_FAR: f32 = 1000.0;

impl CameraModel {
    /// World space to camera space (column vectors, `p_cam = M · p_world`): the camera at the
    /// origin, `+x` to the image's right, `+y` up, `+z` along the viewing direction (the
    /// left-handed camera space of pbrt and RenderMan that OpenEXR's `worldToCamera` means).
    pub fn world_to_camera(&self) -> Mat4 {
        let camera_to_world = Mat4::from_cols(
            self.right.extend(0.0),
            self.up.extend(0.0),
            self.forward.extend(0.0),
            self.origin.extend(1.0),
        );
        camera_to_world.inverse()
    }

    /// World space to normalised device coordinates (column vectors, homogeneous: divide by
    /// w): x from 0 at the image's left edge to 1 at its right, y from 0 at the top to 1 at the
    /// bottom, and z from 0 at 0.01 in front of the camera to 1 at 1000, as pbrt-v4's
    /// `worldToNDC`.
    pub fn world_to_ndc(&self) -> Mat4 {
        let (n, f) = (NDC_NEAR, NDC_FAR);
        // Camera space to NDC: u = (x / (z·hw) + 1) / 2, v = (1 − y / (z·hh)) / 2, w = z.
        let camera_to_ndc = Mat4::from_cols(
            Vec4::new(0.5 / self.half_width, 0.0, 0.0, 0.0),
            Vec4::new(0.0, -0.5 / self.half_height, 0.0, 0.0),
            Vec4::new(0.5, 0.5, f / (f - n), 1.0),
            Vec4::new(0.0, 0.0, -f * n / (f - n), 0.0),
        );
        camera_to_ndc * self.world_to_camera()
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
    fn the_view_matrices_put_the_camera_at_the_origin_and_the_image_corners_at_ndc_corners() {
        let camera = Camera {
            position: Vec3::new(1.0, 2.0, 3.0),
            look_at: Vec3::new(1.0, 2.0, -7.0),
            fov_deg: 60.0,
            ..Default::default()
        };
        let film = Film {
            width: 200,
            height: 100,
            ..Default::default()
        };
        let model = CameraModel::new(&camera, &film);
        let to_camera = model.world_to_camera();
        assert!(to_camera.transform_point3(camera.position).length() < 1e-5);
        let ahead = to_camera.transform_point3(camera.look_at);
        assert!(
            (ahead - Vec3::new(0.0, 0.0, 10.0)).length() < 1e-4,
            "{ahead}"
        );
        // The ray through the top-left corner meets NDC (0, 0); the bottom-right one (1, 1).
        let to_ndc = model.world_to_ndc();
        for (pixel, expected) in [
            (Vec2::ZERO, Vec2::ZERO),
            (Vec2::new(200.0, 100.0), Vec2::ONE),
            (Vec2::new(100.0, 50.0), Vec2::splat(0.5)),
        ] {
            let (o, d) = model.generate_ray(pixel, Vec2::ZERO);
            let p = to_ndc * (o + d * 5.0).extend(1.0);
            let ndc = Vec2::new(p.x, p.y) / p.w;
            assert!((ndc - expected).length() < 1e-4, "{pixel}: {ndc}");
        }
    }

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
