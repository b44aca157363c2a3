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

    /// The whole image as a window.
    pub fn window(&self) -> VdWindow<'_> {
        VdWindow {
            image: self,
            x0: 0,
            y0: 0,
            width: self.width,
            height: self.height,
        }
    }

    /// An empty window of the image: a tile the map lacks.
    pub fn no_window(&self) -> VdWindow<'_> {
        VdWindow {
            width: 0,
            height: 0,
            ..self.window()
        }
    }

    /// Bilinear lookup over the whole image with clamp-to-edge addressing ([`VdWindow::sample`]).
    pub fn sample(&self, uv: Vec2) -> Vec3 {
        self.window().sample(uv)
    }
}

/// A rectangle of an image's texels that one patch reads: the whole image of an atlas or a
/// UDIM tile, or one face's square of a per-face map. Lookups clamp to the window's edges, so a
/// patch never blends in a neighbouring tile. An empty window (`width` or `height` 0) stands for
/// a tile the map lacks: the patch is not displaced.
#[derive(Clone, Copy, Debug)]
pub struct VdWindow<'a> {
    pub image: &'a VdImage,
    pub x0: u32,
    pub y0: u32,
    pub width: u32,
    pub height: u32,
}

impl VdWindow<'_> {
    pub fn is_empty(&self) -> bool {
        self.width == 0 || self.height == 0
    }

    fn texel(&self, x: u32, y: u32) -> Vec3 {
        self.image.texels[((self.y0 + y) * self.image.width + self.x0 + x) as usize]
    }

    /// Bilinear lookup with clamp-to-edge addressing; `uv` uses the OBJ convention (v = 1 is
    /// the window's top row, texel centres at half-integers).
    pub fn sample(&self, uv: Vec2) -> Vec3 {
        if self.is_empty() {
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
        let top = self.texel(x0, y0).lerp(self.texel(x1, y0), fx);
        let bottom = self.texel(x0, y1).lerp(self.texel(x1, y1), fx);
        top.lerp(bottom, fy)
    }

    /// Largest texel length over the texels whose bilinear footprint touches the UV rectangle
    /// `[lo, hi]`, after `remap`. Bilinear interpolation never exceeds its corner values' largest
    /// length, so this bounds every lookup inside the rectangle.
    pub fn max_length_in(&self, lo: Vec2, hi: Vec2, remap: impl Fn(Vec3) -> Vec3) -> f32 {
        if self.is_empty() {
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
                m = m.max(remap(self.texel(x, y)).length());
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

/// How a map's texels are addressed: which image, and which window of it, a patch reads, and
/// the UVs it reads them at ([`VdMap::surface`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VdLayout {
    /// One image over the mesh's vertex UVs (an atlas).
    Uv,
    /// UDIM tiles, as Mari, Mudbox and ZBrush write them: `images[i]` is tile `numbers[i]`
    /// (ascending), `1001 + U + 10·V` for the UV square `[U, U+1) × [V, V+1)`, `U` in 0..10.
    /// A patch reads the tile under the centre of its UVs, at its UVs minus `(U, V)`; a patch
    /// whose tile is missing is not displaced.
    Udim { numbers: Vec<u32> },
    /// One square of `tile`×`tile` texels per quad, addressed by the quad's index `k` in its
    /// mesh, as Ptex addresses faces: column `k mod c`, row `k div c` from the top left of
    /// `images[0]`, `c = width div tile`. A patch reads its square at its own parameter,
    /// `uv = (s, t)` (`u` along `v0 → v1`, `v` along `v0 → v3`, `v = 1` the square's top row);
    /// the mesh's UVs are not used. Quads past the last square are not displaced.
    PerFace { tile: u32 },
}

/// What a map's file name writes where its UDIM tile goes: `<UDIM>`, the tile's number (Mari,
/// `name.1001.exr`), or `<UVTILE>`, its column and row from 1 (Mudbox, `name_u1_v1.exr`).
pub const UDIM_TOKENS: [&str; 2] = ["<UDIM>", "<UVTILE>"];

/// The UDIM tile number of the UV square holding `uv`, with the square's corner; `None` outside
/// the ten columns `0 <= u < 10` and `v >= 0` (or past tile 9999).
pub fn udim_tile(uv: Vec2) -> Option<(u32, Vec2)> {
    let (u, v) = (uv.x.floor(), uv.y.floor());
    if !(0.0..10.0).contains(&u) || !(0.0..900.0).contains(&v) {
        return None;
    }
    Some((1001 + u as u32 + 10 * v as u32, Vec2::new(u, v)))
}

/// The UDIM tile a quad with corner UVs `uvs` reads: the one under their centre
/// ([`udim_tile`]).
pub fn quad_udim_tile(uvs: &[Vec2; 4]) -> Option<(u32, Vec2)> {
    udim_tile((uvs[0] + uvs[1] + uvs[2] + uvs[3]) * 0.25)
}

/// The UVs a per-face patch reads its square at: its own parameter `(s, t)` at the corners.
pub const PER_FACE_UVS: [Vec2; 4] = [
    Vec2::new(0.0, 0.0),
    Vec2::new(1.0, 0.0),
    Vec2::new(1.0, 1.0),
    Vec2::new(0.0, 1.0),
];

/// A named vector-displacement map with its conventions.
#[derive(Clone, Debug)]
pub struct VdMap {
    pub name: String,
    /// The file as written in the scene, resolved (for UDIM maps, with its tile token).
    pub path: PathBuf,
    /// The map's images: one for [`VdLayout::Uv`] and [`VdLayout::PerFace`], one per tile for
    /// [`VdLayout::Udim`].
    pub images: Vec<Arc<VdImage>>,
    pub layout: VdLayout,
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
    /// A map of one image addressed by the mesh's UVs, with the default conventions (tangent
    /// space, channels `0 1 2`, scale 1, midlevel 0, no padding).
    pub fn atlas(name: &str, image: Arc<VdImage>) -> VdMap {
        VdMap {
            name: name.to_string(),
            path: PathBuf::new(),
            images: vec![image],
            layout: VdLayout::Uv,
            space: VdSpace::Tangent,
            channels: [0, 1, 2],
            scale: 1.0,
            midlevel: 0.0,
            padding: 0.0,
            span: Span::NONE,
        }
    }

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

    /// What quad `quad` of a mesh reads, given its vertex UVs `uvs`: the surface (this map's
    /// conventions over one window of texels) and the UVs to read it at (see [`VdLayout`]).
    pub fn surface(&self, quad: u32, uvs: &[Vec2; 4]) -> (VdSurface<'_>, [Vec2; 4]) {
        let (window, local) = match &self.layout {
            VdLayout::Uv => (self.first_image().window(), *uvs),
            VdLayout::Udim { numbers } => {
                let tile = quad_udim_tile(uvs).and_then(|(n, corner)| {
                    let image = self.images.get(numbers.binary_search(&n).ok()?)?;
                    Some((image, corner))
                });
                match tile {
                    Some((image, corner)) => (image.window(), uvs.map(|uv| uv - corner)),
                    None => (self.first_image().no_window(), *uvs),
                }
            }
            VdLayout::PerFace { tile } => {
                let image = self.first_image();
                let columns = image.width / tile.max(&1);
                let rows = image.height / tile.max(&1);
                let window = if columns == 0 || quad / columns >= rows {
                    image.no_window()
                } else {
                    VdWindow {
                        image,
                        x0: quad % columns * tile,
                        y0: quad / columns * tile,
                        width: *tile,
                        height: *tile,
                    }
                };
                (window, PER_FACE_UVS)
            }
        };
        (VdSurface { map: self, window }, local)
    }

    /// The map's first image, or an empty one for a map without images (which then displaces
    /// nothing; the scene language never makes one).
    fn first_image(&self) -> &VdImage {
        static NONE: VdImage = VdImage {
            width: 0,
            height: 0,
            texels: Vec::new(),
        };
        self.images.first().map_or(&NONE, |image| &**image)
    }

    /// The surface of an atlas map ([`VdLayout::Uv`]) over its one image, the same for every
    /// quad.
    pub fn whole(&self) -> VdSurface<'_> {
        VdSurface {
            map: self,
            window: self.first_image().window(),
        }
    }
}

/// What one patch reads: a map's conventions over one window of its texels.
#[derive(Clone, Copy, Debug)]
pub struct VdSurface<'a> {
    pub map: &'a VdMap,
    pub window: VdWindow<'a>,
}

impl<'a> From<&'a VdMap> for VdSurface<'a> {
    /// [`VdMap::whole`].
    fn from(map: &'a VdMap) -> VdSurface<'a> {
        map.whole()
    }
}

impl VdSurface<'_> {
    /// Displacement vector in the map's space at `uv` (zero where the map has no tile).
    pub fn displacement(&self, uv: Vec2) -> Vec3 {
        if self.window.is_empty() {
            return Vec3::ZERO;
        }
        self.map.remap(self.window.sample(uv))
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
        self.window
            .max_length_in(a.min(b), a.max(b), |t| self.map.remap(t))
    }

    /// The displaced surface point of the patch at `(s,t)`, in object space.
    pub fn displaced_point(&self, corners: &[Vec3; 4], uvs: &[Vec2; 4], s: f32, t: f32) -> Vec3 {
        let base = bilinear(corners, s, t);
        let uv = bilinear2(uvs, s, t);
        let d = self.displacement(uv);
        match self.map.space {
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
            space,
            ..VdMap::atlas(
                "m",
                Arc::new(VdImage {
                    width: w,
                    height: h,
                    texels,
                }),
            )
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
        let p = m.whole().displaced_point(&corners, &UNIT_UVS, 0.5, 0.5);
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
        assert_eq!(
            m.whole().displacement(Vec2::splat(0.5)),
            Vec3::new(1.0, 0.0, 0.5)
        );
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
        let bound = m.whole().max_displacement(&uvs);
        for i in 0..=20 {
            for j in 0..=20 {
                let uv = bilinear2(&uvs, i as f32 / 20.0, j as f32 / 20.0);
                assert!(m.whole().displacement(uv).length() <= bound + 1e-6);
            }
        }
    }

    fn constant(width: u32, height: u32, value: Vec3) -> Arc<VdImage> {
        Arc::new(VdImage {
            width,
            height,
            texels: vec![value; (width * height) as usize],
        })
    }

    #[test]
    fn udim_tile_numbers_follow_the_mari_convention() {
        assert_eq!(udim_tile(Vec2::new(0.5, 0.5)), Some((1001, Vec2::ZERO)));
        assert_eq!(
            udim_tile(Vec2::new(9.5, 0.2)),
            Some((1010, Vec2::new(9.0, 0.0)))
        );
        assert_eq!(
            udim_tile(Vec2::new(1.25, 2.75)),
            Some((1022, Vec2::new(1.0, 2.0)))
        );
        assert_eq!(udim_tile(Vec2::new(10.5, 0.5)), None);
        assert_eq!(udim_tile(Vec2::new(-0.5, 0.5)), None);
        assert_eq!(udim_tile(Vec2::new(0.5, f32::NAN)), None);
    }

    #[test]
    fn a_udim_patch_reads_the_tile_under_its_centre_at_tile_local_uvs() {
        let mut m = map(VdSpace::Object, vec![], 0, 0);
        m.images = vec![
            constant(2, 2, Vec3::new(1.0, 0.0, 0.0)),
            constant(4, 4, Vec3::new(0.0, 2.0, 0.0)),
        ];
        m.layout = VdLayout::Udim {
            numbers: vec![1001, 1012],
        };
        // A quad on tile 1012 (u in [1, 2], v in [1, 2]) whose corners touch its borders.
        let uvs = [
            Vec2::new(1.0, 1.0),
            Vec2::new(2.0, 1.0),
            Vec2::new(2.0, 2.0),
            Vec2::new(1.0, 2.0),
        ];
        let (surface, local) = m.surface(0, &uvs);
        assert_eq!(local, UNIT_UVS);
        assert_eq!(surface.window.width, 4);
        assert_eq!(
            surface.displacement(Vec2::new(1.0, 1.0)),
            Vec3::new(0.0, 2.0, 0.0)
        );
        // Tile 1002 is missing: no displacement, and a bound of zero.
        let missing = uvs.map(|uv| uv - Vec2::new(0.0, 1.0));
        let (surface, _) = m.surface(0, &missing);
        assert!(surface.window.is_empty());
        assert_eq!(surface.displacement(Vec2::new(1.5, 0.5)), Vec3::ZERO);
        assert_eq!(surface.max_displacement(&missing), 0.0);
    }

    #[test]
    fn a_per_face_patch_reads_its_own_square_and_clamps_inside_it() {
        // A 4×2 image of 2×2 squares: face 0 reads the left square, face 1 the right one.
        let mut texels = vec![Vec3::ZERO; 8];
        for y in 0..2 {
            texels[y * 4 + 2] = Vec3::X;
            texels[y * 4 + 3] = Vec3::X;
        }
        let mut m = map(VdSpace::Object, texels, 4, 2);
        m.layout = VdLayout::PerFace { tile: 2 };
        let uvs = [Vec2::splat(0.7); 4];
        let (left, local) = m.surface(0, &uvs);
        assert_eq!(local, PER_FACE_UVS);
        // At the right edge of square 0 the lookup clamps to its own texels, never square 1's.
        assert_eq!(left.displacement(Vec2::new(1.0, 0.5)), Vec3::ZERO);
        let (right, _) = m.surface(1, &uvs);
        assert_eq!(right.displacement(Vec2::new(0.0, 0.5)), Vec3::X);
        assert_eq!((right.window.x0, right.window.y0), (2, 0));
        // Face 2 has no square.
        let (past, _) = m.surface(2, &uvs);
        assert!(past.window.is_empty());
    }

    #[test]
    fn a_map_without_images_displaces_nothing_in_any_layout() {
        let mut m = map(VdSpace::Object, vec![], 0, 0);
        m.images.clear();
        for layout in [
            VdLayout::Uv,
            VdLayout::Udim {
                numbers: vec![1001],
            },
            VdLayout::PerFace { tile: 0 },
        ] {
            m.layout = layout;
            let (surface, _) = m.surface(3, &UNIT_UVS);
            assert!(surface.window.is_empty());
            assert_eq!(surface.displacement(Vec2::splat(0.5)), Vec3::ZERO);
            assert_eq!(surface.max_displacement(&UNIT_UVS), 0.0);
        }
    }
}
