//! k-nearest-neighbour queries over point kd-trees (layout in `accel::kdtree`): the CPU twin of
//! the GPU search in `shaders/shared/knn.wgsl`, step for step, and a brute-force reference.
//!
//! # Results
//!
//! A point is a *candidate* for query `q` when its squared distance ([`squared_distance`]) is at
//! most `max_dist2` (`f32::INFINITY` for no radius). The answer is the `k` smallest candidates in
//! the order of [`Neighbour::precedes`]: by squared distance, ties broken by the smaller point
//! index. That order is total on candidates, so the answer is unique: every correct search (the
//! tree on the CPU or the GPU, brute force) returns the same list, bit for bit.
//!
//! # Why the same distances on both sides
//!
//! The squared distance must come out bit for bit the same on the CPU and on every GPU, or ties
//! and near-ties would pick different neighbours. A plain `dx·dx + dy·dy + dz·dz` does not: a
//! GPU driver may contract `a·b + c` into a fused multiply-add, and WGSL's `fma` is not fused
//! everywhere either (lavapipe computes `fma(0.1, 0.1, -0.01)` unfused: `9.31e-10`, where a fused
//! multiply-add gives `5.22e-10`). So [`squared_distance`] makes every product exact: each
//! difference `d = q − p` (one rounding) is split by masking its bits into `h` (its 12 leading
//! significant bits) and `l = d − h` (exact, at most 12 bits), and `d² = h² + 2hl + l²` is summed
//! from these exact products in a fixed order. With exact products a fused and an unfused
//! multiply-add round the same sum, so any contraction leaves the result unchanged. (Squares that
//! fall below `f32::MIN_POSITIVE`, from coordinates that differ by less than about `1e-16`, are
//! subnormal and may be flushed by a GPU; such points can then differ in the last bit.)
//!
//! # The search
//!
//! Depth first, nearer child first, with an explicit stack of the far children that may still
//! hold an answer. A max-heap of at most `k` entries (ordered by `precedes`) holds the best so
//! far; the *bound* is `max_dist2` while fewer than `k` were found and the heap top's squared
//! distance afterwards. A far child is skipped, or dropped when popped, only when the squared
//! distance to its box ([`box_distance2`]: the query's offsets from the planes that bound it on
//! each axis, carried down the path as Arya and Mount do, shrunk to stay below every point in it
//! despite rounding) is *strictly* greater than the bound, so a point at exactly the bound with
//! a smaller index than the heap top is never missed. (The box, not only the last splitting
//! plane: a query level with a dense cluster on two axes but far from it on the third would
//! otherwise enter every node of the cluster that splits on the first two.) The CPU and the GPU
//! take the same steps in the same order, so their heaps end in the same layout (the photon
//! density estimate sums in heap order on both sides). A skipped subtree holds no point that
//! would have changed the heap, so how tightly it is bounded changes which nodes are visited,
//! never the heap.

use glam::Vec3;

use super::kdtree::{KD_INDEX_MASK, KD_LEAF};

/// The largest `k` the GPU search holds (its heap size); the CPU search has no limit.
pub const KNN_MAX_K: usize = 128;

/// One neighbour: squared distance and point index. Order: by (dist2, index) — ties broken by
/// the smaller index.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Neighbour {
    pub dist2: f32,
    pub index: u32,
}

impl Neighbour {
    /// Whether `self` comes before `other` in the result order: smaller squared distance, or the
    /// same distance and a smaller index. (Candidates never have a NaN distance.)
    pub fn precedes(self, other: Neighbour) -> bool {
        self.dist2 < other.dist2 || (self.dist2 == other.dist2 && self.index < other.index)
    }
}

/// `|a − b|²` over xyz with exact products in a fixed order (module docs): the one formula the
/// CPU and the GPU (`knn_distance2` in WGSL) both use. Each nonnegative term is rounded at most
/// four times, so the result is within 4 units of roundoff of the exact squared length of the
/// rounded differences.
pub fn squared_distance(a: [f32; 4], b: [f32; 4]) -> f32 {
    let (hx, lx) = split(a[0] - b[0]);
    let (hy, ly) = split(a[1] - b[1]);
    let (hz, lz) = split(a[2] - b[2]);
    let high = (hx * hx + hy * hy) + hz * hz;
    let middle = (2.0 * (hx * lx) + 2.0 * (hy * ly)) + 2.0 * (hz * lz);
    let low = (lx * lx + ly * ly) + lz * lz;
    high + (middle + low)
}

/// `d` as `h + l` exactly, `h` its 12 leading significant bits (the low 12 mantissa bits
/// cleared) and `l = d − h` the rest (at most 12 bits, the sign of `d`), so that `h²`, `h·l` and
/// `l²` are exact in `f32`.
fn split(d: f32) -> (f32, f32) {
    let h = f32::from_bits(d.to_bits() & 0xffff_f000);
    (h, d - h)
}

/// The factor that shrinks a splitting plane's squared distance below the computed squared
/// distance of every point beyond it, `1 − 2⁻²⁰` (see [`knn_search`]).
pub const PLANE_SHRINK: f32 = 1.0 - 1.0 / (1u32 << 20) as f32;

/// The squared distance from `q` to a splitting plane at `split` on one axis, made a lower bound
/// of the computed squared distance of every point beyond the plane (see [`knn_search`]).
pub fn plane_distance2(q: f32, split: f32) -> f32 {
    let diff = q - split;
    (diff * diff) * PLANE_SHRINK
}

/// The squared distance from the query to a node's box, given the query's offset from the box
/// on each axis (`q − split` of the nearest plane bounding the node on that axis, 0 where the
/// query is within its slab), made a lower bound of the computed squared distance of every
/// point in the node: the sum of squares of differences no larger in magnitude than each
/// point's, shrunk by [`PLANE_SHRINK`] past the few roundings either sum takes (Arya and
/// Mount's incremental distance; see [`knn_search`]).
pub fn box_distance2(offsets: [f32; 3]) -> f32 {
    let [x, y, z] = offsets;
    ((x * x + y * y) + z * z) * PLANE_SHRINK
}

/// Cells per unit length of the Morton order's cube of side `side`: 1024 cells an axis (a
/// degenerate cube is one cell).
pub fn morton_scale(side: f32) -> f32 {
    if side > 0.0 && side.is_finite() {
        1024.0 / side
    } else {
        0.0
    }
}

/// The 30-bit Morton code of `p` in the cube at `lo` with `scale` cells per unit length (10 bits
/// an axis, clamped to the cube): x in bit 0, y in bit 1, z in bit 2 of every triple. Twin of
/// `prims/morton_codes.wgsl`. Queries taken in this order (`cpu::prims::morton_order`,
/// `gpu::prims::morton`) walk a tree coherently.
pub fn morton_code(p: [f32; 4], lo: [f32; 3], scale: f32) -> u32 {
    let spread = |v: u32| -> u32 {
        let mut x = v & 0x3ff;
        x = (x | (x << 16)) & 0x0300_00ff;
        x = (x | (x << 8)) & 0x0300_f00f;
        x = (x | (x << 4)) & 0x030c_30c3;
        (x | (x << 2)) & 0x0924_9249
    };
    let cell = |v: f32, lo: f32| ((v - lo) * scale).clamp(0.0, 1023.0) as u32;
    spread(cell(p[0], lo[0])) | (spread(cell(p[1], lo[1])) << 1) | (spread(cell(p[2], lo[2])) << 2)
}

/// The `k` nearest points to `query` within squared distance `max_dist2`, by a search of the
/// kd-tree `words` (layout in `accel::kdtree`) over `points`; sorted by (dist2, index).
///
/// Any `k` works here (the GPU refuses `k > KNN_MAX_K`); `k = 0` gives an empty list. `words`
/// must be a tree made by a builder of this crate over `points`: an index out of range is a
/// broken builder invariant and panics. An empty `words` is read as the empty tree.
pub fn knn(
    words: &[u32],
    points: &[[f32; 4]],
    query: Vec3,
    k: usize,
    max_dist2: f32,
) -> Vec<Neighbour> {
    let mut heap = KnnHeap::new(k, max_dist2);
    knn_search(words, points, query, &mut heap);
    heap.into_sorted()
}

/// The `k` nearest points to `query` within squared distance `max_dist2` by testing every point;
/// sorted by (dist2, index). The reference the tree searches are tested against.
pub fn knn_brute_force(
    points: &[[f32; 4]],
    query: Vec3,
    k: usize,
    max_dist2: f32,
) -> Vec<Neighbour> {
    let q = [query.x, query.y, query.z, 0.0];
    let mut all: Vec<Neighbour> = points
        .iter()
        .enumerate()
        .map(|(i, p)| Neighbour {
            dist2: squared_distance(q, *p),
            index: i as u32,
        })
        .filter(|n| n.dist2 <= max_dist2)
        .collect();
    all.sort_by(|a, b| a.dist2.total_cmp(&b.dist2).then(a.index.cmp(&b.index)));
    all.truncate(k);
    all
}

/// The best candidates found so far: a binary max-heap under [`Neighbour::precedes`] (the worst
/// at the root), the twin of `knn_heap_dist` / `knn_heap_index` in `shaders/shared/knn.wgsl`.
#[derive(Clone, Debug)]
pub struct KnnHeap {
    entries: Vec<Neighbour>,
    k: usize,
    max_dist2: f32,
}

impl KnnHeap {
    /// An empty heap for the `k` best candidates within squared distance `max_dist2`.
    pub fn new(k: usize, max_dist2: f32) -> KnnHeap {
        KnnHeap {
            entries: Vec::with_capacity(k.min(1 << 16)),
            k,
            max_dist2,
        }
    }

    /// The heap's entries in heap order (the root, the worst, first).
    pub fn entries(&self) -> &[Neighbour] {
        &self.entries
    }

    /// Whether `k` candidates were found.
    pub fn is_full(&self) -> bool {
        self.entries.len() >= self.k
    }

    /// A point farther (squared) than this cannot enter the heap: `max_dist2` until `k` were
    /// found, then the worst one's squared distance (a point at exactly the bound may still
    /// enter with a smaller index).
    pub fn bound(&self) -> f32 {
        if self.is_full() {
            self.entries.first().map_or(self.max_dist2, |n| n.dist2)
        } else {
            self.max_dist2
        }
    }

    /// Offers a point: kept when it is a candidate and better than the worst of a full heap.
    pub fn offer(&mut self, candidate: Neighbour) {
        if self.k == 0 {
            return;
        }
        if !self.is_full() {
            // A NaN distance or radius finds nothing.
            let within = candidate.dist2 <= self.max_dist2;
            if !within {
                return;
            }
            // Sift up: move worse-than-candidate parents down until its place is found.
            let mut c = self.entries.len();
            self.entries.push(candidate);
            while c > 0 {
                let parent = (c - 1) / 2;
                if !self.entries[parent].precedes(candidate) {
                    break;
                }
                self.entries[c] = self.entries[parent];
                c = parent;
            }
            self.entries[c] = candidate;
            return;
        }
        if candidate.precedes(self.entries[0]) {
            let size = self.entries.len();
            self.sift_down(size, candidate);
        }
    }

    /// Places `value` at the root and sifts it down within `entries[..size]`.
    fn sift_down(&mut self, size: usize, value: Neighbour) {
        let mut c = 0;
        loop {
            let left = 2 * c + 1;
            if left >= size {
                break;
            }
            let mut worse = left;
            let right = left + 1;
            if right < size && self.entries[left].precedes(self.entries[right]) {
                worse = right;
            }
            if !value.precedes(self.entries[worse]) {
                break;
            }
            self.entries[c] = self.entries[worse];
            c = worse;
        }
        self.entries[c] = value;
    }

    /// The entries in ascending order, by the heap sort `knn_sort_heap` runs in WGSL.
    pub fn into_sorted(mut self) -> Vec<Neighbour> {
        for end in (1..self.entries.len()).rev() {
            let last = self.entries[end];
            self.entries[end] = self.entries[0];
            self.sift_down(end, last);
        }
        self.entries
    }
}

/// Whether the node at word `w` is a leaf with no points.
fn is_empty_leaf(words: &[u32], w: usize) -> bool {
    words[w] == KD_LEAF
}

/// Searches the tree `words` over `points` for the candidates nearest to `query`, offering them
/// to `heap`: the twin of `knn_search` in `shaders/shared/knn.wgsl`, in the same order of steps.
///
/// Pruning is exact despite rounding. Say the query lies on the left of a split `s` on axis `a`
/// (`q[a] <= s`) and `p` is in the right subtree (`p[a] >= s`). Then `q[a] − p[a] <= q[a] − s <=
/// 0` exactly, and rounding is monotone, so `|fl(q[a] − p[a])| >= |fl(q[a] − s)| = |diff|`. The
/// computed squared distance of `p` sums nonnegative exact products with at most four roundings
/// each, so it is at least `(1 − u)⁴` times the exact `|d|² >= diff²` (`u = 2⁻²⁴`), while
/// [`plane_distance2`] is at most `(1 + u)²·(1 − 2⁻²⁰)·diff²`, which is smaller. So every point
/// beyond the plane has a computed squared distance of at least the plane's, and a subtree whose
/// plane is strictly farther than the bound holds no point that could enter the heap, not even
/// on a tie. (The builders' splits are points' coordinates, so this holds for finite, normal
/// coordinates; `accel::kdtree::kd_coord` maps other values.)
///
/// The stack holds a far child only at a node whose two children are both non-empty (an empty
/// leaf is never pushed), so its depth is at most the tree's `max_branch_depth`; the GPU's fixed
/// stack of `KD_MAX_BRANCH_DEPTH` entries relies on that.
pub fn knn_search(words: &[u32], points: &[[f32; 4]], query: Vec3, heap: &mut KnnHeap) {
    knn_search_filtered(words, points, query, heap, |_| true);
}

/// The `k` nearest points to `query` within `max_dist2` among those `accept` takes (by index),
/// sorted by (dist2, index): [`knn`] over the accepted points alone, by the same search (a
/// point `accept` refuses is never offered, so it neither enters the list nor tightens the
/// bound). The GPU twin is `knn_search` in `shaders/shared/knn.wgsl` compiled with `KNN_FILTER`.
pub fn knn_filtered(
    words: &[u32],
    points: &[[f32; 4]],
    query: Vec3,
    k: usize,
    max_dist2: f32,
    accept: impl Fn(u32) -> bool,
) -> Vec<Neighbour> {
    let mut heap = KnnHeap::new(k, max_dist2);
    knn_search_filtered(words, points, query, &mut heap, accept);
    heap.into_sorted()
}

/// [`knn_search`] offering only the points `accept` takes.
pub fn knn_search_filtered(
    words: &[u32],
    points: &[[f32; 4]],
    query: Vec3,
    heap: &mut KnnHeap,
    accept: impl Fn(u32) -> bool,
) {
    if words.is_empty() || heap.k == 0 {
        return;
    }
    let q = [query.x, query.y, query.z, 0.0];
    // (node word, the query's offsets from its box, their squared length).
    let mut stack: Vec<(usize, [f32; 3], f32)> = Vec::new();
    let mut node = 0usize;
    // The current node's offsets (the root's box holds the query).
    let mut offsets = [0.0f32; 3];
    loop {
        // Descend from `node` to a leaf, nearer child first.
        loop {
            let w = words[node];
            if w & KD_LEAF == KD_LEAF {
                let n = (w & KD_INDEX_MASK) as usize;
                for &i in words[node + 1..node + 1 + n].iter().filter(|&&i| accept(i)) {
                    heap.offer(Neighbour {
                        dist2: squared_distance(q, points[i as usize]),
                        index: i,
                    });
                }
                break;
            }
            let axis = (w >> 30) as usize;
            let right = (w & KD_INDEX_MASK) as usize;
            let split = f32::from_bits(words[node + 1]);
            // The far child lies beyond the plane: its offset on this axis is the plane's.
            let mut far_offsets = offsets;
            far_offsets[axis] = q[axis] - split;
            let far2 = box_distance2(far_offsets);
            let (near, far) = if q[axis] > split {
                (right, node + 2)
            } else {
                (node + 2, right)
            };
            if is_empty_leaf(words, far) {
                node = near;
                continue;
            }
            if is_empty_leaf(words, near) {
                if far2 <= heap.bound() {
                    node = far;
                    offsets = far_offsets;
                    continue;
                }
                break;
            }
            if far2 <= heap.bound() {
                stack.push((far, far_offsets, far2));
            }
            node = near;
        }
        // Resume at the nearest-pushed far child that may still hold an answer.
        loop {
            match stack.pop() {
                None => return,
                Some((far, far_offsets, far2)) if far2 <= heap.bound() => {
                    node = far;
                    offsets = far_offsets;
                    break;
                }
                Some(_) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hand-built tree over 6 points on a line (x = index): split x at 2.5 (w0), leaf
    /// [0, 1, 2] (w2), split x at 4.5 (w6), leaf [3, 4] (w8), split y at 0 (w11) with the leaf
    /// [5] (w13) on its left and an empty leaf (w15) on its right.
    fn line_tree() -> (Vec<u32>, Vec<[f32; 4]>) {
        let points: Vec<[f32; 4]> = (0..6).map(|i| [i as f32, 0.0, 0.0, 0.0]).collect();
        let words = vec![
            6, // 0: axis 0, right = 6
            2.5f32.to_bits(),
            KD_LEAF | 3, // 2
            0,
            1,
            2,
            11, // 6: axis 0, right = 11
            4.5f32.to_bits(),
            KD_LEAF | 2, // 8
            3,
            4,
            1 << 30 | 15, // 11: axis 1, right = 15
            0f32.to_bits(),
            KD_LEAF | 1, // 13
            5,
            KD_LEAF, // 15: empty leaf
        ];
        (words, points)
    }

    #[test]
    fn hand_built_tree_answers_like_brute_force_for_every_k_and_radius() {
        let (words, points) = line_tree();
        for qx in [-1.0f32, 0.0, 1.5, 2.5, 3.0, 4.5, 5.0, 9.0] {
            for k in 0..8 {
                for max in [f32::INFINITY, 0.0, 0.25, 1.0, 2.25, 4.0] {
                    let q = Vec3::new(qx, 0.0, 0.0);
                    assert_eq!(
                        knn(&words, &points, q, k, max),
                        knn_brute_force(&points, q, k, max),
                        "q = {qx}, k = {k}, max = {max}"
                    );
                }
            }
        }
    }

    #[test]
    fn equal_distances_choose_the_smaller_indices() {
        let points = vec![[1.0, 0.0, 0.0, 0.0]; 10];
        let tree = [KD_LEAF | 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0];
        let found = knn(&tree, &points, Vec3::ZERO, 3, f32::INFINITY);
        let indices: Vec<u32> = found.iter().map(|n| n.index).collect();
        assert_eq!(indices, [0, 1, 2]);
    }

    #[test]
    fn empty_trees_and_zero_k_find_nothing() {
        let points = [[0.0; 4]];
        assert!(knn(&[], &points, Vec3::ZERO, 4, f32::INFINITY).is_empty());
        assert!(knn(&[KD_LEAF], &points, Vec3::ZERO, 4, f32::INFINITY).is_empty());
        assert!(knn(&[KD_LEAF | 1, 0], &points, Vec3::ZERO, 0, f32::INFINITY).is_empty());
        assert!(knn(&[KD_LEAF | 1, 0], &points, Vec3::ONE, 1, f32::NAN).is_empty());
    }

    #[test]
    fn squared_distance_is_within_six_roundoffs_of_the_exact_value() {
        let mut state = 0x1234_5678_9abc_def0u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
        };
        for i in 0..100_000 {
            let scale = [1.0f32, 1e-3, 1e3, 1e-12][i % 4];
            let a = [next() * scale, next() * scale, next(), 0.0];
            let b = [next() * scale, next(), next() * scale, 0.0];
            let d = [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
            let exact: f64 = d.iter().map(|&c| c as f64 * c as f64).sum();
            let got = squared_distance(a, b) as f64;
            assert!(
                (got - exact).abs() <= exact * 6.0 * f32::EPSILON as f64 / 2.0,
                "{a:?} {b:?}: {got} vs {exact}"
            );
        }
        assert_eq!(
            squared_distance([1.0, 2.0, 3.0, 0.0], [1.0, 2.0, 3.0, 9.0]),
            0.0
        );
        assert_eq!(squared_distance([0.0; 4], [3.0, 4.0, 0.0, 0.0]), 25.0);
    }

    #[test]
    fn the_plane_shrink_has_the_bits_the_wgsl_twin_uses() {
        // KNN_PLANE_SHRINK_BITS in shaders/shared/knn.wgsl.
        assert_eq!(PLANE_SHRINK.to_bits(), 0x3f7f_fff0);
    }

    /// A point just beyond a plane is never closer (as computed) than the plane.
    #[test]
    fn planes_are_never_farther_than_the_points_beyond_them() {
        let mut state = 0x0fed_cba9_8765_4321u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32
        };
        for _ in 0..200_000 {
            let q = next() * 2.0 - 1.0;
            let split = q + next() * 1e-3;
            // 0 to 3 representable steps above the split.
            let steps = (next() * 4.0) as u32;
            let beyond = if split >= 0.0 {
                f32::from_bits(split.to_bits() + steps)
            } else {
                f32::from_bits(split.to_bits() - steps)
            };
            let p = [beyond, next() * 1e-4, 0.0, 0.0];
            assert!(
                squared_distance([q, 0.0, 0.0, 0.0], p) >= plane_distance2(q, split),
                "q {q} split {split} p {p:?}"
            );
        }
    }
}
