//! Vector-displacement maps and the surface they define on a quad patch.
//!
//! A VD patch is a quad `v0 v1 v2 v3` of a mesh that carries a map. Its surface is
//! `P(s,t) = Q(s,t) + D(s,t)` where `Q` is the bilinear quad, `(s,t) ∈ [0,1]²` its patch
//! parameter (`v0`→`v1` is `s`, `v0`→`v3` is `t`), and `D` the displacement read from the map at
//! the bilinearly interpolated vertex UV. In tangent space the map's three components are
//! coordinates in the frame [`patch_frame`]: `N` the quad's normal by its winding, `T` the
//! direction of increasing `u` in the tangent plane, `B = N × T`, evaluated at `(s,t)` clamped
//! to `[1e-3, 1-1e-3]` (so that collapsed edges still have a frame). This is the convention of
//! the baked teapot maps in `shared/assets`, whose `u` runs from `v0` to `v1`.

use std::path::PathBuf;
use std::sync::Arc;

use glam::{Vec2, Vec3};

use super::Span;

/// A float RGB image as stored in the file, row 0 at the top.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VdImage {
    pub width: u32,
    pub height: u32,
    pub texels: Vec<Vec3>,
}

impl VdImage {
    /// Checks that the image has texels and that there is one per pixel; the message says what
    /// is wrong.
    pub fn check_size(&self) -> Result<(), String> {
        if self.width == 0
            || self.height == 0
            || self.texels.len() != self.width as usize * self.height as usize
        {
            return Err(format!(
                "{} texels for a {}x{} map",
                self.texels.len(),
                self.width,
                self.height
            ));
        }
        Ok(())
    }

    /// Bilinear lookup with clamp-to-edge addressing; `uv` uses the OBJ convention (v = 1 is
    /// the top row, texel centres at half-integers).
    pub fn sample(&self, uv: Vec2) -> Vec3 {
        if self.width == 0 || self.height == 0 {
            return Vec3::ZERO;
        }
        let x = (uv.x * self.width as f32 - 0.5).clamp(0.0, (self.width - 1) as f32);
        let y = ((1.0 - uv.y) * self.height as f32 - 0.5).clamp(0.0, (self.height - 1) as f32);
        let x0 = x.floor() as u32;
        let y0 = y.floor() as u32;
        let x1 = (x0 + 1).min(self.width - 1);
        let y1 = (y0 + 1).min(self.height - 1);
        let fx = x - x0 as f32;
        let fy = y - y0 as f32;
        let t = |xi: u32, yi: u32| self.texels[(yi * self.width + xi) as usize];
        let top = t(x0, y0).lerp(t(x1, y0), fx);
        let bottom = t(x0, y1).lerp(t(x1, y1), fx);
        top.lerp(bottom, fy)
    }

    /// Largest texel length over the texels whose bilinear footprint touches the UV rectangle
    /// `[lo, hi]`, after `remap`. Bilinear interpolation never exceeds its corner values' largest
    /// length, so this bounds every lookup inside the rectangle.
    pub fn max_length_in(&self, lo: Vec2, hi: Vec2, remap: impl Fn(Vec3) -> Vec3) -> f32 {
        if self.width == 0 || self.height == 0 {
            return 0.0;
        }
        let to_x = |u: f32| (u * self.width as f32 - 0.5).clamp(0.0, (self.width - 1) as f32);
        let to_y =
            |v: f32| ((1.0 - v) * self.height as f32 - 0.5).clamp(0.0, (self.height - 1) as f32);
        let (xa, xb) = (to_x(lo.x.min(hi.x)), to_x(lo.x.max(hi.x)));
        let (ya, yb) = (to_y(lo.y.max(hi.y)), to_y(lo.y.min(hi.y)));
        let x0 = xa.floor() as u32;
        let x1 = (xb.ceil() as u32).min(self.width - 1);
        let y0 = ya.floor() as u32;
        let y1 = (yb.ceil() as u32).min(self.height - 1);
        let mut m = 0.0f32;
        for y in y0..=y1 {
            for x in x0..=x1 {
                m = m.max(remap(self.texels[(y * self.width + x) as usize]).length());
            }
        }
        m
    }
}

/// Which frame the map's vectors are expressed in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VdSpace {
    /// Object-space vectors, added to the base surface as they are.
    Object,
    /// Components along (T, B, N) of the patch frame described in the module docs.
    Tangent,
}

/// A named vector-displacement map with its conventions.
#[derive(Clone, Debug)]
pub struct VdMap {
    pub name: String,
    pub path: PathBuf,
    pub image: Arc<VdImage>,
    pub space: VdSpace,
    /// Displacement component `i` is the file's channel `channels[i]` (0 = R, 1 = G, 2 = B).
    /// Mudbox maps use `0 2 1`, Blender's `2 0 1` (LuxCore's convention).
    pub channels: [u8; 3],
    pub scale: f32,
    /// Value stored for "no displacement"; subtracted before scaling.
    pub midlevel: f32,
    /// Extra margin added to patch bounds, in object units.
    pub padding: f32,
    pub span: Span,
}

impl VdMap {
    /// Turns a stored texel into a displacement vector in the map's space.
    pub fn remap(&self, texel: Vec3) -> Vec3 {
        let c = texel.to_array();
        let v = Vec3::new(
            c[self.channels[0] as usize],
            c[self.channels[1] as usize],
            c[self.channels[2] as usize],
        );
        (v - Vec3::splat(self.midlevel)) * self.scale
    }

    /// Displacement vector in the map's space at `uv`.
    pub fn displacement(&self, uv: Vec2) -> Vec3 {
        self.remap(self.image.sample(uv))
    }

    /// An upper bound of the displacement length over a patch whose corner UVs are `uvs`.
    pub fn max_displacement(&self, uvs: &[Vec2; 4]) -> f32 {
        let lo = uvs
            .iter()
            .fold(Vec2::splat(f32::INFINITY), |a, &b| a.min(b));
        let hi = uvs
            .iter()
            .fold(Vec2::splat(f32::NEG_INFINITY), |a, &b| a.max(b));
        self.max_displacement_between(lo, hi)
    }

    /// The largest displacement length over the UV box with corners `a` and `b` (in any order).
    pub fn max_displacement_between(&self, a: Vec2, b: Vec2) -> f32 {
        self.image
            .max_length_in(a.min(b), a.max(b), |t| self.remap(t))
    }

    /// The displaced surface point of the patch at `(s,t)`, in object space.
    pub fn displaced_point(&self, corners: &[Vec3; 4], uvs: &[Vec2; 4], s: f32, t: f32) -> Vec3 {
        let base = bilinear(corners, s, t);
        let uv = bilinear2(uvs, s, t);
        let d = self.displacement(uv);
        match self.space {
            VdSpace::Object => base + d,
            VdSpace::Tangent => {
                let (tangent, bitangent, normal) = patch_frame(corners, uvs, s, t);
                base + tangent * d.x + bitangent * d.y + normal * d.z
            }
        }
    }
}

/// Bilinear interpolation over a quad with corners at (0,0), (1,0), (1,1), (0,1).
pub fn bilinear(c: &[Vec3; 4], s: f32, t: f32) -> Vec3 {
    c[0].lerp(c[1], s).lerp(c[3].lerp(c[2], s), t)
}

/// [`bilinear`] for 2D values.
pub fn bilinear2(c: &[Vec2; 4], s: f32, t: f32) -> Vec2 {
    c[0].lerp(c[1], s).lerp(c[3].lerp(c[2], s), t)
}

/// The tangent frame (T, B, N) of the bilinear quad with corner UVs `uvs` at `(s,t)` (see the
/// module docs): `N = normalize(∂Q/∂s × ∂Q/∂t)`, the quad's normal by its winding; `T` the
/// direction of increasing `u`, `∂Q/∂u` (from `∂Q/∂s`, `∂Q/∂t` and the inverse of the UV
/// Jacobian) made orthogonal to `N`; `B = N × T`, right-handed whatever the UVs' orientation.
/// Where the UVs are degenerate (`|det| < 1e-12`) `∂Q/∂s` stands in for `∂Q/∂u`. Returns an
/// arbitrary orthonormal frame when the quad is degenerate there. The GPU twin is
/// `displaced_point` in `shaders/vd/build_trace.wgsl`.
pub fn patch_frame(c: &[Vec3; 4], uvs: &[Vec2; 4], s: f32, t: f32) -> (Vec3, Vec3, Vec3) {
    let s = s.clamp(1e-3, 1.0 - 1e-3);
    let t = t.clamp(1e-3, 1.0 - 1e-3);
    let dqds = (c[1] - c[0]).lerp(c[2] - c[3], t);
    let dqdt = (c[3] - c[0]).lerp(c[2] - c[1], s);
    let n = dqds.cross(dqdt);
    if n.length_squared() < 1e-30 {
        return (Vec3::X, Vec3::Y, Vec3::Z);
    }
    let n = n.normalize();
    let duvds = (uvs[1] - uvs[0]).lerp(uvs[2] - uvs[3], t);
    let duvdt = (uvs[3] - uvs[0]).lerp(uvs[2] - uvs[1], s);
    let det = duvds.x * duvdt.y - duvdt.x * duvds.y;
    let dqdu = if det.abs() < 1e-12 || !det.is_finite() {
        dqds
    } else {
        (dqds * duvdt.y - dqdt * duvds.y) * (1.0 / det)
    };
    let mut tangent = dqdu - n * n.dot(dqdu);
    if tangent.length_squared() < 1e-30 {
        tangent = dqds - n * n.dot(dqds);
    }
    if tangent.length_squared() < 1e-30 {
        return (Vec3::X, Vec3::Y, Vec3::Z);
    }
    let tangent = tangent.normalize();
    (tangent, n.cross(tangent), n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(space: VdSpace, texels: Vec<Vec3>, w: u32, h: u32) -> VdMap {
        VdMap {
            name: "m".into(),
            path: PathBuf::new(),
            image: Arc::new(VdImage {
                width: w,
                height: h,
                texels,
            }),
            space,
            channels: [0, 1, 2],
            scale: 1.0,
            midlevel: 0.0,
            padding: 0.0,
            span: Span::NONE,
        }
    }

    const UNIT_UVS: [Vec2; 4] = [
        Vec2::new(0.0, 0.0),
        Vec2::new(1.0, 0.0),
        Vec2::new(1.0, 1.0),
        Vec2::new(0.0, 1.0),
    ];

    #[test]
    fn tangent_space_displacement_moves_along_the_quad_normal() {
        let m = map(VdSpace::Tangent, vec![Vec3::new(0.0, 0.0, 0.5); 4], 2, 2);
        let corners = [Vec3::ZERO, Vec3::X, Vec3::new(1.0, 0.0, -1.0), Vec3::NEG_Z];
        let p = m.displaced_point(&corners, &UNIT_UVS, 0.5, 0.5);
        assert!((p - Vec3::new(0.5, 0.5, -0.5)).length() < 1e-6, "{p}");
    }

    #[test]
    fn the_tangent_follows_increasing_u_and_the_normal_follows_the_winding() {
        let corners = [
            Vec3::ZERO,
            Vec3::new(2.0, 0.0, 0.0),
            Vec3::new(2.0, 1.0, 0.0),
            Vec3::new(0.0, 1.0, 0.0),
        ];
        // u runs along t (v0 → v3), v against s: T is +y, N stays +z, B = N × T = −x.
        let rotated = [
            Vec2::new(0.0, 1.0),
            Vec2::new(0.0, 0.0),
            Vec2::new(1.0, 0.0),
            Vec2::new(1.0, 1.0),
        ];
        let (t, b, n) = patch_frame(&corners, &rotated, 0.3, 0.6);
        assert!((t - Vec3::Y).length() < 1e-6, "{t}");
        assert!((n - Vec3::Z).length() < 1e-6, "{n}");
        assert!((b - Vec3::NEG_X).length() < 1e-6, "{b}");
        // v mirrored (runs against t, as in the teapot atlas): the frame stays right-handed.
        let mirrored = [
            Vec2::new(0.0, 1.0),
            Vec2::new(1.0, 1.0),
            Vec2::new(1.0, 0.0),
            Vec2::new(0.0, 0.0),
        ];
        let (t, b, n) = patch_frame(&corners, &mirrored, 0.5, 0.5);
        assert!((t - Vec3::X).length() < 1e-6 && (b - Vec3::Y).length() < 1e-6);
        assert!((n - Vec3::Z).length() < 1e-6);
    }

    #[test]
    fn channel_order_and_midlevel_are_applied() {
        let mut m = map(VdSpace::Object, vec![Vec3::new(1.0, 2.0, 3.0)], 1, 1);
        m.channels = [2, 0, 1];
        m.midlevel = 1.0;
        m.scale = 0.5;
        assert_eq!(m.displacement(Vec2::splat(0.5)), Vec3::new(1.0, 0.0, 0.5));
    }

    #[test]
    fn max_displacement_bounds_every_lookup_in_the_patch() {
        let texels: Vec<Vec3> = (0..64)
            .map(|i| Vec3::new((i as f32 * 0.37).sin(), 0.0, (i % 7) as f32 * 0.1))
            .collect();
        let m = map(VdSpace::Object, texels, 8, 8);
        let uvs = [
            Vec2::new(0.1, 0.2),
            Vec2::new(0.4, 0.2),
            Vec2::new(0.4, 0.6),
            Vec2::new(0.1, 0.6),
        ];
        let bound = m.max_displacement(&uvs);
        for i in 0..=20 {
            for j in 0..=20 {
                let uv = bilinear2(&uvs, i as f32 / 20.0, j as f32 / 20.0);
                assert!(m.displacement(uv).length() <= bound + 1e-6);
            }
        }
    }
}
