//! Ray-primitive tests: triangles (watertight) and quads as two triangles with their
//! patch parameter.

use glam::{Vec2, Vec3};

/// Intersects the ray `origin + t·dir` with triangle `(p0, p1, p2)` with the watertight test of
/// Woop, Benthin and Wald (JCGT 2013): rays through a shared edge or vertex hit at least one of
/// the triangles around it. Returns `(t, b1, b2)` where `b1`, `b2` are the barycentrics of `p1`
/// and `p2`, for `t_min < t < t_max`. Degenerate triangles, rays in the triangle's plane and
/// zero directions miss.
#[inline]
pub fn intersect_triangle(
    origin: Vec3,
    dir: Vec3,
    p0: Vec3,
    p1: Vec3,
    p2: Vec3,
    t_min: f32,
    t_max: f32,
) -> Option<(f32, f32, f32)> {
    // Permute axes so that z is the direction's largest component, keeping the winding.
    let abs = dir.abs();
    let kz = if abs.x >= abs.y && abs.x >= abs.z {
        0
    } else if abs.y >= abs.z {
        1
    } else {
        2
    };
    let (mut kx, mut ky) = ((kz + 1) % 3, (kz + 2) % 3);
    if dir[kz] < 0.0 {
        std::mem::swap(&mut kx, &mut ky);
    }
    if dir[kz] == 0.0 || !dir[kz].is_finite() {
        return None;
    }
    // Shear so that the ray runs along +z from the origin.
    let sz = 1.0 / dir[kz];
    let sx = dir[kx] * sz;
    let sy = dir[ky] * sz;
    let (a, b, c) = (p0 - origin, p1 - origin, p2 - origin);
    let (ax, ay) = (a[kx] - sx * a[kz], a[ky] - sy * a[kz]);
    let (bx, by) = (b[kx] - sx * b[kz], b[ky] - sy * b[kz]);
    let (cx, cy) = (c[kx] - sx * c[kz], c[ky] - sy * c[kz]);
    let mut u = cx * by - cy * bx;
    let mut v = ax * cy - ay * cx;
    let mut w = bx * ay - by * ax;
    if u == 0.0 || v == 0.0 || w == 0.0 {
        // On an edge in single precision: decide it in double precision.
        let e = |px: f32, py: f32, qx: f32, qy: f32| {
            (px as f64 * qy as f64 - py as f64 * qx as f64) as f32
        };
        u = e(cx, cy, bx, by);
        v = e(ax, ay, cx, cy);
        w = e(bx, by, ax, ay);
    }
    if (u < 0.0 || v < 0.0 || w < 0.0) && (u > 0.0 || v > 0.0 || w > 0.0) {
        return None;
    }
    let det = u + v + w;
    if det == 0.0 || !det.is_finite() {
        return None;
    }
    let t_scaled = u * (sz * a[kz]) + v * (sz * b[kz]) + w * (sz * c[kz]);
    let inv_det = 1.0 / det;
    let t = t_scaled * inv_det;
    (t > t_min && t < t_max).then_some((t, v * inv_det, w * inv_det))
}

/// Intersects a quad `v0 v1 v2 v3` as the triangles `(v0, v1, v2)` and `(v0, v2, v3)`.
/// Returns `t` and the patch parameter `(s, t)` (`v0` = (0,0), `v1` = (1,0), `v2` = (1,1),
/// `v3` = (0,1)), exact for parallelograms and piecewise linear otherwise.
#[inline]
pub fn intersect_quad(
    origin: Vec3,
    dir: Vec3,
    v: &[Vec3; 4],
    t_min: f32,
    t_max: f32,
) -> Option<(f32, Vec2)> {
    let first = intersect_triangle(origin, dir, v[0], v[1], v[2], t_min, t_max);
    let t_max = first.map_or(t_max, |(t, _, _)| t);
    if let Some((t, b1, b2)) = intersect_triangle(origin, dir, v[0], v[2], v[3], t_min, t_max) {
        return Some((t, Vec2::new(b1, b1 + b2)));
    }
    first.map(|(t, b1, b2)| (t, Vec2::new(b1 + b2, b2)))
}

/// The point at patch parameter `st` of quad `v` (on the triangle half that holds it) and that
/// half's geometric normal (unnormalised, from the winding).
pub fn quad_half_at(v: &[Vec3; 4], st: Vec2) -> (Vec3, Vec3) {
    if st.x >= st.y {
        // (v0, v1, v2): s = b1 + b2, t = b2.
        let (b1, b2) = (st.x - st.y, st.y);
        (
            v[0] + (v[1] - v[0]) * b1 + (v[2] - v[0]) * b2,
            (v[1] - v[0]).cross(v[2] - v[0]),
        )
    } else {
        // (v0, v2, v3): s = b1, t = b1 + b2.
        let (b1, b2) = (st.x, st.y - st.x);
        (
            v[0] + (v[2] - v[0]) * b1 + (v[3] - v[0]) * b2,
            (v[2] - v[0]).cross(v[3] - v[0]),
        )
    }
}

/// Intersects the ray `origin + t·dir` with the sphere of `radius` about the origin: the
/// nearer root of `|o + t·d|² = r²` in `(t_min, t_max)`, else the farther, with the sphere's
/// texture coordinates there ([`sphere_uv`]). The discriminant is computed from the ray's
/// closest approach to the centre (Pharr, Jakob and Humphreys, *PBR* 4th ed., 6.8.1), which
/// keeps its precision for small spheres far away. Twin of `intersect_sphere` in
/// `shaders/shared/intersect.wgsl`.
#[inline]
pub fn intersect_sphere(
    origin: Vec3,
    dir: Vec3,
    radius: f32,
    t_min: f32,
    t_max: f32,
) -> Option<(f32, Vec2)> {
    let a = dir.dot(dir);
    if !(a > 0.0 && a.is_finite()) {
        return None;
    }
    let b = 2.0 * dir.dot(origin);
    let c = origin.dot(origin) - radius * radius;
    let closest = origin - dir * (b / (2.0 * a));
    let length = closest.length();
    let discriminant = 4.0 * a * (radius + length) * (radius - length);
    if discriminant < 0.0 {
        return None;
    }
    let root = discriminant.sqrt();
    let q = if b < 0.0 {
        -0.5 * (b - root)
    } else {
        -0.5 * (b + root)
    };
    if q == 0.0 {
        return None;
    }
    let (mut t0, mut t1) = (q / a, c / q);
    if t0 > t1 {
        std::mem::swap(&mut t0, &mut t1);
    }
    let t = if t0 > t_min && t0 < t_max {
        t0
    } else if t1 > t_min && t1 < t_max {
        t1
    } else {
        return None;
    };
    Some((t, sphere_uv(origin + dir * t)))
}

/// Texture coordinates of a point on a sphere about the origin, as `scene::shapes::uv_sphere`
/// gives its vertices: `u = φ/2π` with `φ = atan2(−z, x)` in [0, 2π), `v = 1 − θ/π` with `θ`
/// from +Y.
#[inline]
pub fn sphere_uv(p: Vec3) -> Vec2 {
    let n = p.normalize_or(Vec3::Y);
    let mut phi = (-n.z).atan2(n.x);
    if phi < 0.0 {
        phi += std::f32::consts::TAU;
    }
    Vec2::new(
        phi / std::f32::consts::TAU,
        1.0 - n.y.clamp(-1.0, 1.0).acos() / std::f32::consts::PI,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triangle_hit_reports_distance_and_barycentrics() {
        let (t, b1, b2) = intersect_triangle(
            Vec3::new(0.25, 0.25, 1.0),
            Vec3::new(0.0, 0.0, -2.0),
            Vec3::ZERO,
            Vec3::X,
            Vec3::Y,
            0.0,
            10.0,
        )
        .unwrap();
        assert!((t - 0.5).abs() < 1e-6 && (b1 - 0.25).abs() < 1e-6 && (b2 - 0.25).abs() < 1e-6);
    }

    #[test]
    fn degenerate_triangle_and_parallel_ray_miss() {
        let o = Vec3::new(0.2, 0.2, 1.0);
        assert!(intersect_triangle(
            o,
            Vec3::NEG_Z,
            Vec3::ZERO,
            Vec3::X,
            Vec3::X * 2.0,
            0.0,
            10.0
        )
        .is_none());
        assert!(intersect_triangle(o, Vec3::X, Vec3::ZERO, Vec3::X, Vec3::Y, 0.0, 10.0).is_none());
    }

    #[test]
    fn ray_through_a_shared_vertex_hits_one_of_the_triangles_around_it() {
        // A fan of triangles around the origin in the plane z = 0.
        let ring: Vec<Vec3> = (0..7)
            .map(|i| Vec3::new((i as f32).cos(), (i as f32 * 0.9).sin(), 0.0))
            .collect();
        let origin = Vec3::new(0.0, 0.0, 1.0);
        let hits = (0..7)
            .filter(|&i| {
                intersect_triangle(
                    origin,
                    Vec3::NEG_Z,
                    Vec3::ZERO,
                    ring[i],
                    ring[(i + 1) % 7],
                    0.0,
                    10.0,
                )
                .is_some()
            })
            .count();
        assert!(hits >= 1);
    }

    #[test]
    fn parallelogram_quad_reports_its_exact_patch_parameter() {
        let v = [
            Vec3::ZERO,
            Vec3::new(2.0, 0.0, 0.0),
            Vec3::new(3.0, 1.0, 0.0),
            Vec3::new(1.0, 1.0, 0.0),
        ];
        for (s, t) in [(0.2, 0.7), (0.8, 0.1), (0.5, 0.5), (0.9, 0.95)] {
            let p = v[0] + (v[1] - v[0]) * s + (v[3] - v[0]) * t;
            let (hit_t, st) = intersect_quad(p + Vec3::Z, Vec3::NEG_Z, &v, 0.0, 10.0).unwrap();
            assert!((hit_t - 1.0).abs() < 1e-6);
            assert!((st - Vec2::new(s, t)).length() < 1e-5, "{st} vs ({s}, {t})");
            let (q, _) = quad_half_at(&v, st);
            assert!((q - p).length() < 1e-5);
        }
    }
}
