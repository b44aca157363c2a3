//! The point kd-tree builder on the GPU (paper 003 section 6.2.2, paper 002).
//!
//! [`KdTreeBuilder::build`] turns `n` points (`array<vec4<f32>>`, e.g. photon positions written
//! by a kernel) into the compact preorder tree of `accel::kdtree`, making the same choices as
//! the CPU twin [`build_point_kdtree`](crate::accel::kdtree::build_point_kdtree), so that both
//! write the same words (tests compare them). The stages, in `shaders/kdtree/build_*.wgsl`:
//!
//! 1. **Initialization**: `build_keys` writes the order-preserving key of every point on each
//!    axis; one stable 64-bit radix sort (`Primitives::radix_sort_u64`, the axis as the high
//!    word) orders the three association lists `x | y | z` (3n entries); `build_root` makes the
//!    root over all points with the scene box from the lists' ends.
//! 2. **Large nodes** (more than [`KD_SMALL_NODE`] points), one level per iteration. Nodes
//!    live in an implicit binary heap (level k: 2^k slots from heap index 2^k − 1; children of
//!    h at 2h + 1 and 2h + 2), and a node keeps the same range of positions in all three lists
//!    from the level it is made until it turns small, so no node list is ever compacted and
//!    every dispatch size is known from `n` alone. Per level: `build_split` (one invocation per
//!    slot: tight box, empty-space cut-offs, median split, children); `build_flags` (one
//!    invocation per position: whether the point the split axis's list holds there goes left,
//!    written at the point, so that the other two lists' entries are classified by one read
//!    instead of two points' coordinates against the median's); `build_scatter` (one pass over
//!    the three lists, 1024 entries per workgroup: each entry's left entries of its node before
//!    it by a segmented chained scan, whose blocks publish their counts for later blocks to add
//!    up, then a stable partition of every node's entries in all three lists, the next level's
//!    owner of each position, and the small list for entries whose child is small). The
//!    levels needed follow from `n`: the median split halves the largest node each time. From
//!    the first level whose nodes hold at most [`MEDIUM_NODE`] points ([`medium_level`]),
//!    `build_medium` runs the remaining large levels in one dispatch, a workgroup per node: the
//!    same split, flags and partition on the node's own positions, in workgroup memory (its
//!    lists as local point ids), with barriers between them. An adapter with less than
//!    [`MEDIUM_WORKGROUP_BYTES`] of workgroup memory runs every level over the whole lists.
//! 3. **Small nodes**: `build_small`, one invocation per small root, builds its subtree by VVH
//!    with `u32` point masks into a scratch area at `4 · start`; a build over at most
//!    [`SMALL_GROUP_MAX_POINTS`] points, whose roots are too few to keep the GPU busy that way,
//!    runs `build_small_group` instead, a workgroup of [`KD_SMALL_NODE`] invocations per root
//!    ([`SmallStage`]).
//! 4. **Output**: `build_sizes` (bottom-up, one dispatch per level) sums the subtree sizes and
//!    counts nodes; then `build_write` (top-down, one dispatch per level) writes every large
//!    node's words and its children's offsets, and moves each small subtree into place.
//!
//! Node numbering never depends on the order of atomics: atomics only add up the statistics and
//! hand out the partition's blocks (which block a workgroup takes changes no word).
//! The same input gives the same words on every run.
//!
//! **Host round trips**: none. The words go into room for the largest tree over `n` points
//! ([`max_tree_words`]), so the output stage follows the sizes without reading the word count
//! back; [`GpuKdTree::counts`] reads the size and shape when a caller wants them. With
//! timestamps on, one read-back of the stage times.
//!
//! **Leaf points**: `build_write` also writes, at the word of every leaf entry, the point's
//! position and index (`vec4`, the index's bits in w): the searches (`shared/knn.wgsl`) read a
//! leaf's points one after the other there instead of following each index into the points.
//! [`leaf_points_of`] is its CPU twin, for trees made on the CPU.
//!
//! **Memory**: about 134 bytes per point while a build runs (the points included; the sort's
//! temporaries live until the first submit completes), and the tree's words (room for
//! [`max_tree_words`], about `16 · n` bytes) and leaf points (four times the words). A buffer
//! above the adapter's storage-binding limit is refused with [`GpuError::BufferTooLarge`]
//! before anything is recorded; the whole points buffer is bound, so it must fit one binding
//! even when `n` is smaller than it holds. On lavapipe (128 MiB per binding) the leaf points
//! cap a build at about 2M points.
//!
//! **Known cost**: an all-equal large node becomes one leaf that a single invocation writes
//! (a degenerate input such as a million copies of one point is built, but slowly).

use std::time::Instant;

use bytemuck::{Pod, Zeroable};

use super::context::{GpuContext, GpuError};
use super::encoder::Encoder;
use super::kernel::{
    read_buffer, storage_buffer, storage_buffer_sized, uniform_buffer, Checks, Kernel,
};
use super::pool::GpuBuffer;
use super::prims::{Primitives, BLOCK_SIZE};
use crate::accel::kdtree::{PointKdTree, KD_INDEX_MASK, KD_LEAF, KD_MAX_POINTS, KD_SMALL_NODE};

/// The most points of a node whose remaining large levels one workgroup runs (`build_medium`:
/// each of its lists fits one block, `BLOCK_SIZE` in `shaders/prims/common.wgsl`).
pub const MEDIUM_NODE: u32 = BLOCK_SIZE;
/// Bytes of workgroup memory `build_medium` declares (at most; a test checks its WGSL).
pub const MEDIUM_WORKGROUP_BYTES: u64 = 26 * 1024;
/// Words per heap node (`NODE_WORDS` in `shaders/kdtree/build_common.wgsl`).
const NODE_WORDS: u64 = 8;
/// Floats per heap box (`BOX_WORDS`).
const BOX_WORDS: u64 = 12;
/// Bits of the sort key: 32 of the coordinate key and 2 of the axis.
const SORT_KEY_BITS: u32 = 34;
/// Words before the block statuses of the partition's chain: one ticket counter per large level
/// (`status_index` in `shaders/kdtree/build_scatter.wgsl`; at most 22 levels below
/// `KD_MAX_POINTS`).
const CHAIN_TICKETS: u64 = 32;

/// The uniform every build kernel reads. Twin of `KdParams` in
/// `shaders/kdtree/build_common.wgsl`; a test checks naga's layout against this one.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct KdParams {
    /// Points.
    pub n: u32,
    /// The large level processed or written.
    pub level: u32,
    /// Heap index of the level's first slot (`2^level − 1`).
    pub level_base: u32,
    /// Slots on the level (`2^level`).
    pub level_slots: u32,
    /// Workgroups of 1024 entries over the three lists (`3n` entries).
    pub num_blocks: u32,
    /// Slots in the whole heap.
    pub heap_slots: u32,
    /// Large levels in all (`build_medium`).
    pub levels: u32,
    /// 1 when level `level`'s lists are the second buffer (`build_medium`).
    pub lists_in_b: u32,
}

/// The number of large levels a build over `n` points runs: the largest node on level `k`
/// holds `ceil(n / 2^k)` points (median splits), and a level is needed while that exceeds
/// [`KD_SMALL_NODE`]. The heap then has levels `0..=large_levels`.
pub fn large_levels(n: u32) -> u32 {
    halvings_down_to(n, KD_SMALL_NODE)
}

/// How many median splits it takes until the largest node of `n` points holds at most `limit`.
fn halvings_down_to(n: u32, limit: u32) -> u32 {
    let mut largest = n;
    let mut levels = 0;
    while largest > limit {
        largest = largest.div_ceil(2);
        levels += 1;
    }
    levels
}

/// The first large level whose nodes all hold at most [`MEDIUM_NODE`] points (median splits
/// keep every node of level `k` within one point of `n / 2^k`), or [`large_levels`] when none
/// is large: from there `build_medium` runs the remaining levels, a workgroup per node.
pub fn medium_level(n: u32) -> u32 {
    halvings_down_to(n, MEDIUM_NODE).min(large_levels(n))
}

/// GPU milliseconds per build stage, from timestamps.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KdStageTimes {
    /// Keys, the radix sort of the three lists and the root.
    pub init_ms: f64,
    /// Every large level: split, count, scan, scatter.
    pub large_ms: f64,
    /// The VVH subtrees of the small roots.
    pub small_ms: f64,
    /// Subtree sizes (bottom-up).
    pub sizes_ms: f64,
    /// Writing the words (top-down).
    pub write_ms: f64,
}

impl KdStageTimes {
    pub fn total_ms(&self) -> f64 {
        self.init_ms + self.large_ms + self.small_ms + self.sizes_ms + self.write_ms
    }
}

/// What one build did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KdBuildStats {
    /// GPU time per stage, when the builder has timestamps on and the adapter has them.
    pub gpu: Option<KdStageTimes>,
    /// Compute dispatches recorded (the primitives' included).
    pub kernel_launches: u32,
    /// Large-node levels.
    pub levels: u32,
    /// Times the host waited for the GPU to read something back.
    pub host_readbacks: u32,
    /// Host wall time from the first record to the last submit (and the waits in between).
    pub host_ms: f64,
}

/// A tree on the GPU in the layout of `accel::kdtree`, at the start of `words` (which has room
/// for the largest tree over its points, [`max_tree_words`]; the rest is zeros). Its size and
/// shape stay on the device until [`GpuKdTree::counts`] reads them.
pub struct GpuKdTree {
    pub words: GpuBuffer,
    /// The points it was built over (`array<vec4<f32>>`).
    pub points: GpuBuffer,
    /// At the word of every leaf entry, the point's position and index (w, as bits).
    pub leaf_points: GpuBuffer,
    pub point_count: u32,
    pub stats: KdBuildStats,
    /// `[words, nodes, leaves, max branch depth]`, written by the build.
    counts: GpuBuffer,
}

/// A built tree's size and shape.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KdTreeCounts {
    pub word_count: u32,
    /// Internal nodes and leaves.
    pub nodes: u32,
    /// Leaves, empty ones included.
    pub leaves: u32,
    /// The largest number of branching internal nodes on a path.
    pub max_branch_depth: u32,
}

impl GpuKdTree {
    /// A tree made on the CPU (`words` in the layout of `accel::kdtree`, maybe malformed: the
    /// searches report that) over `points`, uploaded with its leaf points. Its counts are the
    /// words', and the nodes and leaves a scan finds; the branch depth is not computed (0).
    pub fn upload(
        ctx: &GpuContext,
        words: &[u32],
        points: &[[f32; 4]],
    ) -> Result<GpuKdTree, GpuError> {
        let point_count = checked_count(points.len())?;
        let (leaf_points, nodes, leaves) = leaf_points_of(words, points);
        let word_list: &[u32] = if words.is_empty() { &[KD_LEAF] } else { words };
        Ok(GpuKdTree {
            words: storage_buffer(ctx, "kd-tree words", word_list)?,
            points: storage_buffer(ctx, "kd-tree points", &non_empty(points))?,
            leaf_points: storage_buffer(ctx, "kd-tree leaf points", &non_empty(&leaf_points))?,
            point_count,
            stats: KdBuildStats::default(),
            counts: storage_buffer(
                ctx,
                "kd-tree counts",
                &[word_list.len() as u32, nodes, leaves, 0],
            )?,
        })
    }

    /// The tree's size and shape (one read-back: waits for the build).
    pub fn counts(&self, ctx: &GpuContext) -> Result<KdTreeCounts, GpuError> {
        let c: Vec<u32> = read_buffer(ctx, &self.counts, 4)?;
        let capacity = self.words.size() / 4;
        if c[0] == 0 || c[0] as u64 > capacity {
            return Err(GpuError::Device(format!(
                "kd-tree build over {} points produced {} words (room for {capacity})",
                self.point_count, c[0]
            )));
        }
        Ok(KdTreeCounts {
            word_count: c[0],
            nodes: c[1],
            leaves: c[2],
            max_branch_depth: c[3],
        })
    }
}

/// At the word of every leaf entry of `words` (the layout of `accel::kdtree`, read in
/// preorder), the point's position and index (w, as bits); zeros elsewhere and for an index
/// past `points`. Also the nodes and leaves the scan passed. The CPU twin of what `build_write`
/// writes beside the words; a malformed tree gets the entries its scan reaches.
pub fn leaf_points_of(words: &[u32], points: &[[f32; 4]]) -> (Vec<[f32; 4]>, u32, u32) {
    let mut out = vec![[0.0f32; 4]; words.len()];
    let (mut nodes, mut leaves) = (0u32, 0u32);
    let mut w = 0usize;
    while w < words.len() {
        nodes += 1;
        if words[w] >> 30 == 3 {
            leaves += 1;
            let n = (words[w] & KD_INDEX_MASK) as usize;
            let end = (w + 1).saturating_add(n).min(words.len());
            for (slot, &index) in out[w + 1..end].iter_mut().zip(&words[w + 1..end]) {
                let p = points.get(index as usize).copied().unwrap_or_default();
                *slot = [p[0], p[1], p[2], f32::from_bits(index)];
            }
            w = end;
        } else {
            w += 2;
        }
    }
    (out, nodes, leaves)
}

/// `items`, or one zeroed item for an empty list (a binding is never empty).
fn non_empty<T: Pod>(items: &[T]) -> Vec<T> {
    if items.is_empty() {
        vec![T::zeroed()]
    } else {
        items.to_vec()
    }
}

/// The most words a tree over `n` points can take: a large node writes at most six cut-offs
/// (three words each) and a split (two words) or a leaf (one word and its points), and a small
/// subtree of `m` points, whose VVH leaves are never empty, at most `2(m − 1) + 2m` words: so at
/// most `4n` for the small subtrees and `20` per large node.
pub fn max_tree_words(n: u32) -> u64 {
    let large_nodes = (1u64 << large_levels(n)) - 1;
    4 * n as u64 + 20 * large_nodes + 1
}

/// The build kernels, made once per context.
pub struct KdTreeBuilder {
    /// Whether the kernels use subgroup operations.
    pub uses_subgroups: bool,
    /// Whether builds record GPU timestamps per stage (one more read-back per build).
    pub timestamps: bool,
    prims: Primitives,
    keys: Kernel,
    root: Kernel,
    split: Kernel,
    flags: Kernel,
    scatter: Kernel,
    /// `build_medium`, when the adapter has the workgroup memory it takes
    /// ([`MEDIUM_WORKGROUP_BYTES`]); without it the large levels all run over the whole lists.
    medium: Option<Kernel>,
    small: Kernel,
    small_group: Kernel,
    /// Which small-stage kernel builds use.
    small_stage: SmallStage,
    sizes: Kernel,
    write: Kernel,
}

/// How the small stage spreads its work: `build_small` (an invocation per small root) keeps a
/// large build's many roots busy, `build_small_group` (a workgroup of [`KD_SMALL_NODE`]
/// invocations per root, which share its candidates) a small build's few roots. Both write the
/// same words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmallStage {
    /// A workgroup per root up to [`SMALL_GROUP_MAX_POINTS`] points, else an invocation per root.
    Auto,
    /// Always an invocation per small root.
    PerRoot,
    /// Always a workgroup per small root.
    PerGroup,
}

/// The most points of a build whose small stage runs a workgroup per small root under
/// [`SmallStage::Auto`]. Measured on the lent H200 (`docs/performance.md`, "The kd-tree's small
/// stage and the chained scans' walk back"): at 400K points the workgroups took the stage from
/// 0.35 to 0.29 ms, at 1M points they made it slower (0.62 → 0.69 ms), and a frame's 640K-point
/// global map's build too (2.68 → 2.78 ms).
pub const SMALL_GROUP_MAX_POINTS: u32 = 512 * 1024;

impl SmallStage {
    fn per_group(self, n: u32) -> bool {
        match self {
            SmallStage::Auto => n <= SMALL_GROUP_MAX_POINTS,
            SmallStage::PerRoot => false,
            SmallStage::PerGroup => true,
        }
    }
}

/// Timestamp indices at the stage boundaries.
const STAMPS: u32 = 6;

impl KdTreeBuilder {
    /// Whether builds run their last large levels a workgroup per node (`build_medium`), which
    /// takes [`MEDIUM_WORKGROUP_BYTES`] of the adapter's workgroup memory.
    pub fn has_medium_stage(&self) -> bool {
        self.medium.is_some()
    }

    /// The primitives the builder sorts and scans with.
    pub fn prims(&self) -> &Primitives {
        &self.prims
    }

    /// Builds the kernels, with subgroup operations when the adapter has them.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        Self::make(ctx, ctx.info.features.subgroups)
    }

    /// Builds the kernels with the shared-memory fallbacks, whatever the adapter has.
    pub fn new_without_subgroups(ctx: &GpuContext) -> Result<Self, GpuError> {
        Self::make(ctx, false)
    }

    /// Turns per-stage GPU timestamps on or off (they cost one more read-back per build and
    /// need the adapter's timestamp queries).
    pub fn with_timestamps(mut self, on: bool) -> Self {
        self.timestamps = on;
        self
    }

    /// Builds the kernels with the partition's blocks taken in reverse order, so that every
    /// walk back of its chained scan meets blocks that have not published their counts yet and
    /// works them out itself (tests: the same words must come out).
    pub fn new_with_reversed_blocks(ctx: &GpuContext) -> Result<Self, GpuError> {
        Self::make_with(ctx, ctx.info.features.subgroups, true)
    }

    fn make(ctx: &GpuContext, subgroups: bool) -> Result<Self, GpuError> {
        Self::make_with(ctx, subgroups, false)
    }

    fn make_with(ctx: &GpuContext, subgroups: bool, reversed: bool) -> Result<Self, GpuError> {
        let mut defines: Vec<&str> = Vec::new();
        if subgroups {
            defines.push("SUBGROUPS");
        }
        if reversed {
            defines.push("REVERSED_BLOCKS");
        }
        let kernel = |file: &str| {
            Kernel::new(
                ctx,
                &format!("kdtree/build_{file}.wgsl"),
                &defines,
                Checks::Checked,
            )
        };
        Ok(KdTreeBuilder {
            uses_subgroups: subgroups,
            timestamps: false,
            prims: if subgroups {
                Primitives::new(ctx)?
            } else {
                Primitives::new_without_subgroups(ctx)?
            },
            keys: kernel("keys")?,
            root: kernel("root")?,
            split: kernel("split")?,
            flags: kernel("flags")?,
            scatter: kernel("scatter")?,
            medium: if ctx.info.max_compute_workgroup_storage_size as u64 >= MEDIUM_WORKGROUP_BYTES
            {
                Some(kernel("medium")?)
            } else {
                None
            },
            small: kernel("small")?,
            small_group: kernel("small_group")?,
            small_stage: SmallStage::Auto,
            sizes: kernel("sizes")?,
            write: kernel("write")?,
        })
    }

    /// Picks the small stage's kernel (tests build with each).
    pub fn with_small_stage(mut self, stage: SmallStage) -> Self {
        self.small_stage = stage;
        self
    }

    /// Uploads `points`, builds, and reads the tree back (tests, small jobs).
    pub fn build_vec(
        &self,
        ctx: &GpuContext,
        points: &[[f32; 4]],
    ) -> Result<PointKdTree, GpuError> {
        let n = checked_count(points.len())?;
        let buffer = storage_buffer(ctx, "kd-tree points", points)?;
        let tree = self.build(ctx, &buffer, n)?;
        let counts = tree.counts(ctx)?;
        let words = read_buffer(ctx, &tree.words, counts.word_count as usize)?;
        Ok(PointKdTree {
            words,
            point_count: n,
            max_branch_depth: counts.max_branch_depth,
            node_count: counts.nodes,
            leaf_count: counts.leaves,
        })
    }

    /// Builds over the first `n` points of `points` (`array<vec4<f32>>`). Returns once the
    /// output's last kernels are submitted; the tree's buffer is ready for later work on the
    /// same queue.
    pub fn build(
        &self,
        ctx: &GpuContext,
        points: &GpuBuffer,
        n: u32,
    ) -> Result<GpuKdTree, GpuError> {
        let clock = Instant::now();
        checked_count(n as usize)?;
        ctx.check_binding_size("kd-tree points", points.size())?;
        if points.size() < n as u64 * 16 {
            return Err(GpuError::Device(format!(
                "kd-tree build over {n} points, but the points buffer holds {} bytes",
                points.size()
            )));
        }
        let mut stats = KdBuildStats::default();
        if n == 0 {
            let words = storage_buffer(ctx, "kd-tree words", &[KD_LEAF])?;
            let counts = storage_buffer(ctx, "kd-tree counts", &[1u32, 1, 1, 0])?;
            let leaf_points = storage_buffer(ctx, "kd-tree leaf points", &[[0f32; 4]])?;
            stats.host_ms = clock.elapsed().as_secs_f64() * 1e3;
            return Ok(GpuKdTree {
                words,
                points: points.clone(),
                leaf_points,
                point_count: 0,
                stats,
                counts,
            });
        }
        let levels = large_levels(n);
        stats.levels = levels;
        let entries = 3 * n as u64;
        let heap_slots = (1u64 << (levels + 1)) - 1;
        let num_blocks = entries.div_ceil(BLOCK_SIZE as u64) as u32;
        // Everything is allocated (and so checked against the binding limit) before recording.
        let scratch = |label: &str, words: u64| storage_buffer_sized(ctx, label, words * 4);
        let keys_lo = scratch("kd-tree sort keys", entries)?;
        let keys_hi = scratch("kd-tree sort axes", entries)?;
        let lists_a = scratch("kd-tree lists", entries)?;
        // The other list buffer is also the small stage's scratch: 4 words per point.
        let lists_b = scratch("kd-tree lists (other half) and scratch", 4 * n as u64)?;
        let owner_a = scratch("kd-tree owners", n as u64)?;
        let owner_b = scratch("kd-tree owners (other half)", n as u64)?;
        let small_list = scratch("kd-tree small list", n as u64)?;
        let left_flags = scratch("kd-tree left flags", n as u64)?;
        let heap_nodes = scratch("kd-tree heap nodes", heap_slots * NODE_WORDS)?;
        let heap_boxes = scratch("kd-tree heap boxes", heap_slots * BOX_WORDS)?;
        // The partition's chained scan: a ticket per level, then every level's block statuses.
        let chain = scratch(
            "kd-tree partition chain",
            CHAIN_TICKETS + levels as u64 * num_blocks as u64,
        )?;
        let stats_buffer = scratch("kd-tree stats", 4)?;
        let words = scratch("kd-tree words", max_tree_words(n))?;
        let leaf_points = scratch("kd-tree leaf points", 4 * max_tree_words(n))?;

        let params = |level: u32| {
            uniform_buffer(
                ctx,
                "kd-tree params",
                &KdParams {
                    n,
                    level,
                    level_base: (1u32 << level) - 1,
                    level_slots: 1u32 << level,
                    num_blocks,
                    heap_slots: heap_slots as u32,
                    levels,
                    lists_in_b: level % 2,
                },
            )
        };
        let slots_grid = |kernel: &Kernel, level: u32| kernel.grid_for(ctx, 1u64 << level);
        let blocks_grid = groups_grid(ctx, num_blocks as u64);
        let stamps = Stamps::new(ctx, self.timestamps)?;
        let mut launches = 0u32;

        let mut encoder = new_encoder(ctx);
        stamps.mark(&mut encoder, 0);
        // 1. Initialization.
        let level0 = params(0);
        let bind = self.keys.bind(
            ctx,
            &[
                ("params", &level0),
                ("points", points),
                ("keys_lo", &keys_lo),
                ("keys_hi", &keys_hi),
                ("values", &lists_a),
                ("owner", &owner_a),
            ],
        )?;
        self.keys
            .dispatch(&mut encoder, &bind, self.keys.grid_for(ctx, entries));
        self.prims.radix_sort_u64(
            ctx,
            &mut encoder,
            &keys_lo,
            &keys_hi,
            &lists_a,
            entries as u32,
            SORT_KEY_BITS,
        )?;
        let sort_passes = SORT_KEY_BITS.div_ceil(super::prims::radix_sort::RADIX_BITS);
        launches += 1 + sort_passes * 3;
        let bind = self.root.bind(
            ctx,
            &[
                ("params", &level0),
                ("points", points),
                ("lists", &lists_a),
                ("small_list", &small_list),
                ("heap_nodes", &heap_nodes),
                ("heap_boxes", &heap_boxes),
            ],
        )?;
        self.root.dispatch(&mut encoder, &bind, (1, 1, 1));
        launches += 1;
        stamps.mark(&mut encoder, 1);

        // 2. Large nodes, level by level.
        encoder.clear_buffer(&chain, 0, None);
        let (mut lists_in, mut lists_out) = (&lists_a, &lists_b);
        let (mut owner_in, mut owner_out) = (&owner_a, &owner_b);
        let medium_level = match self.medium {
            Some(_) => medium_level(n),
            None => levels,
        };
        for level in 0..medium_level {
            let p = params(level);
            let bind = self.split.bind(
                ctx,
                &[
                    ("params", &p),
                    ("points", points),
                    ("lists", lists_in),
                    ("heap_nodes", &heap_nodes),
                    ("heap_boxes", &heap_boxes),
                ],
            )?;
            self.split
                .dispatch(&mut encoder, &bind, slots_grid(&self.split, level));
            let bind = self.flags.bind(
                ctx,
                &[
                    ("params", &p),
                    ("lists_in", lists_in),
                    ("owner_in", owner_in),
                    ("heap_nodes", &heap_nodes),
                    ("left_flags", &left_flags),
                ],
            )?;
            self.flags
                .dispatch(&mut encoder, &bind, self.flags.grid_for(ctx, n as u64));
            let bind = self.scatter.bind(
                ctx,
                &[
                    ("params", &p),
                    ("left_flags", &left_flags),
                    ("lists_in", lists_in),
                    ("owner_in", owner_in),
                    ("heap_nodes", &heap_nodes),
                    ("lists_out", lists_out),
                    ("owner_out", owner_out),
                    ("small_list", &small_list),
                    ("chain", &chain),
                ],
            )?;
            self.scatter.dispatch(&mut encoder, &bind, blocks_grid);
            launches += 3;
            std::mem::swap(&mut lists_in, &mut lists_out);
            std::mem::swap(&mut owner_in, &mut owner_out);
        }
        // The last levels, a workgroup per node of the first level whose nodes fit a block.
        if let (Some(medium), true) = (&self.medium, medium_level < levels) {
            let p = params(medium_level);
            let bind = medium.bind(
                ctx,
                &[
                    ("params", &p),
                    ("points", points),
                    ("lists_a", &lists_a),
                    ("lists_b", &lists_b),
                    ("heap_nodes", &heap_nodes),
                    ("heap_boxes", &heap_boxes),
                    ("left_flags", &left_flags),
                    ("small_list", &small_list),
                ],
            )?;
            medium.dispatch(&mut encoder, &bind, groups_grid(ctx, 1u64 << medium_level));
            launches += 1;
        }
        stamps.mark(&mut encoder, 2);

        // 3. Small nodes, into the scratch (the list buffer with room for 4 words per point).
        encoder.clear_buffer(&stats_buffer, 0, None);
        let per_group = self.small_stage.per_group(n);
        let small = if per_group {
            &self.small_group
        } else {
            &self.small
        };
        let bind = small.bind(
            ctx,
            &[
                ("params", &level0),
                ("points", points),
                ("small_list", &small_list),
                ("heap_nodes", &heap_nodes),
                ("heap_boxes", &heap_boxes),
                ("scratch", &lists_b),
                ("stats", &stats_buffer),
            ],
        )?;
        let grid = if per_group {
            groups_grid(ctx, heap_slots)
        } else {
            small.grid_for(ctx, heap_slots)
        };
        small.dispatch(&mut encoder, &bind, grid);
        launches += 1;
        stamps.mark(&mut encoder, 3);

        // 4. Output: sizes bottom-up, one read-back, then the words top-down.
        let level_params: Vec<GpuBuffer> = (0..=levels).map(params).collect();
        for level in (0..=levels).rev() {
            let bind = self.sizes.bind(
                ctx,
                &[
                    ("params", &level_params[level as usize]),
                    ("heap_nodes", &heap_nodes),
                    ("stats", &stats_buffer),
                ],
            )?;
            self.sizes
                .dispatch(&mut encoder, &bind, slots_grid(&self.sizes, level));
            launches += 1;
        }
        stamps.mark(&mut encoder, 4);
        // The words go into room for the largest tree: no read-back of the size between.
        for level in 0..=levels {
            let bind = self.write.bind(
                ctx,
                &[
                    ("params", &level_params[level as usize]),
                    ("small_list", &small_list),
                    ("heap_nodes", &heap_nodes),
                    ("heap_boxes", &heap_boxes),
                    ("scratch", &lists_b),
                    ("words", &words),
                    ("points", points),
                    ("leaf_points", &leaf_points),
                ],
            )?;
            self.write
                .dispatch(&mut encoder, &bind, slots_grid(&self.write, level));
            launches += 1;
        }
        stamps.mark(&mut encoder, 5);
        ctx.submit([encoder.finish()]);
        if let Some(times) = stamps.read(ctx)? {
            stats.host_readbacks += 1;
            stats.gpu = Some(times);
        }
        stats.kernel_launches = launches;
        stats.host_ms = clock.elapsed().as_secs_f64() * 1e3;
        Ok(GpuKdTree {
            words,
            points: points.clone(),
            leaf_points,
            point_count: n,
            stats,
            counts: stats_buffer,
        })
    }
}

/// A point count as `u32`, refused above [`KD_MAX_POINTS`].
fn checked_count(len: usize) -> Result<u32, GpuError> {
    if len > KD_MAX_POINTS {
        return Err(GpuError::Device(format!(
            "a point kd-tree holds at most {KD_MAX_POINTS} points, but {len} were given"
        )));
    }
    Ok(len as u32)
}

/// Workgroup counts for `groups` workgroups, spilling into y past the per-dimension limit.
fn groups_grid(ctx: &GpuContext, groups: u64) -> (u32, u32, u32) {
    let groups = groups.max(1);
    let max = ctx.info.max_compute_workgroups_per_dimension.max(1) as u64;
    if groups <= max {
        (groups as u32, 1, 1)
    } else {
        (max as u32, groups.div_ceil(max) as u32, 1)
    }
}

fn new_encoder(ctx: &GpuContext) -> Encoder {
    Encoder::new(ctx)
}

/// Timestamps at the stage boundaries, written by empty compute passes.
struct Stamps {
    query: Option<(wgpu::QuerySet, GpuBuffer)>,
}

impl Stamps {
    fn new(ctx: &GpuContext, wanted: bool) -> Result<Stamps, GpuError> {
        if !wanted || !ctx.info.features.timestamps {
            return Ok(Stamps { query: None });
        }
        Ok(Stamps {
            query: Some(super::kernel::timestamp_queries(
                ctx,
                "kd-tree timestamps",
                STAMPS,
            )),
        })
    }

    fn mark(&self, encoder: &mut Encoder, index: u32) {
        if let Some((set, _)) = &self.query {
            encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("kd-tree timestamp"),
                timestamp_writes: Some(wgpu::ComputePassTimestampWrites {
                    query_set: set,
                    beginning_of_pass_write_index: Some(index),
                    end_of_pass_write_index: None,
                }),
            });
        }
    }

    /// Resolves and reads the stage times (waits for the GPU).
    fn read(&self, ctx: &GpuContext) -> Result<Option<KdStageTimes>, GpuError> {
        let Some((set, resolve)) = &self.query else {
            return Ok(None);
        };
        let copy = storage_buffer_sized(ctx, "kd-tree timestamps (copy)", STAMPS as u64 * 8)?;
        let mut encoder = new_encoder(ctx);
        encoder.resolve_query_set(set, 0..STAMPS, resolve, 0);
        encoder.copy_buffer_to_buffer(resolve, 0, &copy, 0, STAMPS as u64 * 8);
        ctx.submit([encoder.finish()]);
        let ticks: Vec<u64> = read_buffer(ctx, &copy, STAMPS as usize)?;
        let ms = |i: usize| {
            ticks[i + 1].saturating_sub(ticks[i]) as f64
                * ctx.info.timestamp_period_ns as f64
                * 1e-6
        };
        Ok(Some(KdStageTimes {
            init_ms: ms(0),
            large_ms: ms(1),
            small_ms: ms(2),
            sizes_ms: ms(3),
            write_ms: ms(4),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::shader;

    /// The host `KdParams` has the size and field offsets naga reflects for its WGSL twin.
    #[test]
    fn kd_params_matches_its_wgsl_twin() {
        let source = shader::assemble("kdtree/build_common.wgsl", &[]).unwrap();
        let module = shader::validate("kdtree/build_common.wgsl", &source).unwrap();
        let (_, ty) = module
            .types
            .iter()
            .find(|(_, t)| t.name.as_deref() == Some("KdParams"))
            .expect("build_common.wgsl declares KdParams");
        let naga::TypeInner::Struct { members, span } = &ty.inner else {
            panic!("KdParams is a struct");
        };
        assert_eq!(*span as usize, std::mem::size_of::<KdParams>());
        let offsets: Vec<(String, u32)> = members
            .iter()
            .map(|m| (m.name.clone().unwrap_or_default(), m.offset))
            .collect();
        assert_eq!(
            offsets,
            vec![
                ("n".into(), std::mem::offset_of!(KdParams, n) as u32),
                ("level".into(), std::mem::offset_of!(KdParams, level) as u32),
                (
                    "level_base".into(),
                    std::mem::offset_of!(KdParams, level_base) as u32
                ),
                (
                    "level_slots".into(),
                    std::mem::offset_of!(KdParams, level_slots) as u32
                ),
                (
                    "num_blocks".into(),
                    std::mem::offset_of!(KdParams, num_blocks) as u32
                ),
                (
                    "heap_slots".into(),
                    std::mem::offset_of!(KdParams, heap_slots) as u32
                ),
                (
                    "levels".into(),
                    std::mem::offset_of!(KdParams, levels) as u32
                ),
                (
                    "lists_in_b".into(),
                    std::mem::offset_of!(KdParams, lists_in_b) as u32
                ),
            ]
        );
    }

    /// The level count follows the halving of the largest node.
    #[test]
    fn large_levels_count_the_halvings_down_to_a_small_node() {
        assert_eq!(large_levels(0), 0);
        assert_eq!(large_levels(KD_SMALL_NODE), 0);
        assert_eq!(large_levels(KD_SMALL_NODE + 1), 1);
        assert_eq!(large_levels(2 * KD_SMALL_NODE), 1);
        assert_eq!(large_levels(2 * KD_SMALL_NODE + 1), 2);
        assert_eq!(large_levels(10_000_000), 19);
        // The partition's chain keeps one ticket per level before its block statuses.
        assert!(large_levels(KD_MAX_POINTS as u32) as u64 <= CHAIN_TICKETS);
    }

    /// `build_medium` declares no more workgroup memory than the builder asks the adapter for.
    #[test]
    fn medium_kernel_fits_the_workgroup_memory_it_is_given() {
        for defines in [&[][..], &["SUBGROUPS"][..]] {
            let source = shader::assemble("kdtree/build_medium.wgsl", defines).unwrap();
            let module = shader::validate("kdtree/build_medium.wgsl", &source).unwrap();
            let mut layouter = naga::proc::Layouter::default();
            layouter.update(module.to_ctx()).unwrap();
            let bytes: u64 = module
                .global_variables
                .iter()
                .filter(|(_, v)| v.space == naga::AddressSpace::WorkGroup)
                .map(|(_, v)| layouter[v.ty].size as u64)
                .sum();
            assert!(
                bytes <= MEDIUM_WORKGROUP_BYTES,
                "{bytes} bytes of workgroup memory, more than {MEDIUM_WORKGROUP_BYTES}"
            );
            assert!(
                bytes > MEDIUM_WORKGROUP_BYTES / 2,
                "{bytes}: the bound is loose"
            );
        }
    }

    /// The medium stage starts at the first level whose largest node fits a block, and never
    /// after the last large level.
    #[test]
    fn medium_level_is_the_first_level_whose_nodes_fit_a_block() {
        assert_eq!(medium_level(KD_SMALL_NODE), 0);
        assert_eq!(medium_level(MEDIUM_NODE), 0);
        assert_eq!(medium_level(MEDIUM_NODE + 1), 1);
        assert_eq!(medium_level(2 * MEDIUM_NODE + 1), 2);
        // 640,000 points: levels of 640000, 320000, …, 1250 (level 9) and 625 (level 10).
        assert_eq!(medium_level(640_000), 10);
        assert_eq!(large_levels(640_000), 15);
        for n in [0, 1, 33, 1000, 5000, 123_457, 10_000_000] {
            assert!(medium_level(n) <= large_levels(n), "{n}");
        }
    }

    /// The words buffer a build allocates holds the tree (the CPU twin writes the same words),
    /// for point sets that make many cut-offs, deep chains or one big leaf.
    #[test]
    fn every_tree_fits_the_room_its_build_gives_the_words() {
        let mut state = 0x9e37_79b9_u32;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state as f32 / u32::MAX as f32
        };
        let mut sets: Vec<(&str, Vec<[f32; 4]>)> = Vec::new();
        for n in [1usize, 2, 31, 33, 100, 1000, 20_000] {
            let uniform = (0..n).map(|_| [next(), next(), next(), 0.0]).collect();
            sets.push(("uniform", uniform));
            // Tight clusters far apart: a cut-off on every side of most large nodes.
            let clustered = (0..n)
                .map(|i| {
                    let c = (i % 7) as f32 * 1000.0;
                    [
                        c + next() * 1e-3,
                        -c + next() * 1e-3,
                        c * 0.5 + next() * 1e-3,
                        0.0,
                    ]
                })
                .collect();
            sets.push(("clustered", clustered));
            sets.push(("all equal", vec![[1.0, 2.0, 3.0, 0.0]; n]));
            let two = (0..n).map(|i| [(i % 2) as f32, 0.0, 0.0, 0.0]).collect();
            sets.push(("two values", two));
            let line = (0..n).map(|i| [i as f32, 0.0, 0.0, 0.0]).collect();
            sets.push(("a line", line));
        }
        for (name, points) in &sets {
            let n = points.len() as u32;
            let words = crate::accel::kdtree::build_point_kdtree(points).words.len() as u64;
            assert!(
                words <= max_tree_words(n),
                "{name}, {n} points: {words} words, room for {}",
                max_tree_words(n)
            );
        }
    }
}
