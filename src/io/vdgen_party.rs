//! The procedural "Party" scene of `scenes/party/party.csc`: a crowd of blobby figures on a ground
//! grid, every quad a distinct vector-displacement patch with its own tile of one map atlas, and
//! no instancing (the analogue of the "Party" scene of paper 000, Figure 1.1 and Table 1.1).
//!
//! `cargo run --release --example make_party -- scenes/party` regenerates the files; the test
//! `tests/party_scene.rs` checks that the committed files equal what [`party_files`] and
//! [`party_atlas`] produce.
//!
//! # The atlas
//!
//! One `W`×`W` half-float EXR, `W = 8·K + 1` with `K = 127` ([`TILES_PER_SIDE`]), so
//! `W = 1017`. Tile `(a, b)` (column `a`, row `b` from the top, tile index `i = b·K + a`) covers
//! the texels `8a ..= 8a+8` × `8b ..= 8b+8`: neighbouring tiles share their border row or column
//! of texels, and every texel whose column or row is a multiple of 8 is zero. A patch using tile
//! `(a, b)` has the vertex UVs of the texel centres at its corners,
//!
//! ```text
//! u = (8a + ½ + 8s) / W,   v = 1 − (8b + 8 + ½ − 8t) / W          (s, t) ∈ {0, 1}²
//! ```
//!
//! so the bilinear lookup at patch parameter `(s, t)` lands exactly on the tile's texel grid and
//! the displacement is exactly zero along every patch edge: neighbouring patches meet without
//! cracks whatever tiles they use. Texel `(8a + p, 8b + q)`, `p, q ∈ 0..=8`, holds the
//! displacement at `s = p/8`, `t = 1 − q/8`. Tiles with index ≥ the number of patches are zero.
//!
//! # The displacement of one tile
//!
//! Tangent space (`space tangent`, `channels 0 1 2`, `midlevel 0`), in units of a patch with
//! edges 1 long: `D = (D_T, D_B, D_N)`. Every tile draws its kind and parameters from an integer
//! hash of its index ([`tile_params`]), so no two patches share a displacement. With the window
//! `w = 16·s(1−s)·t(1−t)` (zero on the border, 1 in the middle), the centre
//! `c = (½, ½) + jitter` (`|jitter| ≤ 0.05` per axis), `d = (s, t) − c`, `r = |d|`, `d̂ = d / r`:
//!
//! ```text
//! bump      D_N = a · exp(−r² / 2σ²) · w                       a ∈ ±[0.15, 0.35], σ ∈ [0.12, 0.2]
//! ripple    D_N = a · cos(2πf r) · w,  D_TB = 0.6a · sin(2πf r) · w · d̂      a ∈ [0.05, 0.1], f ∈ [1.5, 2.5]
//! spike     h = a · max(0, 1 − r/ρ)² · w,  D_N = h,  D_TB = h · ℓ          a ∈ [0.3, 0.6], ρ ∈ [0.25, 0.4], |ℓ| ≤ 0.6
//! overhang  for r < ρ, x = r/ρ:  D_TB = ½ρ · sin(πx) · sin(2πx) · d̂,  D_N = h · (1 + cos πx)/2
//!                                                                          ρ ∈ [0.3, 0.4], h ∈ [0.2, 0.35]
//! ridges    D_N = a · sin(2πf (d · e) + φ) · w                             a ∈ [0.05, 0.12], f ∈ {1, 2, 3}, |e| = 1
//! twist     D_TB = a · w² · d⊥ · 4,  D_N = 0.3a · w  (d⊥ = d turned by 90°)   a ∈ ±[0.1, 0.2]
//! ```
//!
//! The overhang is the mushroom cap of [`super::vdgen`] (`overhang`) with radius `ρ`: its rim
//! folds back over the ring below it, which a height map cannot do; it is zero for `r ≥ ρ`, and
//! `ρ + |jitter| < ½`, so it is zero on the border too. Values are rounded to multiples of
//! [`QUANTUM`] = 1/128 (held exactly by the half floats of the file; the coarse steps let ZIP
//! compress the atlas to about 1 MB).
//!
//! # The base meshes
//!
//! Six OBJ files (positions with 4 decimals, texture coordinates with 6): `ground.obj`, a
//! 48×48 grid of 0.5-unit quads facing +Y, and `crowd_{red,blue,cream,mirror,glass}.obj`, 180
//! figures split among five materials by a hash. A figure is a body (a cube-sphere with 2×2
//! quads per face, scaled to an ellipsoid of radii 0.2–0.3, 0.35–0.5, 0.15–0.25), a head (the
//! same, radius 0.13–0.18) and two raised arms (cube-spheres with one quad per face, stretched
//! along the arm), 60 quads in all, each figure with its own sizes, yaw, lean and arm angles,
//! on a jittered 15×12 grid. Quads are wound so that `∂Q/∂s × ∂Q/∂t` points outwards; vertices
//! are shared within a body part, texture coordinates are the `(K+1)²` tile-corner lattice
//! points the file uses. Tiles are handed out in file order, so every quad of the scene has a
//! tile of its own.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use glam::{Mat3, Vec2, Vec3};

use super::atomic::write_atomically;
use super::IoError;
use crate::scene::VdImage;

/// Tiles per side of the atlas (`K`).
pub const TILES_PER_SIDE: u32 = 127;
/// Texel intervals per tile side.
pub const TILE_CELLS: u32 = 8;
/// Width and height of the atlas in texels (`W = 8K + 1`).
pub const ATLAS_SIZE: u32 = TILE_CELLS * TILES_PER_SIDE + 1;
/// File name of the atlas in the output folder.
pub const ATLAS_FILE: &str = "atlas.exr";
/// Quads per side of the ground grid.
pub const GROUND_QUADS: u32 = 48;
/// Length of a ground quad's edge.
pub const GROUND_CELL: f32 = 0.5;
/// Figures in the crowd: columns × rows of the jittered grid.
pub const CROWD: (u32, u32) = (15, 12);
/// Quads per figure: body 24, head 24, two arms 6 each.
pub const QUADS_PER_FIGURE: u32 = 60;
/// The crowd's groups, one OBJ each (`crowd_NAME.obj`), and the share of figures per mille.
pub const GROUPS: [(&str, u32); 5] = [
    ("red", 300),
    ("blue", 300),
    ("cream", 260),
    ("mirror", 70),
    ("glass", 70),
];

/// A 64-bit mix (SplitMix64's finaliser) of `x`.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A deterministic stream of uniform numbers in `[0, 1)` seeded by `(salt, index)`.
struct Rng(u64);

impl Rng {
    fn new(salt: u64, index: u64) -> Rng {
        Rng(mix(salt.wrapping_mul(0x1000_0000_01b3) ^ index))
    }
    fn next(&mut self) -> f32 {
        self.0 = mix(self.0);
        (self.0 >> 40) as f32 / (1u64 << 24) as f32
    }
    fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.next()
    }
    fn sign(&mut self, negative_share: f32) -> f32 {
        if self.next() < negative_share {
            -1.0
        } else {
            1.0
        }
    }
}

/// The kind of displacement a tile carries (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TileKind {
    Bump { a: f32, sigma: f32 },
    Ripple { a: f32, f: f32 },
    Spike { a: f32, rho: f32, lean: Vec2 },
    Overhang { rho: f32, h: f32 },
    Ridges { a: f32, f: f32, e: Vec2, phase: f32 },
    Twist { a: f32 },
}

/// The kind, parameters and centre of tile `index`, drawn from a hash of the index.
pub fn tile_params(index: u32) -> (TileKind, Vec2) {
    let mut rng = Rng::new(0x0070_6172_7479, index as u64);
    let centre = Vec2::new(0.5 + rng.range(-0.05, 0.05), 0.5 + rng.range(-0.05, 0.05));
    let pick = rng.next();
    let kind = if pick < 0.25 {
        TileKind::Bump {
            a: rng.sign(0.2) * rng.range(0.15, 0.35),
            sigma: rng.range(0.12, 0.2),
        }
    } else if pick < 0.4 {
        TileKind::Ripple {
            a: rng.range(0.05, 0.1),
            f: rng.range(1.5, 2.5),
        }
    } else if pick < 0.6 {
        let angle = rng.range(0.0, std::f32::consts::TAU);
        let length = rng.range(0.0, 0.6);
        TileKind::Spike {
            a: rng.range(0.3, 0.6),
            rho: rng.range(0.25, 0.4),
            lean: Vec2::from_angle(angle) * length,
        }
    } else if pick < 0.75 {
        TileKind::Overhang {
            rho: rng.range(0.3, 0.4),
            h: rng.range(0.2, 0.35),
        }
    } else if pick < 0.9 {
        let angle = rng.range(0.0, std::f32::consts::TAU);
        TileKind::Ridges {
            a: rng.range(0.05, 0.12),
            f: (1 + (rng.next() * 3.0) as u32).min(3) as f32,
            e: Vec2::from_angle(angle),
            phase: rng.range(0.0, std::f32::consts::TAU),
        }
    } else {
        TileKind::Twist {
            a: rng.sign(0.5) * rng.range(0.1, 0.2),
        }
    };
    (kind, centre)
}

/// The displacement of tile `index` at patch parameter `st` (module docs), before rounding.
pub fn tile_displacement(index: u32, st: Vec2) -> Vec3 {
    use std::f32::consts::PI;
    let (kind, centre) = tile_params(index);
    let w = 16.0 * st.x * (1.0 - st.x) * st.y * (1.0 - st.y);
    let d = st - centre;
    let r = d.length();
    let dir = d.normalize_or_zero();
    match kind {
        TileKind::Bump { a, sigma } => {
            Vec3::new(0.0, 0.0, a * (-r * r / (2.0 * sigma * sigma)).exp() * w)
        }
        TileKind::Ripple { a, f } => {
            let phase = 2.0 * PI * f * r;
            (dir * (0.6 * a * phase.sin() * w)).extend(a * phase.cos() * w)
        }
        TileKind::Spike { a, rho, lean } => {
            let h = a * (1.0 - r / rho).max(0.0).powi(2) * w;
            (lean * h).extend(h)
        }
        TileKind::Overhang { rho, h } => {
            if r >= rho {
                return Vec3::ZERO;
            }
            let x = r / rho;
            let outward = dir * (0.5 * rho * (PI * x).sin() * (2.0 * PI * x).sin());
            outward.extend(h * (1.0 + (PI * x).cos()) / 2.0)
        }
        TileKind::Ridges { a, f, e, phase } => {
            Vec3::new(0.0, 0.0, a * (2.0 * PI * f * d.dot(e) + phase).sin() * w)
        }
        TileKind::Twist { a } => (d.perp() * (4.0 * a * w * w)).extend(0.3 * a * w),
    }
}

/// Steps the atlas values are rounded to (then stored as half floats, which hold them exactly):
/// coarse steps leave the low mantissa bits zero, so ZIP compresses the atlas much better.
pub const QUANTUM: f32 = 1.0 / QUANTUM_STEPS;
const QUANTUM_STEPS: f32 = 128.0;

/// Rounds to a multiple of [`QUANTUM`], as the atlas stores it.
fn quantize(v: Vec3) -> Vec3 {
    (v * QUANTUM_STEPS).round() / QUANTUM_STEPS
}

/// The atlas with the first `tiles` tiles filled (the rest zero), values rounded to half floats.
pub fn party_atlas(tiles: u32) -> VdImage {
    let size = ATLAS_SIZE;
    let mut texels = vec![Vec3::ZERO; (size * size) as usize];
    for y in 0..size {
        for x in 0..size {
            if x % TILE_CELLS == 0 || y % TILE_CELLS == 0 {
                continue;
            }
            let (a, b) = (x / TILE_CELLS, y / TILE_CELLS);
            let index = b * TILES_PER_SIDE + a;
            if index >= tiles {
                continue;
            }
            let st = Vec2::new(
                (x % TILE_CELLS) as f32 / TILE_CELLS as f32,
                1.0 - (y % TILE_CELLS) as f32 / TILE_CELLS as f32,
            );
            texels[(y * size + x) as usize] = quantize(tile_displacement(index, st));
        }
    }
    VdImage {
        width: size,
        height: size,
        texels,
    }
}

/// An OBJ under construction: positions, the tile-corner UVs it uses, quads.
struct ObjBuilder {
    positions: Vec<Vec3>,
    /// Lattice point `(a, b)` → OBJ `vt` index (1-based), in order of first use.
    uv_index: std::collections::HashMap<(u32, u32), u32>,
    uvs: Vec<(u32, u32)>,
    /// Position indices (0-based) and UV indices (1-based) of each quad.
    faces: Vec<([u32; 4], [u32; 4])>,
}

impl ObjBuilder {
    fn new() -> ObjBuilder {
        ObjBuilder {
            positions: Vec::new(),
            uv_index: Default::default(),
            uvs: Vec::new(),
            faces: Vec::new(),
        }
    }

    fn lattice_uv(&mut self, point: (u32, u32)) -> u32 {
        if let Some(&i) = self.uv_index.get(&point) {
            return i;
        }
        self.uvs.push(point);
        let i = self.uvs.len() as u32;
        self.uv_index.insert(point, i);
        i
    }

    /// Adds quad `v0 v1 v2 v3` (position indices) with tile `tile`.
    fn quad(&mut self, corners: [u32; 4], tile: u32) {
        assert!(
            tile < TILES_PER_SIDE * TILES_PER_SIDE,
            "the atlas has too few tiles"
        );
        let (a, b) = (tile % TILES_PER_SIDE, tile / TILES_PER_SIDE);
        // Lattice point (a, b) is the texel centre at column 8a, row 8b; t = 0 is row 8b + 8.
        let uvs = [
            self.lattice_uv((a, b + 1)),
            self.lattice_uv((a + 1, b + 1)),
            self.lattice_uv((a + 1, b)),
            self.lattice_uv((a, b)),
        ];
        self.faces.push((corners, uvs));
    }

    fn text(&self, header: &str) -> String {
        let mut s = String::with_capacity(64 * self.faces.len());
        for line in header.lines() {
            let _ = writeln!(s, "# {line}");
        }
        let _ = writeln!(
            s,
            "# {} vertices, {} quads (VD patches)",
            self.positions.len(),
            self.faces.len()
        );
        let num = |x: f32, digits: usize| {
            let t = format!("{x:.digits$}");
            let t = t.trim_end_matches('0').trim_end_matches('.');
            if t == "-0" || t.is_empty() {
                "0".to_string()
            } else {
                t.to_string()
            }
        };
        for p in &self.positions {
            let _ = writeln!(s, "v {} {} {}", num(p.x, 4), num(p.y, 4), num(p.z, 4));
        }
        for &(a, b) in &self.uvs {
            let w = ATLAS_SIZE as f32;
            let u = (TILE_CELLS * a) as f32 + 0.5;
            let v = (TILE_CELLS * b) as f32 + 0.5;
            let _ = writeln!(s, "vt {} {}", num(u / w, 6), num(1.0 - v / w, 6));
        }
        for (p, t) in &self.faces {
            let _ = writeln!(
                s,
                "f {}/{} {}/{} {}/{} {}/{}",
                p[0] + 1,
                t[0],
                p[1] + 1,
                t[1],
                p[2] + 1,
                t[2],
                p[3] + 1,
                t[3]
            );
        }
        s
    }
}

/// Faces of a cube as (outward normal, a, b) with `a × b = normal`.
const CUBE_FACES: [(Vec3, Vec3, Vec3); 6] = [
    (Vec3::X, Vec3::Y, Vec3::Z),
    (Vec3::NEG_X, Vec3::Z, Vec3::Y),
    (Vec3::Y, Vec3::Z, Vec3::X),
    (Vec3::NEG_Y, Vec3::X, Vec3::Z),
    (Vec3::Z, Vec3::X, Vec3::Y),
    (Vec3::NEG_Z, Vec3::Y, Vec3::X),
];

/// Adds a cube-sphere with `k`×`k` quads per face, mapped by `to_world` from the unit sphere,
/// taking tiles from `next_tile`. Vertices on shared cube edges are shared.
fn blob(obj: &mut ObjBuilder, k: u32, to_world: impl Fn(Vec3) -> Vec3, next_tile: &mut u32) {
    let mut index: std::collections::HashMap<(i32, i32, i32), u32> = Default::default();
    let kk = k as i32;
    for (n, a, b) in CUBE_FACES {
        let mut ids = vec![0u32; ((k + 1) * (k + 1)) as usize];
        for j in 0..=k {
            for i in 0..=k {
                // Integer cube coordinates in -k..=k (step 2) identify shared vertices.
                let cube = n.as_ivec3() * kk
                    + a.as_ivec3() * (2 * i as i32 - kk)
                    + b.as_ivec3() * (2 * j as i32 - kk);
                let key = (cube.x, cube.y, cube.z);
                let id = *index.entry(key).or_insert_with(|| {
                    obj.positions.push(to_world(cube.as_vec3().normalize()));
                    obj.positions.len() as u32 - 1
                });
                ids[(j * (k + 1) + i) as usize] = id;
            }
        }
        for j in 0..k {
            for i in 0..k {
                let at = |i: u32, j: u32| ids[(j * (k + 1) + i) as usize];
                obj.quad(
                    [at(i, j), at(i + 1, j), at(i + 1, j + 1), at(i, j + 1)],
                    *next_tile,
                );
                *next_tile += 1;
            }
        }
    }
}

/// Adds figure `index` standing at `foot` on the ground.
fn figure(obj: &mut ObjBuilder, index: u32, foot: Vec3, next_tile: &mut u32) {
    let mut rng = Rng::new(0x6669_6775_7265, index as u64);
    let radii = Vec3::new(
        rng.range(0.2, 0.3),
        rng.range(0.35, 0.5),
        rng.range(0.15, 0.25),
    );
    let head = rng.range(0.13, 0.18);
    let yaw = rng.range(0.0, std::f32::consts::TAU);
    let lean = Vec2::new(rng.range(-0.15, 0.15), rng.range(-0.15, 0.15));
    let frame =
        Mat3::from_rotation_y(yaw) * Mat3::from_rotation_x(lean.x) * Mat3::from_rotation_z(lean.y);
    let body_centre = Vec3::new(0.0, radii.y, 0.0);
    blob(
        obj,
        2,
        |p| foot + frame * (body_centre + p * radii),
        next_tile,
    );
    let head_centre = Vec3::new(0.0, 2.0 * radii.y + 0.85 * head, 0.0);
    blob(
        obj,
        2,
        |p| foot + frame * (head_centre + p * head),
        next_tile,
    );
    for side in [-1.0f32, 1.0] {
        let raise = rng.range(0.2, 1.3);
        let length = rng.range(0.3, 0.45);
        let shoulder = Vec3::new(side * 0.8 * radii.x, 1.55 * radii.y, 0.0);
        let along = Vec3::new(side * raise.cos(), raise.sin(), rng.range(-0.3, 0.3)).normalize();
        let across = along.cross(Vec3::Z).normalize();
        let third = along.cross(across);
        let arm = Mat3::from_cols(along * (0.5 * length), across * 0.06, third * 0.06);
        let centre = shoulder + along * (0.5 * length);
        blob(obj, 1, |p| foot + frame * (centre + arm * p), next_tile);
    }
}

/// The base meshes as `(file name, OBJ text)`, and the number of tiles (patches) they use.
pub fn party_meshes() -> (Vec<(String, String)>, u32) {
    let mut next_tile = 0u32;
    let mut files = Vec::new();

    let mut ground = ObjBuilder::new();
    let n = GROUND_QUADS;
    let half = 0.5 * GROUND_CELL * n as f32;
    for j in 0..=n {
        for i in 0..=n {
            ground.positions.push(Vec3::new(
                -half + GROUND_CELL * i as f32,
                0.0,
                half - GROUND_CELL * j as f32,
            ));
        }
    }
    for j in 0..n {
        for i in 0..n {
            // s along +X, t along -Z: ∂Q/∂s × ∂Q/∂t = +Y.
            let at = |i: u32, j: u32| j * (n + 1) + i;
            ground.quad(
                [at(i, j), at(i + 1, j), at(i + 1, j + 1), at(i, j + 1)],
                next_tile,
            );
            next_tile += 1;
        }
    }
    files.push((
        "ground.obj".to_string(),
        ground.text(&format!(
            "Party scene ground: {n}x{n} quads of {GROUND_CELL} units, facing +Y.\n\
             Generated by `cargo run --release --example make_party -- scenes/party`."
        )),
    ));

    let mut groups: Vec<ObjBuilder> = GROUPS.iter().map(|_| ObjBuilder::new()).collect();
    let mut members: Vec<Vec<(u32, Vec3)>> = vec![Vec::new(); GROUPS.len()];
    let (columns, rows) = CROWD;
    for row in 0..rows {
        for column in 0..columns {
            let index = row * columns + column;
            let mut rng = Rng::new(0x0070_6c61_6365, index as u64);
            let foot = Vec3::new(
                (column as f32 - 0.5 * (columns - 1) as f32) * 1.25 + rng.range(-0.3, 0.3),
                0.0,
                (row as f32 - 0.5 * (rows - 1) as f32) * 1.25 + rng.range(-0.3, 0.3),
            );
            let mut pick = (rng.next() * 1000.0) as u32;
            let mut group = GROUPS.len() - 1;
            for (g, &(_, share)) in GROUPS.iter().enumerate() {
                if pick < share {
                    group = g;
                    break;
                }
                pick -= share;
            }
            members[group].push((index, foot));
        }
    }
    for (g, (name, _)) in GROUPS.iter().enumerate() {
        for &(index, foot) in &members[g] {
            figure(&mut groups[g], index, foot, &mut next_tile);
        }
        files.push((
            format!("crowd_{name}.obj"),
            groups[g].text(&format!(
                "Party scene crowd, group \"{name}\": {} figures of {QUADS_PER_FIGURE} quads.\n\
                 Generated by `cargo run --release --example make_party -- scenes/party`.",
                members[g].len()
            )),
        ));
    }
    (files, next_tile)
}

/// Every generated file as `(file name, contents)`: the meshes of [`party_meshes`], then the
/// atlas (the EXR bytes of [`write_vd_image_half`] for [`party_atlas`]).
pub fn party_files() -> Result<Vec<(String, Vec<u8>)>, IoError> {
    let (meshes, tiles) = party_meshes();
    let mut files: Vec<(String, Vec<u8>)> = meshes
        .into_iter()
        .map(|(name, text)| (name, text.into_bytes()))
        .collect();
    files.push((
        ATLAS_FILE.to_string(),
        encode_vd_image_half(&party_atlas(tiles))?,
    ));
    Ok(files)
}

/// Writes every file of [`party_files`] into `dir` (created if needed); returns their paths.
pub fn write_party(dir: &Path) -> Result<Vec<PathBuf>, IoError> {
    std::fs::create_dir_all(dir).map_err(|e| IoError::write(dir, e))?;
    let mut paths = Vec::new();
    for (name, bytes) in party_files()? {
        let path = dir.join(name);
        write_atomically(&path, |file| {
            use std::io::Write;
            file.write_all(&bytes).map_err(|e| IoError::write(&path, e))
        })?;
        paths.push(path);
    }
    Ok(paths)
}

/// Encodes `image` as a ZIP-compressed 16-bit (half) float OpenEXR file with channels R, G, B,
/// row 0 at the top, which [`load_vd_image`](super::load_vd_image) reads back.
pub fn encode_vd_image_half(image: &VdImage) -> Result<Vec<u8>, IoError> {
    use exr::prelude::{
        f16, AnyChannel, AnyChannels, Encoding, FlatSamples, Image, Layer, LayerAttributes,
        WritableImage,
    };
    let here = Path::new(ATLAS_FILE);
    image
        .check_size()
        .map_err(|message| IoError::invalid_data(here, message))?;
    let channel = |name: &str, index: usize| {
        AnyChannel::new(
            name,
            FlatSamples::F16(
                image
                    .texels
                    .iter()
                    .map(|t| f16::from_f32(t[index]))
                    .collect(),
            ),
        )
    };
    let channels =
        AnyChannels::sort(vec![channel("R", 0), channel("G", 1), channel("B", 2)].into());
    let attributes = LayerAttributes {
        software_name: Some("Caustica make_party".into()),
        ..LayerAttributes::default()
    };
    let layer = Layer::new(
        (image.width as usize, image.height as usize),
        attributes,
        Encoding::SMALL_LOSSLESS,
        channels,
    );
    let mut bytes = std::io::Cursor::new(Vec::new());
    Image::from_layer(layer)
        .write()
        .non_parallel()
        .to_buffered(&mut bytes)
        .map_err(|e| IoError::invalid_data(here, format!("EXR: {e}")))?;
    Ok(bytes.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tile_vanishes_on_its_border() {
        for index in 0..200 {
            for i in 0..=16 {
                let a = i as f32 / 16.0;
                for st in [
                    Vec2::new(a, 0.0),
                    Vec2::new(a, 1.0),
                    Vec2::new(0.0, a),
                    Vec2::new(1.0, a),
                ] {
                    let d = tile_displacement(index, st);
                    assert!(d.length() < 1e-6, "tile {index} at {st}: {d}");
                }
            }
        }
    }

    #[test]
    fn patch_corners_land_on_texel_centres() {
        // Lattice point (a, b) is the centre of texel (8a, 8b).
        let image = party_atlas(0);
        assert_eq!(image.width, ATLAS_SIZE);
        let u = (8.0 * 3.0 + 0.5) / ATLAS_SIZE as f32;
        let x = u * ATLAS_SIZE as f32 - 0.5;
        assert!((x - 24.0).abs() < 1e-4);
    }
}
