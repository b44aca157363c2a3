//! The binned-SAH builder and its hybrid with the LBVH on the GPU (paper 003 chapter 4): the
//! same binary tree as the CPU twin [`build_sah`](crate::accel::sah_build::build_sah), record
//! for record and bit for bit, as [`BinaryNodeRecord`]s.
//!
//! [`SahBuilder::record_build`] records, reading nothing back:
//!
//! 1. for the hybrid, the LBVH's Morton codes and their radix sort
//!    ([`LbvhBuilder::record_morton_order`]), which give the starting order and the codes;
//! 2. `bvh/sah_init.wgsl`: the order, every position's large task, the accumulators and the
//!    state; the root is listed as a large task (over [`SAH_SMALL`] primitives) or a small one;
//! 3. [`sah_large_levels`] levels, breadth first, each over every node of more than
//!    [`SAH_SMALL`] primitives at that depth (its large tasks): `bvh/sah_bounds.wgsl` (the
//!    centroid boxes), `bvh/sah_bins.wgsl` (16 bins per axis: counts and boxes),
//!    `bvh/sah_split.wgsl` (a workgroup per task: its 45 planes weighed in parallel, the split,
//!    the node's record, the children listed),
//!    `bvh/sah_flags.wgsl` and an exclusive scan (the partition's ranks), `bvh/sah_scatter.wgsl`
//!    and `bvh/sah_copy.wgsl` (the stable partition), `bvh/sah_advance.wgsl` (the next level).
//!    The accumulators add by atomic minima, maxima and sums of total-order keys, which give
//!    the same bits in any order. A level's tasks are counted on the device; the per-position
//!    passes skip positions outside large tasks, so levels past the last large node cost empty
//!    passes;
//! 4. `bvh/sah_small.wgsl`: an invocation per small task builds its subtree alone;
//! 5. `bvh/sah_leaves.wgsl`: the leaves.
//!
//! Memory while a build runs: 48 bytes a node (`2n − 1` nodes); per primitive 4 bytes of order
//! and 20 of partition words (task, moved order and task, flags, ranks); a level's large tasks,
//! at most `n / (SAH_SMALL + 1) + 1`, each 64 bytes of task twice (two levels) and 1368 of
//! accumulators; and 16 bytes a small task (at most `n / 2`). The hybrid adds the Morton sort's codes and buffers.

use std::sync::OnceLock;

use bytemuck::{Pod, Zeroable};

use super::context::{GpuContext, GpuError};
use super::encoder::Encoder;
use super::kernel::{get_or_make, uniform_buffer, Checks, Kernel};
use super::lbvh::{build_and_read, output_buffers, sized_buffer, LbvhBuffers, LbvhBuilder};
use super::pool::GpuBuffer;
use super::prims::Primitives;
use crate::accel::aabb::Aabb;
use crate::accel::bvh::BinaryNodeRecord;
use crate::accel::lbvh::LbvhFrame;
use crate::accel::sah_build::{sah_large_levels, SahVariant, SAH_BINS, SAH_SMALL};

/// Words of one large task's accumulators (`ACC_WORDS` in `bvh/sah_common.wgsl`): the centroid
/// box, then each axis's bins' count and box.
pub const ACC_WORDS: u32 = 6 + 3 * SAH_BINS as u32 * 7;

/// State words before the levels' task counts (`STATE_COUNTS`).
const STATE_COUNTS: u32 = 3;

/// The uniform of every SAH kernel. Twin of `SahParams` in `shaders/bvh/sah_common.wgsl`; a
/// test checks naga's layout against this one.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct SahParams {
    /// Primitives.
    pub n: u32,
    /// 1 for the hybrid.
    pub hybrid: u32,
    /// Large tasks a level holds.
    pub task_capacity: u32,
    /// Small tasks the build holds.
    pub small_capacity: u32,
}

/// One large task as the kernels keep it. Twin of `SahTask` in `shaders/bvh/sah_common.wgsl`
/// (layout checked by a test).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct SahTask {
    pub first: u32,
    pub count: u32,
    pub depth: u32,
    pub parent: u32,
    pub side: u32,
    pub index: u32,
    pub mode: u32,
    pub axis: u32,
    pub bin: u32,
    pub left: u32,
    pub left_task: u32,
    pub right_task: u32,
    pub lo: u32,
    pub extent: u32,
    pub _pad0: u32,
    pub _pad1: u32,
}

/// The large tasks one level of `n` primitives can hold: nodes of more than [`SAH_SMALL`]
/// primitives over disjoint ranges.
pub fn task_capacity(n: u32) -> u32 {
    n / (SAH_SMALL + 1) + 1
}

/// The binned-SAH kernels, built once per context (the LBVH's, for the hybrid's order, when a
/// hybrid build first needs them).
pub struct SahBuilder {
    lbvh: OnceLock<LbvhBuilder>,
    init: Kernel,
    bounds: Kernel,
    bins: Kernel,
    split: Kernel,
    flags: Kernel,
    scatter: Kernel,
    copy: Kernel,
    advance: Kernel,
    small: Kernel,
    leaves: Kernel,
}

impl SahBuilder {
    /// Builds the kernels.
    pub fn new(ctx: &GpuContext) -> Result<SahBuilder, GpuError> {
        let kernel = |file: &str| Kernel::new(ctx, &format!("bvh/{file}"), &[], Checks::Checked);
        Ok(SahBuilder {
            lbvh: OnceLock::new(),
            init: kernel("sah_init.wgsl")?,
            bounds: kernel("sah_bounds.wgsl")?,
            bins: kernel("sah_bins.wgsl")?,
            split: kernel("sah_split.wgsl")?,
            flags: kernel("sah_flags.wgsl")?,
            scatter: kernel("sah_scatter.wgsl")?,
            copy: kernel("sah_copy.wgsl")?,
            advance: kernel("sah_advance.wgsl")?,
            small: kernel("sah_small.wgsl")?,
            leaves: kernel("sah_leaves.wgsl")?,
        })
    }

    /// Records the binned-SAH (or, with `variant` [`SahVariant::Hybrid`], the hybrid) tree over
    /// the `n` boxes in `boxes` (`array<vec4<f32>>`, two a primitive: `lo.xyz`, `hi.xyz`; w is
    /// ignored) into `encoder`; `frame` is the Morton frame of the hybrid's order (normally
    /// [`lbvh_frame`](crate::accel::lbvh::lbvh_frame) of the same boxes). Nothing is read back.
    /// The result is laid out as the LBVH's: `2n − 1` records, the root at 0, and the primitive
    /// order.
    #[allow(clippy::too_many_arguments)]
    pub fn record_build(
        &self,
        ctx: &GpuContext,
        encoder: &mut Encoder,
        prims: &Primitives,
        boxes: &GpuBuffer,
        n: u32,
        frame: &LbvhFrame,
        variant: SahVariant,
    ) -> Result<LbvhBuffers, GpuError> {
        let LbvhBuffers { nodes, prim_order } = output_buffers(ctx, "SAH", boxes, n)?;
        if n == 0 {
            return Ok(LbvhBuffers { nodes, prim_order });
        }
        let hybrid = variant == SahVariant::Hybrid;
        let codes = if hybrid {
            get_or_make(&self.lbvh, || LbvhBuilder::new(ctx))?
                .record_morton_order(ctx, encoder, prims, boxes, n, frame, &prim_order)?
                .0
        } else {
            sized_buffer(ctx, "SAH codes (unused)", 4)?
        };
        let levels = sah_large_levels(n);
        let capacity = task_capacity(n);
        let small_capacity = (n / 2).max(1);
        let params = uniform_buffer(
            ctx,
            "SAH params",
            &SahParams {
                n,
                hybrid: hybrid as u32,
                task_capacity: capacity,
                small_capacity,
            },
        );
        let words = |label: &str, count: u64| sized_buffer(ctx, label, count * 4);
        let state = words("SAH state", (STATE_COUNTS + levels + 1) as u64)?;
        let task_of = words("SAH tasks of positions", n as u64)?;
        let moved = words("SAH moved order", n as u64)?;
        let moved_task = words("SAH moved tasks", n as u64)?;
        let flags = words("SAH partition flags", n as u64)?;
        let ranks = words("SAH partition ranks", n as u64)?;
        let acc = words("SAH accumulators", capacity as u64 * ACC_WORDS as u64)?;
        let tasks = sized_buffer(
            ctx,
            "SAH large tasks",
            2 * capacity as u64 * std::mem::size_of::<SahTask>() as u64,
        )?;
        let small = sized_buffer(ctx, "SAH small tasks", small_capacity as u64 * 16)?;

        let bind = self.init.bind(
            ctx,
            &[
                ("params", &params),
                ("state", &state),
                ("order", &prim_order),
                ("task_of", &task_of),
                ("acc", &acc),
                ("tasks", &tasks),
                ("small", &small),
                ("nodes", &nodes),
            ],
        )?;
        let init_size = (n as u64).max(capacity as u64 * ACC_WORDS as u64);
        self.init
            .dispatch(encoder, &bind, self.init.grid_for(ctx, init_size));

        if levels > 0 {
            let accumulate = |kernel: &Kernel| {
                kernel.bind(
                    ctx,
                    &[
                        ("params", &params),
                        ("order", &prim_order),
                        ("task_of", &task_of),
                        ("boxes", boxes),
                        ("acc", &acc),
                    ],
                )
            };
            let bounds = accumulate(&self.bounds)?;
            let bins = accumulate(&self.bins)?;
            let split = self.split.bind(
                ctx,
                &[
                    ("params", &params),
                    ("state", &state),
                    ("tasks", &tasks),
                    ("small", &small),
                    ("acc", &acc),
                    ("nodes", &nodes),
                    ("codes", &codes),
                ],
            )?;
            let flag = self.flags.bind(
                ctx,
                &[
                    ("params", &params),
                    ("state", &state),
                    ("order", &prim_order),
                    ("task_of", &task_of),
                    ("boxes", boxes),
                    ("tasks", &tasks),
                    ("flags", &flags),
                ],
            )?;
            let scatter = self.scatter.bind(
                ctx,
                &[
                    ("params", &params),
                    ("state", &state),
                    ("order", &prim_order),
                    ("task_of", &task_of),
                    ("tasks", &tasks),
                    ("flags", &flags),
                    ("ranks", &ranks),
                    ("moved", &moved),
                    ("moved_task", &moved_task),
                ],
            )?;
            let copy = self.copy.bind(
                ctx,
                &[
                    ("params", &params),
                    ("order", &prim_order),
                    ("task_of", &task_of),
                    ("moved", &moved),
                    ("moved_task", &moved_task),
                ],
            )?;
            let advance = self.advance.bind(ctx, &[("state", &state)])?;
            let positions = |k: &Kernel| k.grid_for(ctx, n as u64);
            // A workgroup per large task the level may hold.
            let max = ctx.info.max_compute_workgroups_per_dimension.max(1);
            let task_groups = (capacity.min(max), capacity.div_ceil(capacity.min(max)), 1);
            for _ in 0..levels {
                self.bounds
                    .dispatch(encoder, &bounds, positions(&self.bounds));
                self.bins.dispatch(encoder, &bins, positions(&self.bins));
                self.split.dispatch(encoder, &split, task_groups);
                self.flags.dispatch(encoder, &flag, positions(&self.flags));
                prims.exclusive_scan(ctx, encoder, &flags, &ranks, n)?;
                self.scatter
                    .dispatch(encoder, &scatter, positions(&self.scatter));
                self.copy.dispatch(encoder, &copy, positions(&self.copy));
                self.advance.dispatch(encoder, &advance, (1, 1, 1));
            }
        }

        if n >= 2 {
            let bind = self.small.bind(
                ctx,
                &[
                    ("params", &params),
                    ("state", &state),
                    ("small", &small),
                    ("order", &prim_order),
                    ("scratch", &moved),
                    ("boxes", boxes),
                    ("nodes", &nodes),
                    ("codes", &codes),
                ],
            )?;
            self.small.dispatch(
                encoder,
                &bind,
                self.small.grid_for(ctx, small_capacity as u64),
            );
        }
        let bind = self.leaves.bind(
            ctx,
            &[
                ("params", &params),
                ("order", &prim_order),
                ("boxes", boxes),
                ("nodes", &nodes),
            ],
        )?;
        self.leaves
            .dispatch(encoder, &bind, self.leaves.grid_for(ctx, n as u64));
        Ok(LbvhBuffers { nodes, prim_order })
    }

    /// Uploads `bounds`, builds their tree on the GPU and reads the records and the primitive
    /// order back, for tests and benchmarks.
    pub fn build_vec(
        &self,
        ctx: &GpuContext,
        prims: &Primitives,
        bounds: &[Aabb],
        variant: SahVariant,
    ) -> Result<(Vec<BinaryNodeRecord>, Vec<u32>), GpuError> {
        build_and_read(ctx, "SAH", bounds, |encoder, boxes, n, frame| {
            self.record_build(ctx, encoder, prims, boxes, n, frame, variant)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accel::sah_build::{
        HYBRID_MORTON_DEPTH, SAH_LARGE_MAX_DEPTH, SAH_MAX_DEPTH, SAH_SMALL,
    };
    use crate::gpu::shader;

    fn fields(file: &str, name: &str) -> (u32, Vec<String>) {
        let (span, offsets) = shader::struct_layout(file, name);
        (span, offsets.into_iter().map(|(n, _)| n).collect())
    }

    /// The host's params and task have the size naga reflects for their WGSL twins, field for
    /// field in order, and the kernels' constants are the host's.
    #[test]
    fn sah_params_tasks_and_constants_match_their_wgsl_twins() {
        let (span, offsets) = shader::struct_layout("bvh/sah_init.wgsl", "SahParams");
        assert_eq!(span as usize, std::mem::size_of::<SahParams>());
        let field = |name: &str, offset: usize| (name.to_string(), offset as u32);
        assert_eq!(
            offsets,
            vec![
                field("n", std::mem::offset_of!(SahParams, n)),
                field("hybrid", std::mem::offset_of!(SahParams, hybrid)),
                field(
                    "task_capacity",
                    std::mem::offset_of!(SahParams, task_capacity)
                ),
                field(
                    "small_capacity",
                    std::mem::offset_of!(SahParams, small_capacity)
                ),
            ]
        );
        let (span, names) = fields("bvh/sah_split.wgsl", "SahTask");
        assert_eq!(span as usize, std::mem::size_of::<SahTask>());
        assert_eq!(names.len(), 16);
        assert_eq!(names[0], "first");
        assert_eq!(names[13], "extent");
        let source = shader::assemble("bvh/sah_small.wgsl", &[]).expect("assembles");
        for constant in [
            format!("const SAH_BINS: u32 = {SAH_BINS}u;"),
            format!("const SAH_SMALL: u32 = {SAH_SMALL}u;"),
            format!("const SAH_LARGE_MAX_DEPTH: u32 = {SAH_LARGE_MAX_DEPTH}u;"),
            format!("const SAH_MAX_DEPTH: u32 = {SAH_MAX_DEPTH}u;"),
            format!("const HYBRID_MORTON_DEPTH: u32 = {HYBRID_MORTON_DEPTH}u;"),
            format!("const ACC_WORDS: u32 = {ACC_WORDS}u;"),
            format!("const STATE_COUNTS: u32 = {STATE_COUNTS}u;"),
        ] {
            assert!(source.contains(&constant), "{constant}");
        }
    }
}
