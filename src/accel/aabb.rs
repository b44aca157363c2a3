//! Axis-aligned bounding boxes and the robust ray-slab test used by every level of the hierarchy.

use glam::Vec3;

/// An axis-aligned box. The empty box has `min = +inf`, `max = -inf`, so that growing it by any
/// point or box gives that point or box.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Aabb {
    pub min: Vec3,
    pub max: Vec3,
}

impl Default for Aabb {
    fn default() -> Self {
        Aabb::EMPTY
    }
}

impl Aabb {
    pub const EMPTY: Aabb = Aabb {
        min: Vec3::INFINITY,
        max: Vec3::NEG_INFINITY,
    };

    pub fn new(min: Vec3, max: Vec3) -> Aabb {
        Aabb { min, max }
    }

    /// The smallest box holding every point of `points` (empty for no points).
    pub fn from_points(points: impl IntoIterator<Item = Vec3>) -> Aabb {
        points.into_iter().fold(Aabb::EMPTY, |b, p| b.grow_point(p))
    }

    pub fn grow_point(self, p: Vec3) -> Aabb {
        Aabb {
            min: self.min.min(p),
            max: self.max.max(p),
        }
    }

    pub fn union(self, other: Aabb) -> Aabb {
        Aabb {
            min: self.min.min(other.min),
            max: self.max.max(other.max),
        }
    }

    /// The box grown by `margin` on every side.
    pub fn expanded(self, margin: f32) -> Aabb {
        Aabb {
            min: self.min - Vec3::splat(margin),
            max: self.max + Vec3::splat(margin),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.min.x > self.max.x || self.min.y > self.max.y || self.min.z > self.max.z
    }

    pub fn centroid(&self) -> Vec3 {
        (self.min + self.max) * 0.5
    }

    /// Half of the surface area (the SAH only compares areas, so the factor 2 is left out).
    /// Zero for an empty box.
    pub fn half_area(&self) -> f32 {
        if self.is_empty() {
            return 0.0;
        }
        let d = self.max - self.min;
        d.x * d.y + d.y * d.z + d.z * d.x
    }

    /// Whether `other` lies inside this box (boundaries included).
    pub fn contains_box(&self, other: &Aabb) -> bool {
        other.is_empty() || (self.min.cmple(other.min).all() && self.max.cmpge(other.max).all())
    }

    pub fn contains_point(&self, p: Vec3) -> bool {
        self.min.cmple(p).all() && self.max.cmpge(p).all()
    }

    /// The box of the eight corners of this box under `transform`.
    pub fn transformed(&self, transform: &glam::Affine3A) -> Aabb {
        if self.is_empty() {
            return Aabb::EMPTY;
        }
        let mut out = Aabb::EMPTY;
        for i in 0..8 {
            let corner = Vec3::new(
                if i & 1 == 0 { self.min.x } else { self.max.x },
                if i & 2 == 0 { self.min.y } else { self.max.y },
                if i & 4 == 0 { self.min.z } else { self.max.z },
            );
            out = out.grow_point(transform.transform_point3(corner));
        }
        out
    }
}

/// Slack applied to the far slab distance so that rounding never culls a box whose face holds a
/// primitive the ray hits (Ize, "Robust BVH Ray Traversal", 2013: 1 + 2γ(3)).
const FAR_SLACK: f32 = 1.0 + 2.0 * (3.0 * f32::EPSILON * 0.5) / (1.0 - 3.0 * f32::EPSILON * 0.5);

/// A ray prepared for slab tests: origin and `1/dir` per axis (`±inf` for a zero component).
#[derive(Clone, Copy, Debug)]
pub struct SlabRay {
    pub origin: Vec3,
    pub inv_dir: Vec3,
}

impl SlabRay {
    pub fn new(origin: Vec3, dir: Vec3) -> SlabRay {
        SlabRay {
            origin,
            inv_dir: dir.recip(),
        }
    }

    /// The entry distance of the ray into `[min, max]` clipped to `[t_min, t_max]`, or `None`
    /// when the ray misses the box in that interval. A ray parallel to a slab that starts on
    /// one of its planes computes `0 · inf` = NaN there; that axis then counts as "inside"
    /// (the origin lies on the box's boundary), so no NaN escapes and boundary rays are kept.
    #[inline]
    pub fn entry(&self, min: Vec3, max: Vec3, t_min: f32, t_max: f32) -> Option<f32> {
        let (nx, fx) = slab(min.x, max.x, self.origin.x, self.inv_dir.x);
        let (ny, fy) = slab(min.y, max.y, self.origin.y, self.inv_dir.y);
        let (nz, fz) = slab(min.z, max.z, self.origin.z, self.inv_dir.z);
        let near = nx.max(ny).max(nz).max(t_min);
        let far = (fx.min(fy).min(fz) * FAR_SLACK).min(t_max);
        (near <= far).then_some(near)
    }

    /// [`SlabRay::entry`] for an [`Aabb`].
    #[inline]
    pub fn entry_box(&self, b: &Aabb, t_min: f32, t_max: f32) -> Option<f32> {
        self.entry(b.min, b.max, t_min, t_max)
    }
}

/// Entry and exit distances of one slab; NaN (origin on a plane, direction parallel) means
/// the whole line is inside that slab.
#[inline]
fn slab(lo: f32, hi: f32, origin: f32, inv_dir: f32) -> (f32, f32) {
    let a = (lo - origin) * inv_dir;
    let b = (hi - origin) * inv_dir;
    if a <= b {
        (a, b)
    } else if b < a {
        (b, a)
    } else {
        (f32::NEG_INFINITY, f32::INFINITY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ray_parallel_to_a_slab_neither_panics_nor_returns_nan() {
        let b = Aabb::new(Vec3::ZERO, Vec3::ONE);
        // Parallel to the x slabs, starting on the planes x = 0 and x = 1: the boundary counts.
        for x in [0.0, 1.0] {
            let r = SlabRay::new(Vec3::new(x, 0.5, -1.0), Vec3::new(0.0, 0.0, 1.0));
            assert_eq!(r.entry_box(&b, 0.0, f32::INFINITY), Some(1.0));
        }
        // On the plane of a flat box.
        let flat = Aabb::new(Vec3::new(0.0, 0.0, 0.0), Vec3::new(1.0, 0.0, 1.0));
        let r = SlabRay::new(Vec3::new(0.5, 0.0, -1.0), Vec3::Z);
        assert_eq!(r.entry_box(&flat, 0.0, f32::INFINITY), Some(1.0));
        // Parallel and inside: hits at z = 0.
        let r = SlabRay::new(Vec3::new(0.5, 0.5, -1.0), Vec3::new(0.0, 0.0, 1.0));
        assert_eq!(r.entry_box(&b, 0.0, f32::INFINITY), Some(1.0));
        // Parallel and outside: misses.
        let r = SlabRay::new(Vec3::new(2.0, 0.5, -1.0), Vec3::new(0.0, 0.0, 1.0));
        assert_eq!(r.entry_box(&b, 0.0, f32::INFINITY), None);
    }

    #[test]
    fn entry_is_clipped_to_the_ray_interval() {
        let b = Aabb::new(Vec3::ZERO, Vec3::ONE);
        let r = SlabRay::new(Vec3::new(0.5, 0.5, -1.0), Vec3::Z);
        assert_eq!(r.entry_box(&b, 0.0, 0.5), None);
        assert_eq!(r.entry_box(&b, 1.5, 10.0), Some(1.5));
        assert_eq!(r.entry_box(&b, 2.5, 10.0), None);
    }

    #[test]
    fn transformed_box_holds_the_transformed_corners() {
        let b = Aabb::new(Vec3::new(-1.0, 0.0, 2.0), Vec3::new(1.0, 3.0, 4.0));
        let m = glam::Affine3A::from_scale_rotation_translation(
            Vec3::new(2.0, 0.5, 1.0),
            glam::Quat::from_rotation_y(0.7),
            Vec3::new(1.0, 2.0, 3.0),
        );
        let t = b.transformed(&m);
        for p in [b.min, b.max, Vec3::new(-1.0, 3.0, 2.0)] {
            assert!(t.expanded(1e-5).contains_point(m.transform_point3(p)));
        }
    }
}
