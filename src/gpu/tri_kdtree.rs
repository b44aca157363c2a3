//! Paper 002's triangle kd-tree built on the GPU (Chang, Seo and Ihm, after Zhou et al.): the
//! same words as the CPU twin [`build_kdtree`], word for word, or its [`KdTreeTooLarge`].
//!
//! The host works out the root (the box union, the margin: [`root_items`]) and uploads the
//! grown boxes as the first level's pairs. Then, as the paper's host loop:
//!
//! 1. **Large stage**, level by level, in one submission and one read-back a level:
//!    `kdtree_tri/tight.wgsl` (each node's tight box, by atomics on ordered keys, a workgroup
//!    whose 256 pairs share a node reduced in workgroup memory first: the paper's per-block
//!    atomics), `decide.wgsl` (the empty-space cut or the spatial median, [`decide_large`]),
//!    `flags.wgsl` and two exclusive scans (each pair's side of the plane and its place in its
//!    child), `counts.wgsl` (the children's counts off the scans). The host reads the
//!    decisions and counts back and does the level's bookkeeping with the CPU twin's own
//!    [`plan_level`] (node words, the next level's cells, where every node's pairs go);
//!    `scatter.wgsl` then moves each pair to its child (clipped), to the small roots' items or
//!    to the large leaves' references.
//! 2. **Small stage**: `small.wgsl` with `COUNT`, one workgroup of 64 invocations per small
//!    root, the exact SAH with `u64` masks (two `u32`s) and popcounts: each subtree's size (read
//!    back, scanned on the host into places) and a log of the decision at every node, 16 bits
//!    each, in a pool the roots share. Then `small_replay.wgsl`, one invocation per logged
//!    root, writes the words and references by walking its log, which measures no candidate
//!    again; the roots without a log (more than 1024 nodes, or no room left in the pool) are
//!    measured again by `small.wgsl` with `WRITE`.
//!
//! The paper's warp reductions (the cheapest candidate of a node, a chunk's tight box) are
//! subgroup minima and maxima where the adapter has subgroups, and reductions in workgroup
//! memory (atomics on the box) where it has not.
//!
//! A build over no placeable box is the twin's one empty leaf, written by the host.

use std::time::Instant;

use bytemuck::{Pod, Zeroable};

use super::context::{GpuContext, GpuError};
use super::encoder::Encoder;
use super::kernel::{read_buffer, storage_buffer, uniform_buffer, Checks, Kernel};
use super::lbvh::sized_buffer;
use super::pool::GpuBuffer;
use super::prims::{Primitives, MAX_ELEMENTS};
use crate::accel::aabb::Aabb;
use crate::accel::grid::refs_limit;
#[cfg(doc)]
use crate::accel::tri_kdtree::decide_large;
use crate::accel::tri_kdtree::{
    build_kdtree, header, plan_level, root_items, Cell, Decision, Fate, KdTreeTooLarge, LevelNode,
    HEADER_WORDS, LEAF, MAX_WORDS,
};

/// The uniform of every kd-tree kernel. Twin of `KdBuildParams` in
/// `shaders/kdtree_tri/common.wgsl`; a test checks naga's layout against this one.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct KdBuildParams {
    pub pairs: u32,
    pub nodes: u32,
    pub roots: u32,
    pub refs_at: u32,
}

/// A node of the current level on the device (`LevelNode` in the kernels).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
struct DeviceNode {
    lo: [f32; 4],
    hi: [f32; 4],
    /// (first pair, pairs, depth, 0)
    meta: [u32; 4],
}

/// A small root on the device (`SmallRoot` in `kdtree_tri/common.wgsl`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
struct DeviceRoot {
    lo: [f32; 4],
    hi: [f32; 4],
    /// (first item, items, depth, slot)
    meta: [u32; 4],
    /// (node index of the subtree's node 1, first reference, 0, 0)
    place: [u32; 4],
}

/// What a GPU build gives back.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GpuKdBuild {
    /// The words of [`build_kdtree`].
    pub words: Vec<u32>,
    /// The device time of the build's submissions in ms, when the adapter has timestamps.
    pub device_ms: Option<f64>,
    /// The host's time from the call to the words on the device (uploads, read-backs and
    /// bookkeeping included; not the final read of the words).
    pub wall_ms: f64,
    /// Large-stage levels (one read-back each).
    pub levels: u32,
    /// The deepest leaf, in internal nodes from the root (the twin's `KdBuild::depth`).
    pub depth: u32,
    /// Small roots whose words were written from their logs (`small_replay.wgsl`).
    pub replayed_roots: u32,
    /// Small roots without a log, whose words `small.wgsl` (`WRITE`) measured again.
    pub measured_again_roots: u32,
}

/// The pool the small stage logs its decisions in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmallLogs {
    /// Four 16-bit entries per small item, within one binding.
    Pooled,
    /// So many 32-bit words (tests: 0 measures every root again, a few words some of them).
    Words(u64),
}

/// The kd-tree kernels, built once per context.
pub struct KdTreeBuilder {
    tight: Kernel,
    decide: Kernel,
    flags: Kernel,
    counts: Kernel,
    scatter: Kernel,
    small_count: Kernel,
    small_write: Kernel,
    small_replay: Kernel,
}

fn cell_words(cell: &Cell) -> ([f32; 4], [f32; 4]) {
    let (lo, hi) = cell;
    ([lo[0], lo[1], lo[2], 0.0], [hi[0], hi[1], hi[2], 0.0])
}

/// The decision a `found` word packs (`counts.wgsl`: code | axis << 2).
fn unpack_decision(code: u32, plane: u32) -> Decision {
    match code & 3 {
        0 => Decision::Leaf,
        1 => Decision::Small,
        _ => Decision::Split {
            axis: (code >> 2) as usize,
            plane: f32::from_bits(plane),
        },
    }
}

impl KdTreeBuilder {
    /// Builds the kernels, the tight boxes' and the small stage's with subgroup reductions
    /// where the adapter has subgroups.
    pub fn new(ctx: &GpuContext) -> Result<KdTreeBuilder, GpuError> {
        KdTreeBuilder::with_subgroups(ctx, ctx.info.features.subgroups)
    }

    /// Builds the kernels, the tight boxes' and the small stage's reductions by subgroup
    /// operations or in workgroup memory alone (the fallback; tests build both).
    pub fn with_subgroups(ctx: &GpuContext, subgroups: bool) -> Result<KdTreeBuilder, GpuError> {
        let kernel = |file: &str, defines: &[&str]| {
            let mut defines = defines.to_vec();
            if subgroups && (file == "small.wgsl" || file == "tight.wgsl") {
                defines.push("SUBGROUPS");
            }
            Kernel::new(
                ctx,
                &format!("kdtree_tri/{file}"),
                &defines,
                Checks::Checked,
            )
        };
        Ok(KdTreeBuilder {
            tight: kernel("tight.wgsl", &[])?,
            decide: kernel("decide.wgsl", &[])?,
            flags: kernel("flags.wgsl", &[])?,
            counts: kernel("counts.wgsl", &[])?,
            scatter: kernel("scatter.wgsl", &[])?,
            small_count: kernel("small.wgsl", &["COUNT"])?,
            small_write: kernel("small.wgsl", &["WRITE"])?,
            small_replay: kernel("small_replay.wgsl", &[])?,
        })
    }

    fn run(
        &self,
        ctx: &GpuContext,
        encoder: &mut Encoder,
        kernel: &Kernel,
        n: u64,
        resources: &[(&str, &GpuBuffer)],
    ) -> Result<(), GpuError> {
        let bind = kernel.bind(ctx, resources)?;
        kernel.dispatch(encoder, &bind, kernel.grid_for(ctx, n));
        Ok(())
    }

    /// Records a kernel of one workgroup per item (the small stage's roots).
    fn run_groups(
        &self,
        ctx: &GpuContext,
        encoder: &mut Encoder,
        kernel: &Kernel,
        groups: u64,
        resources: &[(&str, &GpuBuffer)],
    ) -> Result<(), GpuError> {
        let bind = kernel.bind(ctx, resources)?;
        let max = u64::from(ctx.info.max_compute_workgroups_per_dimension.max(1));
        let grid = if groups <= max {
            (groups.max(1) as u32, 1, 1)
        } else {
            (max as u32, groups.div_ceil(max) as u32, 1)
        };
        kernel.dispatch(encoder, &bind, grid);
        Ok(())
    }

    /// Builds the kd-tree over `boxes` on the device and reads its words back (tests, benches):
    /// the words of [`build_kdtree`], or its [`KdTreeTooLarge`] error. The device time is the
    /// context's device clock over the build's submissions (started afresh).
    pub fn build_vec(
        &self,
        ctx: &GpuContext,
        prims: &Primitives,
        boxes: &[Aabb],
    ) -> Result<Result<GpuKdBuild, KdTreeTooLarge>, GpuError> {
        self.build_vec_with(ctx, prims, boxes, SmallLogs::Pooled)
    }

    /// [`KdTreeBuilder::build_vec`] with the small stage's logs chosen.
    pub fn build_vec_with(
        &self,
        ctx: &GpuContext,
        prims: &Primitives,
        boxes: &[Aabb],
        logs: SmallLogs,
    ) -> Result<Result<GpuKdBuild, KdTreeTooLarge>, GpuError> {
        ctx.reset_clocks();
        let built = self.build_unclocked(ctx, prims, boxes, logs)?;
        let device_ms = ctx.read_device_clock()?.map(|c| c.device_ms);
        Ok(built.map(|b| GpuKdBuild { device_ms, ..b }))
    }

    /// [`KdTreeBuilder::build_vec_with`] without the device clock (`device_ms` is `None`), so
    /// that a build before a frame leaves the frame's clock alone.
    pub fn build_unclocked(
        &self,
        ctx: &GpuContext,
        prims: &Primitives,
        boxes: &[Aabb],
        logs: SmallLogs,
    ) -> Result<Result<GpuKdBuild, KdTreeTooLarge>, GpuError> {
        let start = Instant::now();
        let (root_cell, margin, items) = root_items(boxes);
        if items.is_empty() {
            return Ok(build_kdtree(boxes).map(|b| GpuKdBuild {
                words: b.words,
                wall_ms: start.elapsed().as_secs_f64() * 1e3,
                ..GpuKdBuild::default()
            }));
        }
        let limit = refs_limit(items.len() as u32);
        let mut lo_words: Vec<[u32; 4]> = Vec::with_capacity(items.len());
        let mut hi_words: Vec<[u32; 4]> = Vec::with_capacity(items.len());
        for it in &items {
            let b = |v: [f32; 3]| v.map(f32::to_bits);
            let (lo, hi) = (b(it.lo), b(it.hi));
            lo_words.push([lo[0], lo[1], lo[2], it.prim]);
            hi_words.push([hi[0], hi[1], hi[2], 0]);
        }
        let mut pair_lo = storage_buffer(ctx, "kd-tree pairs lo", &lo_words)?;
        let mut pair_hi = storage_buffer(ctx, "kd-tree pairs hi", &hi_words)?;
        drop((lo_words, hi_words));

        // Stage 1: the large nodes, level by level.
        let mut nodes: Vec<[u32; 2]> = vec![[LEAF, 0]];
        let mut level = vec![LevelNode {
            slot: 0,
            cell: root_cell,
            count: items.len() as u32,
            depth: 0,
        }];
        drop(items);
        let mut depth = 0u32;
        let mut levels = 0u32;
        // Every large leaf's (slot, first reference, count), in slot order.
        let mut large_leaves: Vec<(u32, u32, u32)> = Vec::new();
        let mut large_refs_total = 0u32;
        let mut roots: Vec<DeviceRoot> = Vec::new();
        let mut small_total = 0u32;
        // The small items and large references of each level, copied together at the end.
        let mut small_chunks: Vec<(GpuBuffer, u32)> = Vec::new();
        let mut ref_chunks: Vec<(GpuBuffer, u32, u32)> = Vec::new();
        let mut encoder = Encoder::new(ctx);
        while !level.is_empty() {
            levels += 1;
            let m = level.len() as u32;
            let mut first = 0u64;
            let device_nodes: Vec<DeviceNode> = level
                .iter()
                .map(|node| {
                    let (lo, hi) = cell_words(&node.cell);
                    let meta = [first as u32, node.count, node.depth, 0];
                    first += u64::from(node.count);
                    DeviceNode { lo, hi, meta }
                })
                .collect();
            let pairs = u32::try_from(first)
                .ok()
                .filter(|&p| p <= MAX_ELEMENTS)
                .ok_or_else(|| GpuError::Device(format!("kd-tree: {first} pairs in a level")))?;
            let params = KdBuildParams {
                pairs,
                nodes: m,
                ..Default::default()
            };
            let uniform = uniform_buffer(ctx, "kd-tree params", &params);
            let level_nodes = storage_buffer(ctx, "kd-tree level", &device_nodes)?;
            let tight = storage_buffer(ctx, "kd-tree tight boxes", &vec![0u32; 6 * m as usize])?;
            let decisions = sized_buffer(ctx, "kd-tree decisions", u64::from(m) * 16)?;
            let pairs_n = u64::from(pairs.max(1));
            let left_flags = sized_buffer(ctx, "kd-tree left flags", pairs_n * 4)?;
            let right_flags = sized_buffer(ctx, "kd-tree right flags", pairs_n * 4)?;
            let left_offsets = sized_buffer(ctx, "kd-tree left offsets", pairs_n * 4)?;
            let right_offsets = sized_buffer(ctx, "kd-tree right offsets", pairs_n * 4)?;
            let found = sized_buffer(ctx, "kd-tree found", u64::from(m) * 16)?;
            let pair_resources = [
                ("params", &uniform),
                ("pair_lo", &pair_lo),
                ("pair_hi", &pair_hi),
            ];
            if pairs > 0 {
                self.run(
                    ctx,
                    &mut encoder,
                    &self.tight,
                    u64::from(pairs),
                    &[
                        pair_resources[0],
                        pair_resources[1],
                        pair_resources[2],
                        ("tight", &tight),
                    ],
                )?;
            }
            self.run(
                ctx,
                &mut encoder,
                &self.decide,
                u64::from(m),
                &[
                    ("params", &uniform),
                    ("level", &level_nodes),
                    ("tight", &tight),
                    ("decisions", &decisions),
                ],
            )?;
            if pairs > 0 {
                self.run(
                    ctx,
                    &mut encoder,
                    &self.flags,
                    u64::from(pairs),
                    &[
                        pair_resources[0],
                        pair_resources[1],
                        pair_resources[2],
                        ("decisions", &decisions),
                        ("left_flags", &left_flags),
                        ("right_flags", &right_flags),
                    ],
                )?;
                prims.exclusive_scan(ctx, &mut encoder, &left_flags, &left_offsets, pairs)?;
                prims.exclusive_scan(ctx, &mut encoder, &right_flags, &right_offsets, pairs)?;
            }
            self.run(
                ctx,
                &mut encoder,
                &self.counts,
                u64::from(m),
                &[
                    ("params", &uniform),
                    ("level", &level_nodes),
                    ("decisions", &decisions),
                    ("left_flags", &left_flags),
                    ("right_flags", &right_flags),
                    ("left_offsets", &left_offsets),
                    ("right_offsets", &right_offsets),
                    ("found", &found),
                ],
            )?;
            ctx.submit([std::mem::replace(&mut encoder, Encoder::new(ctx)).finish()]);
            let found_words: Vec<[u32; 4]> = read_buffer(ctx, &found, m as usize)?;
            let found: Vec<(Decision, u32, u32)> = found_words
                .iter()
                .map(|w| (unpack_decision(w[0], w[1]), w[2], w[3]))
                .collect();
            let plan = plan_level(&mut nodes, &level, &found, limit);

            // Where every node's pairs go.
            let mut next_first = Vec::with_capacity(plan.next.len());
            let mut next_pairs = 0u64;
            for child in &plan.next {
                next_first.push(next_pairs as u32);
                next_pairs += u64::from(child.count);
            }
            let mut fates: Vec<[u32; 4]> = Vec::with_capacity(level.len());
            let (mut level_small, mut level_refs) = (0u32, 0u32);
            for (node, fate) in level.iter().zip(&plan.fates) {
                depth = depth.max(node.depth);
                fates.push(match *fate {
                    Fate::Leaf => {
                        large_leaves.push((node.slot, large_refs_total + level_refs, node.count));
                        level_refs += node.count;
                        [0, level_refs - node.count, 0, 0]
                    }
                    Fate::Small => {
                        let (lo, hi) = cell_words(&node.cell);
                        roots.push(DeviceRoot {
                            lo,
                            hi,
                            meta: [small_total + level_small, node.count, node.depth, node.slot],
                            place: [0; 4],
                        });
                        level_small += node.count;
                        [1, level_small - node.count, 0, 0]
                    }
                    Fate::Split { child, .. } => [
                        2,
                        next_first[child as usize],
                        next_first[child as usize + 1],
                        child,
                    ],
                });
            }
            let next_pairs = u32::try_from(next_pairs)
                .ok()
                .filter(|&p| p <= MAX_ELEMENTS)
                .ok_or_else(|| {
                    GpuError::Device(format!("kd-tree: {next_pairs} pairs in a level"))
                })?;
            let fates = storage_buffer(ctx, "kd-tree fates", &fates)?;
            let next_lo = sized_buffer(ctx, "kd-tree pairs lo", u64::from(next_pairs.max(1)) * 16)?;
            let next_hi = sized_buffer(ctx, "kd-tree pairs hi", u64::from(next_pairs.max(1)) * 16)?;
            let small_items = sized_buffer(
                ctx,
                "kd-tree small items",
                u64::from(level_small.max(1)) * 32,
            )?;
            let large_refs = sized_buffer(
                ctx,
                "kd-tree large references",
                u64::from(level_refs.max(1)) * 4,
            )?;
            if pairs > 0 {
                self.run(
                    ctx,
                    &mut encoder,
                    &self.scatter,
                    u64::from(pairs),
                    &[
                        ("params", &uniform),
                        ("level", &level_nodes),
                        ("pair_lo", &pair_lo),
                        ("pair_hi", &pair_hi),
                        ("decisions", &decisions),
                        ("fates", &fates),
                        ("left_flags", &left_flags),
                        ("right_flags", &right_flags),
                        ("left_offsets", &left_offsets),
                        ("right_offsets", &right_offsets),
                        ("next_lo", &next_lo),
                        ("next_hi", &next_hi),
                        ("small_items", &small_items),
                        ("large_refs", &large_refs),
                    ],
                )?;
            }
            if level_small > 0 {
                small_chunks.push((small_items, level_small));
            }
            if level_refs > 0 {
                ref_chunks.push((large_refs, large_refs_total, level_refs));
            }
            small_total += level_small;
            large_refs_total += level_refs;
            (pair_lo, pair_hi) = (next_lo, next_hi);
            level = plan.next;
        }
        let large_nodes = nodes.len() as u32;

        // Stage 2: the small roots' subtrees, counted, placed, then written.
        let small_items = sized_buffer(
            ctx,
            "kd-tree small items",
            u64::from(small_total.max(1)) * 32,
        )?;
        let mut at = 0u64;
        for (chunk, count) in &small_chunks {
            encoder.copy_buffer_to_buffer(chunk, 0, &small_items, at, u64::from(*count) * 32);
            at += u64::from(*count) * 32;
        }
        let root_count = roots.len() as u32;
        let mut params = KdBuildParams {
            roots: root_count,
            ..Default::default()
        };
        let mut sizes: Vec<[u32; 4]> = Vec::new();
        let mut logged: Vec<[u32; 2]> = Vec::new();
        let pool_words = match logs {
            SmallLogs::Pooled => (u64::from(small_total) * 2).min(ctx.info.binding_limit() / 4),
            SmallLogs::Words(words) => words.min(ctx.info.binding_limit() / 4),
        };
        let log_words = sized_buffer(ctx, "kd-tree small logs", pool_words.max(1) * 4)?;
        let log_roots = sized_buffer(
            ctx,
            "kd-tree small log places",
            u64::from(root_count.max(1)) * 8,
        )?;
        if root_count > 0 {
            let uniform = uniform_buffer(ctx, "kd-tree params", &params);
            let root_buffer = storage_buffer(ctx, "kd-tree small roots", &roots)?;
            let size_buffer =
                sized_buffer(ctx, "kd-tree subtree sizes", u64::from(root_count) * 16)?;
            // No pool at all: its one word is taken, so no root finds room.
            let log_next =
                storage_buffer(ctx, "kd-tree small log next", &[u32::from(pool_words == 0)])?;
            self.run_groups(
                ctx,
                &mut encoder,
                &self.small_count,
                u64::from(root_count),
                &[
                    ("params", &uniform),
                    ("roots", &root_buffer),
                    ("small_items", &small_items),
                    ("sizes", &size_buffer),
                    ("logs", &log_roots),
                    ("log_words", &log_words),
                    ("log_next", &log_next),
                ],
            )?;
            ctx.submit([std::mem::replace(&mut encoder, Encoder::new(ctx)).finish()]);
            sizes = read_buffer(ctx, &size_buffer, root_count as usize)?;
            logged = read_buffer(ctx, &log_roots, root_count as usize)?;
        }
        let mut node_total = u64::from(large_nodes);
        let mut refs_total = u64::from(large_refs_total);
        let mut leaves = large_leaves.len() as u64;
        for (root, size) in roots.iter_mut().zip(&sizes) {
            root.place = [node_total as u32, refs_total as u32, 0, 0];
            node_total += u64::from(size[0]) - 1;
            refs_total += u64::from(size[1]);
            leaves += u64::from(size[3]);
            depth = depth.max(root.meta[2] + size[2]);
        }
        let words_needed = HEADER_WORDS as u64 + 2 * node_total + refs_total;
        if words_needed > MAX_WORDS {
            return Ok(Err(KdTreeTooLarge {
                words: words_needed,
                limit: MAX_WORDS,
            }));
        }
        let refs_at = HEADER_WORDS as u32 + 2 * node_total as u32;
        for &(slot, first, count) in &large_leaves {
            nodes[slot as usize] = [LEAF | first, count];
        }
        let words = sized_buffer(ctx, "kd-tree words", words_needed * 4)?;
        let head = header(
            &root_cell,
            margin,
            node_total as u32,
            large_nodes,
            refs_at,
            refs_total as u32,
            root_count,
            leaves as u32,
        );
        ctx.write_buffer(&words, 0, bytemuck::cast_slice(&head));
        ctx.write_buffer(
            &words,
            HEADER_WORDS as u64 * 4,
            bytemuck::cast_slice(&nodes),
        );
        for (chunk, first, count) in &ref_chunks {
            let to = (u64::from(refs_at) + u64::from(*first)) * 4;
            encoder.copy_buffer_to_buffer(chunk, 0, &words, to, u64::from(*count) * 4);
        }
        // The logged roots replay their logs; the others are measured again.
        let again: Vec<DeviceRoot> = roots
            .iter()
            .zip(&logged)
            .filter(|(_, log)| log[1] == 0)
            .map(|(root, _)| *root)
            .collect();
        let measured_again_roots = again.len() as u32;
        params.refs_at = refs_at;
        if root_count > measured_again_roots {
            let uniform = uniform_buffer(ctx, "kd-tree params", &params);
            let root_buffer = storage_buffer(ctx, "kd-tree small roots", &roots)?;
            self.run(
                ctx,
                &mut encoder,
                &self.small_replay,
                u64::from(root_count),
                &[
                    ("params", &uniform),
                    ("roots", &root_buffer),
                    ("small_items", &small_items),
                    ("logs", &log_roots),
                    ("log_words", &log_words),
                    ("words", &words),
                ],
            )?;
        }
        if measured_again_roots > 0 {
            params.roots = measured_again_roots;
            let uniform = uniform_buffer(ctx, "kd-tree params", &params);
            let root_buffer = storage_buffer(ctx, "kd-tree small roots", &again)?;
            self.run_groups(
                ctx,
                &mut encoder,
                &self.small_write,
                u64::from(measured_again_roots),
                &[
                    ("params", &uniform),
                    ("roots", &root_buffer),
                    ("small_items", &small_items),
                    ("words", &words),
                ],
            )?;
        }
        ctx.submit([encoder.finish()]);
        let out: Vec<u32> = read_buffer(ctx, &words, words_needed as usize)?;
        let wall_ms = start.elapsed().as_secs_f64() * 1e3;
        Ok(Ok(GpuKdBuild {
            words: out,
            device_ms: None,
            wall_ms,
            levels,
            depth,
            replayed_roots: root_count - measured_again_roots,
            measured_again_roots,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::shader;

    /// The WGSL struct `name` of `path` has the host struct's `size` and, in order, the
    /// fields `(WGSL name, host offset)`.
    fn assert_wgsl_twin(path: &str, name: &str, size: usize, fields: &[(&str, usize)]) {
        let (span, offsets) = shader::struct_layout(path, name);
        assert_eq!(span as usize, size, "{name}");
        let expected: Vec<(String, u32)> = fields
            .iter()
            .map(|&(field, offset)| (field.to_string(), offset as u32))
            .collect();
        assert_eq!(offsets, expected, "{name}");
    }

    /// The host `KdBuildParams` has the size and field offsets naga reflects for its WGSL twin.
    #[test]
    fn kd_build_params_match_their_wgsl_twin() {
        use std::mem::offset_of;
        assert_wgsl_twin(
            "kdtree_tri/decide.wgsl",
            "KdBuildParams",
            std::mem::size_of::<KdBuildParams>(),
            &[
                ("pairs", offset_of!(KdBuildParams, pairs)),
                ("nodes", offset_of!(KdBuildParams, nodes)),
                ("roots", offset_of!(KdBuildParams, roots)),
                ("refs_at", offset_of!(KdBuildParams, refs_at)),
            ],
        );
    }

    /// The host's small root has the size and field offsets of `SmallRoot` in the kernels.
    #[test]
    fn device_roots_match_their_wgsl_twin() {
        use std::mem::offset_of;
        assert_wgsl_twin(
            "kdtree_tri/small_replay.wgsl",
            "SmallRoot",
            std::mem::size_of::<DeviceRoot>(),
            &[
                ("lo", offset_of!(DeviceRoot, lo)),
                ("hi", offset_of!(DeviceRoot, hi)),
                ("span", offset_of!(DeviceRoot, meta)),
                ("place", offset_of!(DeviceRoot, place)),
            ],
        );
    }

    /// The kernels' constants are the CPU twin's.
    #[test]
    fn kd_kernel_constants_equal_the_cpu_twins() {
        use crate::accel::tri_kdtree::{EMPTY_CUT_FRACTION, MAX_DEPTH, SMALL_NODE, TRAVERSAL_COST};
        let source = shader::assemble("kdtree_tri/small.wgsl", &["WRITE"]).expect("assembles");
        for constant in [
            format!("const KT_SMALL_NODE: u32 = {SMALL_NODE}u;"),
            format!("const KT_MAX_DEPTH: u32 = {MAX_DEPTH}u;"),
            format!("const KT_EMPTY_CUT_FRACTION: f32 = {EMPTY_CUT_FRACTION:?};"),
            format!("const KT_TRAVERSAL_COST: u32 = {TRAVERSAL_COST}u;"),
            format!("const KT_LEAF: u32 = 0x{LEAF:08x}u;"),
            format!("const KT_HEADER_WORDS: u32 = {HEADER_WORDS}u;"),
        ] {
            assert!(source.contains(&constant), "{constant}");
        }
    }
}
