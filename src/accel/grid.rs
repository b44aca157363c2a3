//! The two-level grid of paper 001 (Kalojanov, Billeter and Slusallek, "Two-Level Grids for Ray
//! Tracing on GPUs"), a middle-level structure for the meshes of `--accel grid`: the CPU twin
//! of `gpu::grid` and of `shaders/shared/traverse_grid.wgsl`.
//!
//! A uniform top grid (density [`TOP_DENSITY`]) whose every cell is a uniform grid of its own,
//! with a resolution from the number of primitives the cell holds (density [`LEAF_DENSITY`],
//! the paper's section 5). The build is the paper's Algorithm 1, step by step:
//! 1. [`GridParams::new`]: the grid box and the top resolution;
//! 2. the (top cell, primitive) pairs of every primitive, in primitive order, sorted by cell;
//! 3. each top cell's leaf resolution from its count ([`GridParams::leaf_resolution`]) and
//!    the place of its first leaf (an exclusive scan);
//! 4. the (leaf, primitive) pairs of every top pair, keyed by the leaf's place in the one leaf
//!    array, sorted by it (one sort for all leaves);
//! 5. the leaves' ranges read off the sorted pairs, whose primitives are the references.
//!
//! The sorts are stable and the pairs are written in primitive order, so a leaf lists its
//! primitives in ascending order: the GPU build gives the same words.
//!
//! All arithmetic that places a box in cells is a subtraction, a multiplication and a floor in
//! grid coordinates (`u = (p - min) · inv_size`, top cells at integer `u`, leaf cells at
//! multiples of `1 / r` inside them), which WGSL rounds as Rust does. Every box is grown by
//! [`GridParams::margin`] before it is placed, so the traversal's own rounding (a few units in
//! the last place of the ray's coordinates) never loses a primitive: a ray whose origin lies
//! within about 500 times the mesh's size of it finds what brute force finds.
//!
//! The words of one grid ([`build_grid`]), all `u32` (floats as their bits):
//!
//! ```text
//!  0..3   min: the grid box's lower corner         3..6   inv_size: top cells per unit length
//!  6..9   res: the top resolution                  9      top cells   10  leaves   11  references
//! 12      where the leaves start (word)            13     where the references start (word)
//! 14      margin (f32)                             15     0
//! 16..    top cells, two words each: first leaf, rx | ry << 8 | rz << 16 (0: empty)
//! leaves  two words each: first reference, end of its references
//! refs    primitive indices, each leaf's ascending
//! ```

use glam::Vec3;
use rayon::prelude::*;

use super::Aabb;

/// Cells per primitive of the top grid (the paper's λ = 1/16, section 5).
pub const TOP_DENSITY: f64 = 1.0 / 16.0;
/// Leaf cells per reference in each top cell (the paper's λ = 1.2).
pub const LEAF_DENSITY: f64 = 1.2;
/// The most cells along an axis of the top grid or of one top cell (8 bits each).
pub const MAX_RESOLUTION: u32 = 255;
/// Words before the top cells.
pub const HEADER_WORDS: usize = 16;
/// The most references a grid may hold per primitive (with [`EXTRA_REFS`]): a mesh of long
/// thin triangles across its whole box would otherwise need a number of references that grows
/// with the square of its size.
pub const MAX_REFS_PER_PRIM: u64 = 64;
/// References every grid may hold beyond [`MAX_REFS_PER_PRIM`] per primitive.
pub const EXTRA_REFS: u64 = 1 << 16;
/// Leaf resolutions 2..=255 per axis have a threshold each.
pub const THRESHOLDS_PER_AXIS: usize = (MAX_RESOLUTION - 1) as usize;

/// The margin every box is grown by: this share of the grid's largest extent…
const MARGIN_OF_EXTENT: f32 = 1.0 / 4096.0;
/// …or this share of its largest coordinate, whichever is larger.
const MARGIN_OF_MAGNITUDE: f32 = 1.0 / 131072.0;

/// Why a grid was not built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GridTooLarge {
    /// The references (or top-level pairs) the grid would need.
    pub refs: u64,
    /// The most it may hold.
    pub limit: u64,
}

/// Where a grid lies and how it is divided: what the host works out before a build, on either
/// backend.
#[derive(Clone, Debug, PartialEq)]
pub struct GridParams {
    /// The grid box's lower corner: the primitives' bounds grown by `margin`.
    pub min: Vec3,
    /// Top cells per unit length along each axis.
    pub inv_size: Vec3,
    /// The top resolution.
    pub res: [u32; 3],
    /// How far every box is grown before it is placed in cells.
    pub margin: f32,
    /// `thresholds[a][m - 2]`: the fewest references that give a top cell `m` leaf cells along
    /// axis `a` ([`GridParams::leaf_resolution`]); non-decreasing in `m`.
    pub thresholds: [[u32; THRESHOLDS_PER_AXIS]; 3],
    /// The boxes that can be placed (finite, not empty).
    pub prims: u32,
}

/// The resolution that gives a box of extent `d` about `density · n` cells (the paper's
/// equation 1, `R = d · (λ n / V)^(1/3)`), each axis at least 1 and at most
/// [`MAX_RESOLUTION`]. An axis too thin for one cell by the formula gets one, and the density is
/// spread over the other axes, so a flat box is divided like a square.
pub fn density_resolution(d: [f64; 3], n: f64, density: f64) -> [u32; 3] {
    let mut active = [true; 3];
    loop {
        let axes: Vec<usize> = (0..3).filter(|&a| active[a] && d[a] > 0.0).collect();
        if axes.is_empty() || n <= 0.0 {
            return [1; 3];
        }
        let volume: f64 = axes.iter().map(|&a| d[a]).product();
        let per_volume = density * n / volume;
        let k = match axes.len() {
            3 => per_volume.cbrt(),
            2 => per_volume.sqrt(),
            _ => per_volume,
        };
        let thin: Vec<usize> = axes.iter().copied().filter(|&a| d[a] * k < 1.0).collect();
        if thin.is_empty() {
            let mut res = [1; 3];
            for &a in &axes {
                res[a] = ((d[a] * k).floor() as u32).clamp(1, MAX_RESOLUTION);
            }
            return res;
        }
        for a in thin {
            active[a] = false;
        }
    }
}

impl GridParams {
    /// The grid over `boxes` (one per primitive; empty and non-finite boxes are left out).
    pub fn new(boxes: &[Aabb]) -> GridParams {
        let placeable = boxes.iter().filter(|b| placeable(b));
        let whole = placeable.clone().fold(Aabb::EMPTY, |a, b| a.union(*b));
        let prims = placeable.count() as u32;
        let (lo, hi) = if whole.is_empty() {
            (Vec3::ZERO, Vec3::ZERO)
        } else {
            (whole.min, whole.max)
        };
        let margin = box_margin(lo, hi);
        let min = lo - Vec3::splat(margin);
        let size = (hi + Vec3::splat(margin)) - min;
        let d = size.to_array().map(f64::from);
        let res = density_resolution(d, f64::from(prims), TOP_DENSITY);
        let inv_size = Vec3::new(
            res[0] as f32 / size.x,
            res[1] as f32 / size.y,
            res[2] as f32 / size.z,
        );
        let cell = [0, 1, 2].map(|a| d[a] / f64::from(res[a]));
        let mut thresholds = [[0u32; THRESHOLDS_PER_AXIS]; 3];
        for (a, row) in thresholds.iter_mut().enumerate() {
            for (i, t) in row.iter_mut().enumerate() {
                let m = i as u32 + 2;
                // The fewest references n with resolution ≥ m along a (u32::MAX: never).
                let (mut lo, mut hi) = (1u64, u64::from(u32::MAX));
                if density_resolution(cell, hi as f64, LEAF_DENSITY)[a] < m {
                    *t = u32::MAX;
                    continue;
                }
                while lo < hi {
                    let mid = (lo + hi) / 2;
                    if density_resolution(cell, mid as f64, LEAF_DENSITY)[a] >= m {
                        hi = mid;
                    } else {
                        lo = mid + 1;
                    }
                }
                *t = lo as u32;
            }
        }
        GridParams {
            min,
            inv_size,
            res,
            margin,
            thresholds,
            prims,
        }
    }

    /// The number of top cells.
    pub fn top_cells(&self) -> usize {
        self.res.iter().map(|&r| r as usize).product()
    }

    /// The leaf resolution of a top cell that holds `n` references (0 for an empty cell): along
    /// axis `a`, one plus the thresholds `n` reaches.
    pub fn leaf_resolution(&self, n: u32) -> [u32; 3] {
        if n == 0 {
            return [0; 3];
        }
        self.thresholds
            .map(|row| 1 + row.partition_point(|&t| t <= n) as u32)
    }

    /// The box `b` grown by the margin, in grid coordinates (top cell `c` spans `[c, c + 1)`),
    /// or `None` for a box that is not placed.
    pub fn grid_box(&self, b: &Aabb) -> Option<([f32; 3], [f32; 3])> {
        if !placeable(b) {
            return None;
        }
        let lo = [0, 1, 2].map(|a| (b.min[a] - self.margin - self.min[a]) * self.inv_size[a]);
        let hi = [0, 1, 2].map(|a| (b.max[a] + self.margin - self.min[a]) * self.inv_size[a]);
        Some((lo, hi))
    }

    /// The top cells a grid box overlaps, per axis `[first, last]`.
    pub fn top_range(&self, (lo, hi): &([f32; 3], [f32; 3])) -> [[u32; 2]; 3] {
        [0, 1, 2].map(|a| [cell_of(lo[a], self.res[a]), cell_of(hi[a], self.res[a])])
    }

    /// The grid's first [`HEADER_WORDS`] words (the module's layout), for a grid of
    /// `top_count` top cells, `leaves` leaves and `refs` references.
    pub fn header(&self, top_count: u32, leaves: u32, refs: u32) -> [u32; HEADER_WORDS] {
        let f = |x: f32| x.to_bits();
        let leaves_at = HEADER_WORDS as u32 + 2 * top_count;
        let refs_at = leaves_at + 2 * leaves;
        [
            f(self.min.x),
            f(self.min.y),
            f(self.min.z),
            f(self.inv_size.x),
            f(self.inv_size.y),
            f(self.inv_size.z),
            self.res[0],
            self.res[1],
            self.res[2],
            top_count,
            leaves,
            refs,
            leaves_at,
            refs_at,
            f(self.margin),
            0,
        ]
    }

    /// The top cell `(x, y, z)`'s index.
    pub fn top_index(&self, c: [u32; 3]) -> u32 {
        c[0] + self.res[0] * (c[1] + self.res[1] * c[2])
    }
}

/// How far a structure over the box `lo..hi` grows every primitive's box before placing it
/// ([`MARGIN_OF_EXTENT`] of its largest extent or [`MARGIN_OF_MAGNITUDE`] of its largest
/// coordinate, whichever is larger): the grid's, and the triangle kd-tree's
/// (`super::tri_kdtree`).
pub fn box_margin(lo: Vec3, hi: Vec3) -> f32 {
    let extent = (hi - lo).max_element();
    let magnitude = lo.abs().max(hi.abs()).max_element();
    (extent * MARGIN_OF_EXTENT)
        .max(magnitude * MARGIN_OF_MAGNITUDE)
        .max(1e-30)
}

/// Whether a box can be placed in cells: finite and not empty.
pub(super) fn placeable(b: &Aabb) -> bool {
    !b.is_empty() && b.min.is_finite() && b.max.is_finite()
}

/// The cell of coordinate `u` among `res` (clamped to the grid).
#[inline]
pub fn cell_of(u: f32, res: u32) -> u32 {
    u.floor().clamp(0.0, (res - 1) as f32) as u32
}

/// The leaf cells of top cell `c` (resolution `r`) that a grid box overlaps, per axis
/// `[first, last]`.
pub fn leaf_range((lo, hi): &([f32; 3], [f32; 3]), c: [u32; 3], r: [u32; 3]) -> [[u32; 2]; 3] {
    [0, 1, 2].map(|a| {
        let at = |u: f32| cell_of((u - c[a] as f32) * r[a] as f32, r[a]);
        [at(lo[a]), at(hi[a])]
    })
}

fn volume(range: &[[u32; 2]; 3]) -> u64 {
    range.iter().map(|[a, b]| u64::from(b - a + 1)).product()
}

/// What a build made, beside its words.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GridBuild {
    pub words: Vec<u32>,
    pub top_cells: usize,
    pub leaves: usize,
    /// (top cell, primitive) pairs.
    pub top_pairs: usize,
    /// (leaf, primitive) pairs: the references.
    pub refs: usize,
}

/// The most references (and top pairs) a grid over `prims` primitives may hold.
pub fn refs_limit(prims: u32) -> u64 {
    (u64::from(prims) * MAX_REFS_PER_PRIM + EXTRA_REFS).min(1 << 30)
}

/// The size of the grid [`build_grid`] makes over `boxes`, counted without building it: what
/// a backend that builds the grid on its device reserves room for. The same counts as the
/// build's, in its order, so the same [`GridTooLarge`] where it refuses.
pub fn grid_size(boxes: &[Aabb]) -> Result<GridSize, GridTooLarge> {
    let params = GridParams::new(boxes);
    let limit = refs_limit(params.prims);
    let grid_boxes: Vec<([f32; 3], [f32; 3])> =
        boxes.iter().filter_map(|b| params.grid_box(b)).collect();
    let ranges: Vec<[[u32; 2]; 3]> = grid_boxes.par_iter().map(|g| params.top_range(g)).collect();
    let top_pairs: u64 = ranges.iter().map(volume).sum();
    if top_pairs > limit {
        return Err(GridTooLarge {
            refs: top_pairs,
            limit,
        });
    }
    let mut counts = vec![0u32; params.top_cells()];
    for [x, y, z] in &ranges {
        for cz in z[0]..=z[1] {
            for cy in y[0]..=y[1] {
                for cx in x[0]..=x[1] {
                    counts[params.top_index([cx, cy, cz]) as usize] += 1;
                }
            }
        }
    }
    let resolutions: Vec<[u32; 3]> = counts.iter().map(|&n| params.leaf_resolution(n)).collect();
    let leaves: u64 = resolutions
        .iter()
        .map(|r| r.iter().map(|&k| u64::from(k)).product::<u64>())
        .sum();
    if leaves > limit {
        return Err(GridTooLarge {
            refs: leaves,
            limit,
        });
    }
    let refs: u64 = grid_boxes
        .par_iter()
        .zip(&ranges)
        .map(|(g, [x, y, z])| {
            let mut sum = 0;
            for cz in z[0]..=z[1] {
                for cy in y[0]..=y[1] {
                    for cx in x[0]..=x[1] {
                        let c = [cx, cy, cz];
                        let r = resolutions[params.top_index(c) as usize];
                        sum += volume(&leaf_range(g, c, r));
                    }
                }
            }
            sum
        })
        .sum();
    if refs > limit {
        return Err(GridTooLarge { refs, limit });
    }
    let words = HEADER_WORDS as u64 + 2 * counts.len() as u64 + 2 * leaves + refs;
    Ok(GridSize {
        words,
        top_pairs,
        leaves,
        refs,
    })
}

/// What [`grid_size`] counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GridSize {
    pub words: u64,
    pub top_pairs: u64,
    pub leaves: u64,
    pub refs: u64,
}

/// Builds the two-level grid over one box per primitive (the module's steps 1–5).
pub fn build_grid(boxes: &[Aabb]) -> Result<GridBuild, GridTooLarge> {
    let params = GridParams::new(boxes);
    let limit = refs_limit(params.prims);
    let grid_boxes: Vec<Option<([f32; 3], [f32; 3])>> =
        boxes.iter().map(|b| params.grid_box(b)).collect();
    // Step 2: the top pairs, in primitive order, counted before they are written.
    let top_pairs: u64 = grid_boxes
        .iter()
        .flatten()
        .map(|g| volume(&params.top_range(g)))
        .sum();
    if top_pairs > limit {
        return Err(GridTooLarge {
            refs: top_pairs,
            limit,
        });
    }
    let mut pairs: Vec<(u32, u32)> = Vec::with_capacity(top_pairs as usize);
    for (prim, g) in grid_boxes.iter().enumerate() {
        let Some(g) = g else { continue };
        let [x, y, z] = params.top_range(g);
        for cz in z[0]..=z[1] {
            for cy in y[0]..=y[1] {
                for cx in x[0]..=x[1] {
                    pairs.push((params.top_index([cx, cy, cz]), prim as u32));
                }
            }
        }
    }
    pairs.sort_by_key(|&(cell, _)| cell);
    // Step 3: each top cell's count, resolution and first leaf.
    let top_count = params.top_cells();
    let mut counts = vec![0u32; top_count];
    for &(cell, _) in &pairs {
        counts[cell as usize] += 1;
    }
    let mut top = vec![[0u32; 2]; top_count];
    let mut leaves = 0u64;
    for (cell, &n) in counts.iter().enumerate() {
        let r = params.leaf_resolution(n);
        top[cell] = [leaves as u32, r[0] | r[1] << 8 | r[2] << 16];
        leaves += r.iter().map(|&k| u64::from(k)).product::<u64>();
    }
    if leaves > limit {
        return Err(GridTooLarge {
            refs: leaves,
            limit,
        });
    }
    // Step 4: the leaf pairs of every top pair, keyed by the leaf's place.
    let unpack = |packed: u32| [packed & 0xff, (packed >> 8) & 0xff, packed >> 16];
    let coords = |cell: u32| {
        let [rx, ry, _] = params.res;
        [cell % rx, (cell / rx) % ry, cell / (rx * ry)]
    };
    let leaf_pairs: u64 = pairs
        .iter()
        .map(|&(cell, prim)| {
            let g = grid_boxes[prim as usize].expect("placed");
            volume(&leaf_range(&g, coords(cell), unpack(top[cell as usize][1])))
        })
        .sum();
    if leaf_pairs > limit {
        return Err(GridTooLarge {
            refs: leaf_pairs,
            limit,
        });
    }
    let mut refs: Vec<(u32, u32)> = Vec::with_capacity(leaf_pairs as usize);
    for &(cell, prim) in &pairs {
        let g = grid_boxes[prim as usize].expect("placed");
        let c = coords(cell);
        let [first, packed] = top[cell as usize];
        let r = unpack(packed);
        let [x, y, z] = leaf_range(&g, c, r);
        for jz in z[0]..=z[1] {
            for jy in y[0]..=y[1] {
                for jx in x[0]..=x[1] {
                    refs.push((first + jx + r[0] * (jy + r[1] * jz), prim));
                }
            }
        }
    }
    refs.sort_by_key(|&(leaf, _)| leaf);
    // Step 5: the leaves' ranges and the words.
    let leaf_count = leaves as usize;
    let leaves_at = HEADER_WORDS + 2 * top_count;
    let refs_at = leaves_at + 2 * leaf_count;
    let mut words = vec![0u32; refs_at + refs.len()];
    words[..HEADER_WORDS].copy_from_slice(&params.header(
        top_count as u32,
        leaf_count as u32,
        refs.len() as u32,
    ));
    for (cell, t) in top.iter().enumerate() {
        words[HEADER_WORDS + 2 * cell..HEADER_WORDS + 2 * cell + 2].copy_from_slice(t);
    }
    for (k, &(leaf, prim)) in refs.iter().enumerate() {
        let at = leaves_at + 2 * leaf as usize;
        if k == 0 || refs[k - 1].0 != leaf {
            words[at] = k as u32;
        }
        words[at + 1] = k as u32 + 1;
        words[refs_at + k] = prim;
    }
    Ok(GridBuild {
        words,
        top_cells: top_count,
        leaves: leaf_count,
        top_pairs: pairs.len(),
        refs: refs.len(),
    })
}

/// How a walk through one top cell's leaves ended.
enum LeafWalk {
    /// The test asked to stop (an any-hit search found its hit).
    Stop,
    /// The closest hit so far lies before the leaf's far side: nothing later can beat it.
    Done,
    /// The ray left the top cell.
    Next,
}

/// 1/x with components under 2^-80 taken as ±2^-80 (`wide.rs` `WideRay`'s guard), so that the
/// crossings of an axis the ray runs along are far away, not NaN.
pub(super) fn guarded_inverse(v: Vec3) -> Vec3 {
    let tiny = 8.271806e-25f32;
    Vec3::from_array(v.to_array().map(|x| {
        let x = if x.abs() < tiny {
            if x < 0.0 {
                -tiny
            } else {
                tiny
            }
        } else {
            x
        };
        1.0 / x
    }))
}

/// The axis of the nearest crossing (x before y before z on ties).
#[inline]
fn nearest_axis(next: Vec3) -> usize {
    if next.x <= next.y && next.x <= next.z {
        0
    } else if next.y <= next.z {
        1
    } else {
        2
    }
}

/// Walks the grid `words` along `origin + t·dir` from `t_min`, calling `test(prim, limit)` for
/// the references of every leaf the ray passes, in order, until the closest hit so far
/// (`limit`, which the test lowers) lies before the leaf's far side or the ray leaves the grid.
/// Returns true when a test returned true (an any-hit search's hit). A primitive in several
/// leaves is tested once per leaf; the tie rule makes the closest hit the same.
pub fn walk(
    words: &[u32],
    origin: Vec3,
    dir: Vec3,
    t_min: f32,
    limit: &mut f32,
    test: &mut dyn FnMut(u32, &mut f32) -> bool,
) -> bool {
    let fw = |i: usize| f32::from_bits(words[i]);
    let min = Vec3::new(fw(0), fw(1), fw(2));
    let inv_size = Vec3::new(fw(3), fw(4), fw(5));
    let res = [words[6], words[7], words[8]];
    let (leaves_at, refs_at) = (words[12] as usize, words[13] as usize);
    let resf = Vec3::new(res[0] as f32, res[1] as f32, res[2] as f32);
    let uo = (origin - min) * inv_size;
    let ud = dir * inv_size;
    let inv = guarded_inverse(ud);
    let t_lo = (Vec3::ZERO - uo) * inv;
    let t_hi = (resf - uo) * inv;
    let t_enter = t_lo.min(t_hi).max_element().max(t_min);
    let t_exit = t_lo.max(t_hi).min_element().min(*limit);
    // Also false for NaN (a ray of NaN or infinite components).
    if t_enter.partial_cmp(&t_exit).is_none_or(|o| o.is_gt()) {
        return false;
    }
    let step = ud.cmplt(Vec3::ZERO);
    let step = [step.x, step.y, step.z].map(|neg| if neg { -1i32 } else { 1 });
    let u = uo + ud * t_enter;
    let mut cell = [0, 1, 2].map(|a| cell_of(u[a], res[a]) as i32);
    let plane = |a: usize, c: i32| ((c + (step[a] > 0) as i32) as f32 - uo[a]) * inv[a];
    let mut next = Vec3::new(plane(0, cell[0]), plane(1, cell[1]), plane(2, cell[2]));
    let mut t_cell = t_enter;
    loop {
        let exit = next.min_element();
        let index = cell[0] as u32 + res[0] * (cell[1] as u32 + res[1] * cell[2] as u32);
        let at = HEADER_WORDS + 2 * index as usize;
        let (first, packed) = (words[at], words[at + 1]);
        if packed != 0 {
            let r = [packed & 0xff, (packed >> 8) & 0xff, packed >> 16];
            let rf = Vec3::new(r[0] as f32, r[1] as f32, r[2] as f32);
            let c = Vec3::new(cell[0] as f32, cell[1] as f32, cell[2] as f32);
            let u = uo + ud * t_cell;
            let mut j = [0, 1, 2].map(|a| cell_of((u[a] - c[a]) * rf[a], r[a]) as i32);
            let leaf_plane = |a: usize, j: i32| {
                (c[a] + (j + (step[a] > 0) as i32) as f32 / rf[a] - uo[a]) * inv[a]
            };
            let mut leaf_next = Vec3::new(
                leaf_plane(0, j[0]),
                leaf_plane(1, j[1]),
                leaf_plane(2, j[2]),
            );
            let walked = loop {
                let leaf_exit = leaf_next.min_element();
                let leaf = first + j[0] as u32 + r[0] * (j[1] as u32 + r[1] * j[2] as u32);
                let at = leaves_at + 2 * leaf as usize;
                if (words[at]..words[at + 1]).any(|k| test(words[refs_at + k as usize], limit)) {
                    break LeafWalk::Stop;
                }
                if *limit <= leaf_exit {
                    break LeafWalk::Done;
                }
                if leaf_exit >= exit {
                    break LeafWalk::Next;
                }
                let a = nearest_axis(leaf_next);
                j[a] += step[a];
                if j[a] < 0 || j[a] >= r[a] as i32 {
                    break LeafWalk::Next;
                }
                leaf_next[a] = leaf_plane(a, j[a]);
            };
            match walked {
                LeafWalk::Stop => return true,
                LeafWalk::Done => return false,
                LeafWalk::Next => {}
            }
        }
        if *limit <= exit || exit >= t_exit {
            return false;
        }
        let a = nearest_axis(next);
        cell[a] += step[a];
        if cell[a] < 0 || cell[a] >= res[a] as i32 {
            return false;
        }
        t_cell = exit;
        next[a] = plane(a, cell[a]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn density_resolution_gives_about_density_times_n_cells_and_divides_a_flat_box_like_a_square() {
        let cube = density_resolution([1.0; 3], 1000.0, 1.0);
        assert_eq!(cube, [10, 10, 10]);
        let flat = density_resolution([1.0, 1.0, 1e-6], 100.0, 1.0);
        assert_eq!(flat, [10, 10, 1]);
        assert_eq!(density_resolution([1.0; 3], 0.0, 1.0), [1, 1, 1]);
        assert_eq!(density_resolution([0.0; 3], 10.0, 1.0), [1, 1, 1]);
        let huge = density_resolution([1.0; 3], 1e12, 1.0);
        assert_eq!(huge, [MAX_RESOLUTION; 3]);
    }

    #[test]
    fn leaf_resolution_from_thresholds_equals_the_density_formula() {
        let boxes: Vec<Aabb> = (0..500)
            .map(|i| {
                let p = Vec3::new(
                    (i % 10) as f32,
                    ((i / 10) % 10) as f32 * 0.5,
                    (i / 100) as f32,
                );
                Aabb::new(p, p + Vec3::splat(0.3))
            })
            .collect();
        let params = GridParams::new(&boxes);
        let size = Vec3::new(1.0, 1.0, 1.0) / params.inv_size;
        let cell = size.to_array().map(f64::from);
        for n in [1u32, 2, 5, 17, 64, 100, 1000, 123_456] {
            assert_eq!(
                params.leaf_resolution(n),
                density_resolution(cell, f64::from(n), LEAF_DENSITY),
                "n = {n}"
            );
        }
        assert_eq!(params.leaf_resolution(0), [0; 3]);
    }

    #[test]
    fn every_leaf_lists_the_primitives_whose_grown_boxes_overlap_it_in_ascending_order() {
        let boxes: Vec<Aabb> = (0..300)
            .map(|i| {
                let x = (i as f32 * 0.37).sin() * 3.0;
                let y = (i as f32 * 0.91).cos() * 2.0;
                let z = (i as f32 * 0.13).sin();
                let p = Vec3::new(x, y, z);
                Aabb::new(p, p + Vec3::new(0.2, 0.05 * (i % 7) as f32, 0.1))
            })
            .chain([Aabb::EMPTY])
            .collect();
        let build = build_grid(&boxes).unwrap();
        let w = &build.words;
        let params = GridParams::new(&boxes);
        assert_eq!([w[6], w[7], w[8]], params.res);
        let (leaves_at, refs_at) = (w[12] as usize, w[13] as usize);
        let mut seen = 0;
        for cell in 0..params.top_cells() {
            let [first, packed] = [w[HEADER_WORDS + 2 * cell], w[HEADER_WORDS + 2 * cell + 1]];
            let r = [packed & 0xff, (packed >> 8) & 0xff, packed >> 16];
            let [rx, ry, _] = params.res;
            let c = [
                cell as u32 % rx,
                (cell as u32 / rx) % ry,
                cell as u32 / (rx * ry),
            ];
            for jz in 0..r[2] {
                for jy in 0..r[1] {
                    for jx in 0..r[0] {
                        let leaf = (first + jx + r[0] * (jy + r[1] * jz)) as usize;
                        let (s, e) = (w[leaves_at + 2 * leaf], w[leaves_at + 2 * leaf + 1]);
                        let listed: Vec<u32> = (s..e).map(|k| w[refs_at + k as usize]).collect();
                        let expected: Vec<u32> = (0..boxes.len() as u32)
                            .filter(|&p| {
                                params.grid_box(&boxes[p as usize]).is_some_and(|g| {
                                    let top = params.top_range(&g);
                                    let inside =
                                        (0..3).all(|a| top[a][0] <= c[a] && c[a] <= top[a][1]);
                                    let l = leaf_range(&g, c, r);
                                    let j = [jx, jy, jz];
                                    inside && (0..3).all(|a| l[a][0] <= j[a] && j[a] <= l[a][1])
                                })
                            })
                            .collect();
                        assert_eq!(listed, expected, "top cell {cell}, leaf {jx} {jy} {jz}");
                        seen += listed.len();
                    }
                }
            }
        }
        assert_eq!(seen, build.refs);
    }

    #[test]
    fn grid_size_counts_the_words_and_references_the_build_makes_and_refuses_what_it_refuses() {
        for n in [0usize, 1, 40, 2000] {
            let boxes: Vec<Aabb> = (0..n)
                .map(|i| {
                    let p = Vec3::new(
                        (i as f32 * 0.77).sin(),
                        (i as f32 * 0.31).cos(),
                        (i % 13) as f32 * 0.1,
                    );
                    Aabb::new(p, p + Vec3::new(0.05, 0.2 * (i % 3) as f32, 0.01))
                })
                .collect();
            let build = build_grid(&boxes).unwrap();
            let size = grid_size(&boxes).unwrap();
            assert_eq!(size.words as usize, build.words.len(), "{n} boxes");
            assert_eq!(size.refs as usize, build.refs);
            assert_eq!(size.leaves as usize, build.leaves);
            assert_eq!(size.top_pairs as usize, build.top_pairs);
        }
        let across: Vec<Aabb> = (0..3000)
            .map(|i| {
                let t = i as f32 / 3000.0;
                Aabb::new(Vec3::new(0.0, 0.0, t), Vec3::new(1.0, 1.0, t + 1e-4))
            })
            .collect();
        assert_eq!(
            grid_size(&across).unwrap_err(),
            build_grid(&across).unwrap_err()
        );
    }

    #[test]
    fn a_mesh_of_boxes_across_the_whole_grid_is_refused_before_its_references_are_allocated() {
        // Thin boxes that each span the grid along x, y and z in turn: every top cell holds
        // every box.
        let boxes: Vec<Aabb> = (0..3000)
            .map(|i| {
                let t = i as f32 / 3000.0;
                Aabb::new(Vec3::new(0.0, 0.0, t), Vec3::new(1.0, 1.0, t + 1e-4))
            })
            .collect();
        let err = build_grid(&boxes).unwrap_err();
        assert!(err.refs > err.limit, "{err:?}");
        assert_eq!(err.limit, refs_limit(3000));
    }

    #[test]
    fn a_walk_visits_the_leaves_along_the_ray_and_stops_behind_the_closest_hit() {
        // A row of unit boxes along x; a ray along x tests them in order and, with a hit
        // at the second box, stops before the fourth.
        let boxes: Vec<Aabb> = (0..64)
            .map(|i| {
                Aabb::new(
                    Vec3::new(i as f32, 0.0, 0.0),
                    Vec3::new(i as f32 + 0.5, 0.5, 0.5),
                )
            })
            .collect();
        let build = build_grid(&boxes).unwrap();
        let mut order = Vec::new();
        let mut limit = f32::INFINITY;
        let stopped = walk(
            &build.words,
            Vec3::new(-1.0, 0.25, 0.25),
            Vec3::X,
            0.0,
            &mut limit,
            &mut |prim, limit| {
                if order.last() != Some(&prim) {
                    order.push(prim);
                }
                if prim == 1 {
                    *limit = limit.min(2.0);
                }
                false
            },
        );
        assert!(!stopped);
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(order, sorted, "tested front to back");
        assert!(order.starts_with(&[0, 1]), "{order:?}");
        assert!(order.iter().all(|&p| p <= 3), "{order:?}");
    }
}
