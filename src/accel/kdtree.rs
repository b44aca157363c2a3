//! Point kd-trees over photons and irradiance samples (paper 003 section 6.2.2): the compact
//! preorder layout every query reads, and the CPU twin of the GPU builder in `gpu::kdtree`.
//!
//! # Layout (shared by the CPU twin, the GPU builder and every query, CPU or WGSL)
//!
//! A tree is one array of `u32` words in preorder:
//! - an **internal node** at word `w` takes two words: `words[w] = axis << 30 | right`, where
//!   `axis` is 0, 1 or 2 and `right` (30 bits) is the word index of the right child, and
//!   `words[w + 1] = split.to_bits()`. The left child starts at `w + 2`. Every point of the left
//!   subtree has `p[axis] <= split` and every point of the right subtree has `p[axis] >= split`.
//! - a **leaf** at word `w` takes `1 + n` words: `words[w] = 3 << 30 | n` and
//!   `words[w + 1 ..= w + n]` are the indices of its `n` points in the input array. Empty
//!   leaves (`n = 0`, from empty-space cut-offs) are allowed.
//!
//! A tree over no points is the single word `3 << 30`. Points are given as `[f32; 4]` (xyz, w
//! unused) so that the same array is the GPU's `array<vec4<f32>>`.
//!
//! `max_branch_depth` is the largest number of internal nodes with two non-empty children on
//! any root-to-leaf path: a query's stack never holds more entries than that, and builders keep
//! it at most [`KD_MAX_BRANCH_DEPTH`].

/// Tag of a leaf in bits 30–31 of its first word.
pub const KD_LEAF: u32 = 3 << 30;
/// The right-child index / leaf count in bits 0–29.
pub const KD_INDEX_MASK: u32 = (1 << 30) - 1;
/// The deepest branching a builder may produce (the size of every query's stack).
pub const KD_MAX_BRANCH_DEPTH: u32 = 64;

// The build (paper 003 section 6.2.2), shared by the CPU twin below and the GPU builder in
// `gpu::kdtree`, which makes the same choices and so writes the same words:
//
// 1. Initialization: three lists of point indices sorted by x, y and z by the order-preserving
//    key `kd_key` (stable, so equal coordinates keep index order: every list is sorted by
//    (key, index)). The root's inherited box is the scene box, read from the lists' ends.
// 2. Large nodes (more than `KD_SMALL_NODE` points), level by level: the tight box from the
//    lists' ends; empty-space cut-offs (a side whose gap to the inherited box exceeds
//    `KD_EMPTY_CUT_FRACTION` of the inherited extent on that axis becomes an internal node with
//    an empty leaf, in the order x-min, x-max, y-min, y-max, z-min, z-max, outermost first);
//    then a leaf if all points are equal, else a median split on the longest axis of the tight
//    box (ties: the lowest axis): the left child takes the first `cnt / 2` entries of that
//    axis's list and the split is the coordinate of the last of them (so `left <= split <=
//    right` holds with duplicates). Every list is partitioned stably, so the children's lists
//    stay sorted.
// 3. Small nodes (at most `KD_SMALL_NODE` points, taken in x-list order): the VVH split over
//    the `3·n` candidate planes at the points' coordinates, with `u32` point masks. A candidate
//    (axis a, coordinate s of point j) sends `{p : key_a(p) <= key_a(s)}` left and the rest
//    right; it is valid when the right side is not empty. Costs are compared exactly the same
//    way on the CPU and the GPU (see `small_split_cost`), and the node is split when
//    `C_ts + (N_L·V_L + N_R·V_R)/V < N`, i.e. `C_ts·ext + S < N·ext` along the split axis.
// 4. Output: the compact preorder layout above.

/// Nodes with at most this many points are small: split by VVH with one `u32` mask per node.
pub const KD_SMALL_NODE: u32 = 32;
/// A side of a large node whose empty gap to the inherited box exceeds this fraction of the
/// inherited extent along its axis is cut off as an empty leaf.
pub const KD_EMPTY_CUT_FRACTION: f32 = 0.25;
/// The VVH traversal cost `C_ts`, in units of one point test. A power of two, so that
/// `C_ts·ext` is exact (the CPU and the GPU then compare the same numbers). With 4 a uniform
/// node stops splitting at about 8 points.
pub const KD_VVH_TRAVERSAL_COST: f32 = 4.0;
/// The most points a tree may hold: keeps every word index within 30 bits (a tree takes at
/// most about `5.3·n` words).
pub const KD_MAX_POINTS: usize = 1 << 27;

/// A point kd-tree in the layout above, with its shape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PointKdTree {
    /// The tree in preorder (see the module docs).
    pub words: Vec<u32>,
    /// The number of points it was built over.
    pub point_count: u32,
    /// The largest number of branching internal nodes (both children non-empty) on a path.
    pub max_branch_depth: u32,
    /// Every node: internal nodes and leaves (empty leaves included).
    pub node_count: u32,
    /// Leaves, empty ones included.
    pub leaf_count: u32,
}

/// What `validate_point_kdtree` found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KdTreeShape {
    pub point_count: u32,
    /// Internal nodes and leaves.
    pub node_count: u32,
    pub leaf_count: u32,
    /// Leaves with no points (empty-space cut-offs).
    pub empty_leaf_count: u32,
    pub max_branch_depth: u32,
    pub max_leaf_size: u32,
}

/// Why a tree could not be built.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KdBuildError {
    #[error("a point kd-tree holds at most {limit} points, but {count} were given")]
    TooManyPoints { count: usize, limit: usize },
}

/// The coordinate the builders and the validator use for `c`: NaN becomes 0, ±inf becomes
/// ±`f32::MAX`, subnormals and −0 become +0. Finite, normal inputs are unchanged (but for −0).
/// Callers should pass finite points; this only keeps the build terminating and valid (every
/// index in exactly one leaf) when they do not. The GPU does the same with integer operations.
pub fn kd_coord(c: f32) -> f32 {
    let bits = c.to_bits();
    let exponent = bits & 0x7f80_0000;
    if exponent == 0x7f80_0000 {
        if bits & 0x007f_ffff != 0 {
            0.0
        } else {
            f32::from_bits((bits & 0x8000_0000) | 0x7f7f_ffff)
        }
    } else if exponent == 0 {
        0.0
    } else {
        c
    }
}

/// An order-preserving `u32` key of `kd_coord(c)`: keys compare as the coordinates do, and equal
/// keys mean equal coordinates.
pub fn kd_key(c: f32) -> u32 {
    let bits = kd_coord(c).to_bits();
    if bits & 0x8000_0000 != 0 {
        !bits
    } else {
        bits | 0x8000_0000
    }
}

/// `x` with its five lowest mantissa bits cleared (19 significant bits), so that its product by
/// a point count (at most 32) is exact and a fused multiply-add gives the same sum as separate
/// operations: the GPU may fuse, the CPU does not.
pub fn kd_truncate_mantissa(x: f32) -> f32 {
    f32::from_bits(x.to_bits() & 0xffff_ffe0)
}

/// The VVH cost numerator of a small-node candidate: `N_L·(s − lo) + N_R·(hi − s)` with the
/// distances truncated by [`kd_truncate_mantissa`] (the twin of `small_split_cost` in
/// `shaders/kdtree/build_common.wgsl`).
pub fn small_split_cost(n_left: u32, n_right: u32, s: f32, lo: f32, hi: f32) -> f32 {
    n_left as f32 * kd_truncate_mantissa(s - lo) + n_right as f32 * kd_truncate_mantissa(hi - s)
}

/// Whether a large node's side is cut off as an empty leaf: `gap > C_e · extent`.
pub fn empty_side_is_cut(gap: f32, inherited_extent: f32) -> bool {
    gap > KD_EMPTY_CUT_FRACTION * inherited_extent
}

/// An axis-aligned box as `[lo, hi]` per axis.
type Bounds = [[f32; 2]; 3];

/// Builds the point kd-tree over `points` (xyz; w unused) on the CPU: the twin of
/// `gpu::kdtree::KdTreeBuilder`, writing the same words.
///
/// # Panics
/// With more than [`KD_MAX_POINTS`] points; use [`try_build_point_kdtree`] for input of unknown
/// size.
pub fn build_point_kdtree(points: &[[f32; 4]]) -> PointKdTree {
    match try_build_point_kdtree(points) {
        Ok(tree) => tree,
        Err(e) => panic!("{e}"),
    }
}

/// Builds the point kd-tree over `points`, refusing more than [`KD_MAX_POINTS`].
pub fn try_build_point_kdtree(points: &[[f32; 4]]) -> Result<PointKdTree, KdBuildError> {
    let n = points.len();
    if n > KD_MAX_POINTS {
        return Err(KdBuildError::TooManyPoints {
            count: n,
            limit: KD_MAX_POINTS,
        });
    }
    if n == 0 {
        return Ok(PointKdTree {
            words: vec![KD_LEAF],
            point_count: 0,
            max_branch_depth: 0,
            node_count: 1,
            leaf_count: 1,
        });
    }
    let coords: Vec<[f32; 3]> = points
        .iter()
        .map(|p| [kd_coord(p[0]), kd_coord(p[1]), kd_coord(p[2])])
        .collect();
    let keys: Vec<[u32; 3]> = points
        .iter()
        .map(|p| [kd_key(p[0]), kd_key(p[1]), kd_key(p[2])])
        .collect();
    let mut lists: [Vec<u32>; 3] = std::array::from_fn(|_| (0..n as u32).collect());
    for (axis, list) in lists.iter_mut().enumerate() {
        // Stable: equal keys keep index order.
        list.sort_by_key(|&p| keys[p as usize][axis]);
    }
    let scene: Bounds = std::array::from_fn(|a| {
        [
            coords[lists[a][0] as usize][a],
            coords[lists[a][n - 1] as usize][a],
        ]
    });
    let mut builder = CpuBuilder {
        coords,
        keys,
        lists,
        scratch: Vec::with_capacity(n),
        words: Vec::with_capacity(n * 2),
        max_branch_depth: 0,
        node_count: 0,
        leaf_count: 0,
    };
    if n > KD_SMALL_NODE as usize {
        builder.large(0, n, scene, 0);
    } else {
        let indices = builder.lists[0].clone();
        builder.small(&indices, scene, 0);
    }
    Ok(PointKdTree {
        words: builder.words,
        point_count: n as u32,
        max_branch_depth: builder.max_branch_depth,
        node_count: builder.node_count,
        leaf_count: builder.leaf_count,
    })
}

struct CpuBuilder {
    coords: Vec<[f32; 3]>,
    keys: Vec<[u32; 3]>,
    /// The three sorted lists; a node owns the same range `start..start + count` in each.
    lists: [Vec<u32>; 3],
    scratch: Vec<u32>,
    words: Vec<u32>,
    max_branch_depth: u32,
    node_count: u32,
    leaf_count: u32,
}

impl CpuBuilder {
    fn leaf(&mut self, indices: impl ExactSizeIterator<Item = u32>, depth: u32) {
        self.words.push(KD_LEAF | indices.len() as u32);
        self.words.extend(indices);
        self.node_count += 1;
        self.leaf_count += 1;
        self.max_branch_depth = self.max_branch_depth.max(depth);
    }

    /// A large node over `start..start + count` of the lists, at branch depth `depth`.
    fn large(&mut self, start: usize, count: usize, inherited: Bounds, depth: u32) {
        let last = start + count - 1;
        let tight: Bounds = std::array::from_fn(|a| {
            [
                self.coords[self.lists[a][start] as usize][a],
                self.coords[self.lists[a][last] as usize][a],
            ]
        });
        // Empty-space cut-offs, outermost first; max-side leaves are placed after the rest.
        let mut bounds = inherited;
        let mut max_cuts = Vec::new();
        for side in 0..6 {
            let (a, upper) = (side / 2, side % 2 == 1);
            let extent = inherited[a][1] - inherited[a][0];
            let gap = if upper {
                inherited[a][1] - tight[a][1]
            } else {
                tight[a][0] - inherited[a][0]
            };
            if !empty_side_is_cut(gap, extent) {
                continue;
            }
            let w = self.words.len() as u32;
            let split = tight[a][upper as usize];
            bounds[a][upper as usize] = split;
            self.node_count += 2;
            self.leaf_count += 1;
            if upper {
                self.words.extend([(a as u32) << 30, split.to_bits()]);
                max_cuts.push(w);
            } else {
                self.words
                    .extend([(a as u32) << 30 | (w + 3), split.to_bits(), KD_LEAF]);
            }
        }
        let all_equal = (0..3).all(|a| {
            self.keys[self.lists[a][start] as usize][a]
                == self.keys[self.lists[a][last] as usize][a]
        });
        if all_equal {
            let indices = self.lists[0][start..=last].to_vec();
            self.leaf(indices.into_iter(), depth);
        } else {
            let mut axis = 0;
            for a in 1..3 {
                if tight[a][1] - tight[a][0] > tight[axis][1] - tight[axis][0] {
                    axis = a;
                }
            }
            let left = count / 2;
            let median = self.lists[axis][start + left - 1];
            let median_key = self.keys[median as usize][axis];
            let split = self.coords[median as usize][axis];
            for b in 0..3 {
                if b == axis {
                    continue;
                }
                // Stable partition: (key, index) <= the median's goes left.
                let keys = &self.keys;
                let is_left = |p: u32| {
                    let k = keys[p as usize][axis];
                    k < median_key || (k == median_key && p <= median)
                };
                self.scratch.clear();
                let range = &self.lists[b][start..=last];
                self.scratch
                    .extend(range.iter().copied().filter(|&p| is_left(p)));
                self.scratch
                    .extend(range.iter().copied().filter(|&p| !is_left(p)));
                self.lists[b][start..=last].copy_from_slice(&self.scratch);
            }
            let w = self.words.len();
            self.words.extend([(axis as u32) << 30, split.to_bits()]);
            self.node_count += 1;
            let mut left_bounds = bounds;
            left_bounds[axis][1] = split;
            let mut right_bounds = bounds;
            right_bounds[axis][0] = split;
            self.child(start, left, left_bounds, depth + 1);
            self.words[w] |= self.words.len() as u32;
            self.child(start + left, count - left, right_bounds, depth + 1);
        }
        for &w in max_cuts.iter().rev() {
            self.words[w as usize] |= self.words.len() as u32;
            self.words.push(KD_LEAF);
        }
    }

    fn child(&mut self, start: usize, count: usize, bounds: Bounds, depth: u32) {
        if count > KD_SMALL_NODE as usize {
            self.large(start, count, bounds, depth);
        } else {
            let indices = self.lists[0][start..start + count].to_vec();
            self.small(&indices, bounds, depth);
        }
    }

    /// A small root over `indices` (in x-list order, 1..=KD_SMALL_NODE of them).
    fn small(&mut self, indices: &[u32], bounds: Bounds, depth: u32) {
        let n = indices.len();
        debug_assert!((1..=KD_SMALL_NODE as usize).contains(&n));
        let coords: Vec<[f32; 3]> = indices.iter().map(|&p| self.coords[p as usize]).collect();
        let keys: Vec<[u32; 3]> = indices.iter().map(|&p| self.keys[p as usize]).collect();
        // left_sets[a][j]: the points whose key on axis a is at most point j's.
        let left_sets: [Vec<u32>; 3] = std::array::from_fn(|a| {
            (0..n)
                .map(|j| {
                    (0..n)
                        .filter(|&i| keys[i][a] <= keys[j][a])
                        .fold(0u32, |m, i| m | 1 << i)
                })
                .collect()
        });
        let all = if n == 32 { u32::MAX } else { (1u32 << n) - 1 };
        let small = SmallRoot {
            indices,
            coords: &coords,
            left_sets: &left_sets,
        };
        small.node(self, all, bounds, depth);
    }
}

/// The points of one small root and their candidate left sets.
struct SmallRoot<'a> {
    indices: &'a [u32],
    coords: &'a [[f32; 3]],
    left_sets: &'a [Vec<u32>; 3],
}

impl SmallRoot<'_> {
    fn node(&self, out: &mut CpuBuilder, mask: u32, bounds: Bounds, depth: u32) {
        match self.best_split(mask, &bounds, depth) {
            None => {
                let indices: Vec<u32> = (0..self.indices.len())
                    .filter(|&j| mask & 1 << j != 0)
                    .map(|j| self.indices[j])
                    .collect();
                out.leaf(indices.into_iter(), depth);
            }
            Some((axis, j)) => {
                let split = self.coords[j][axis];
                let left = mask & self.left_sets[axis][j];
                let w = out.words.len();
                out.words.extend([(axis as u32) << 30, split.to_bits()]);
                out.node_count += 1;
                let mut left_bounds = bounds;
                left_bounds[axis][1] = split;
                let mut right_bounds = bounds;
                right_bounds[axis][0] = split;
                self.node(out, left, left_bounds, depth + 1);
                out.words[w] |= out.words.len() as u32;
                self.node(out, mask & !left, right_bounds, depth + 1);
            }
        }
    }

    /// The cheapest valid VVH candidate `(axis, point)`, if splitting there is cheaper than a
    /// leaf (the twin of `best_small_split` in `shaders/kdtree/build_small.wgsl`).
    fn best_split(&self, mask: u32, bounds: &Bounds, depth: u32) -> Option<(usize, usize)> {
        if depth >= KD_MAX_BRANCH_DEPTH {
            return None;
        }
        let n = mask.count_ones();
        // (cost numerator, extent, axis, point)
        let mut best: Option<(f32, f32, usize, usize)> = None;
        for (axis, &[lo, hi]) in bounds.iter().enumerate() {
            let extent = hi - lo;
            // Not `extent <= 0.0`: the twin in WGSL skips the same way.
            if extent.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
                continue;
            }
            let mut axis_best: Option<(f32, usize)> = None;
            for j in 0..self.indices.len() {
                if mask & 1 << j == 0 {
                    continue;
                }
                let n_left = (mask & self.left_sets[axis][j]).count_ones();
                let n_right = n - n_left;
                if n_right == 0 {
                    continue;
                }
                let cost = small_split_cost(n_left, n_right, self.coords[j][axis], lo, hi);
                if axis_best.is_none_or(|(c, _)| cost < c) {
                    axis_best = Some((cost, j));
                }
            }
            if let Some((cost, j)) = axis_best {
                // cost / extent < best_cost / best_extent, without a division.
                if best.is_none_or(|(c, e, _, _)| cost * e < c * extent) {
                    best = Some((cost, extent, axis, j));
                }
            }
        }
        let (cost, extent, axis, j) = best?;
        (KD_VVH_TRAVERSAL_COST * extent + cost < n as f32 * extent).then_some((axis, j))
    }
}

/// Walks a tree (CPU- or GPU-built) over `points` and checks everything the layout promises:
/// the words parse as one preorder tree covering `words` exactly (no gaps, no overruns, every
/// right child starting where its left sibling's subtree ends); every point index appears in
/// exactly one leaf; every point lies inside the box of the splits on its path (so every split
/// separates its children: left `<=` split `<=` right, on `kd_coord` coordinates); the branch
/// depth is at most [`KD_MAX_BRANCH_DEPTH`]; and a leaf holds at most [`KD_SMALL_NODE`] points
/// unless all of them are equal. Returns the tree's shape, or what is wrong and where.
pub fn validate_point_kdtree(words: &[u32], points: &[[f32; 4]]) -> Result<KdTreeShape, String> {
    enum Task {
        /// Parse the node at the cursor, inside `bounds`.
        Node(Bounds),
        /// The right child of the node at `parent` must start at `right`.
        Right {
            parent: usize,
            right: usize,
            bounds: Bounds,
        },
        /// Both children of an internal node are done: combine their (points, branch depth).
        Join,
    }
    let n = points.len();
    if n > KD_INDEX_MASK as usize {
        return Err(format!("{n} points do not fit 30-bit indices"));
    }
    let mut seen = vec![false; n];
    let mut shape = KdTreeShape {
        point_count: n as u32,
        ..KdTreeShape::default()
    };
    let unbounded = [[f32::NEG_INFINITY, f32::INFINITY]; 3];
    let mut tasks = vec![Task::Node(unbounded)];
    // (points, branch depth) of every finished subtree not yet joined.
    let mut done: Vec<(u32, u32)> = Vec::new();
    let mut cursor = 0usize;
    while let Some(task) = tasks.pop() {
        match task {
            Task::Right {
                parent,
                right,
                bounds,
            } => {
                if right != cursor {
                    return Err(format!(
                        "node at word {parent}: right child at word {right}, but the left subtree ends at word {cursor}"
                    ));
                }
                tasks.push(Task::Node(bounds));
            }
            Task::Join => {
                let (Some(r), Some(l)) = (done.pop(), done.pop()) else {
                    return Err("internal error: unbalanced join".into());
                };
                let branching = u32::from(l.0 > 0 && r.0 > 0);
                done.push((l.0 + r.0, l.1.max(r.1) + branching));
            }
            Task::Node(bounds) => {
                let Some(&word) = words.get(cursor) else {
                    return Err(format!(
                        "a node starts at word {cursor}, past the end ({} words)",
                        words.len()
                    ));
                };
                let w = cursor;
                if word >> 30 == 3 {
                    let count = (word & KD_INDEX_MASK) as usize;
                    let Some(indices) = words.get(w + 1..w + 1 + count) else {
                        return Err(format!(
                            "leaf at word {w} holds {count} points, past the end ({} words)",
                            words.len()
                        ));
                    };
                    let mut first_key = None;
                    let mut all_equal = true;
                    for &index in indices {
                        let Some(p) = points.get(index as usize) else {
                            return Err(format!("leaf at word {w}: point {index} of {n}"));
                        };
                        if std::mem::replace(&mut seen[index as usize], true) {
                            return Err(format!("leaf at word {w}: point {index} appears twice"));
                        }
                        for (a, &[lo, hi]) in bounds.iter().enumerate() {
                            let c = kd_coord(p[a]);
                            if !(lo <= c && c <= hi) {
                                return Err(format!(
                                    "leaf at word {w}: point {index} has {} = {c}, outside [{lo}, {hi}] from the splits above it",
                                    ["x", "y", "z"][a]
                                ));
                            }
                        }
                        let key = [kd_key(p[0]), kd_key(p[1]), kd_key(p[2])];
                        all_equal &= *first_key.get_or_insert(key) == key;
                    }
                    if count > KD_SMALL_NODE as usize && !all_equal {
                        return Err(format!(
                            "leaf at word {w} holds {count} points (more than {KD_SMALL_NODE}) that are not all equal"
                        ));
                    }
                    shape.node_count += 1;
                    shape.leaf_count += 1;
                    shape.empty_leaf_count += u32::from(count == 0);
                    shape.max_leaf_size = shape.max_leaf_size.max(count as u32);
                    done.push((count as u32, 0));
                    cursor = w + 1 + count;
                } else {
                    let axis = (word >> 30) as usize;
                    let right = (word & KD_INDEX_MASK) as usize;
                    let Some(&split_bits) = words.get(w + 1) else {
                        return Err(format!("internal node at word {w} has no split word"));
                    };
                    let split = f32::from_bits(split_bits);
                    if split.is_nan() {
                        return Err(format!("internal node at word {w} splits at NaN"));
                    }
                    shape.node_count += 1;
                    let mut left = bounds;
                    left[axis][1] = left[axis][1].min(split);
                    let mut right_bounds = bounds;
                    right_bounds[axis][0] = right_bounds[axis][0].max(split);
                    tasks.push(Task::Join);
                    tasks.push(Task::Right {
                        parent: w,
                        right,
                        bounds: right_bounds,
                    });
                    tasks.push(Task::Node(left));
                    cursor = w + 2;
                }
            }
        }
    }
    if cursor != words.len() {
        return Err(format!(
            "the tree ends at word {cursor}, but there are {} words",
            words.len()
        ));
    }
    if let Some(missing) = seen.iter().position(|&s| !s) {
        return Err(format!("point {missing} is in no leaf"));
    }
    shape.max_branch_depth = done.first().map_or(0, |d| d.1);
    if shape.max_branch_depth > KD_MAX_BRANCH_DEPTH {
        return Err(format!(
            "the tree branches {} deep, more than {KD_MAX_BRANCH_DEPTH}",
            shape.max_branch_depth
        ));
    }
    Ok(shape)
}
