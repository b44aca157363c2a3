//! The PLOC builder on the GPU (Meister & Bittner 2018): the same binary tree as the CPU twin
//! [`build_ploc`](crate::accel::ploc::build_ploc), record for record and bit for bit, as
//! [`BinaryNodeRecord`]s.
//!
//! [`PlocBuilder::record_build`] records, reading nothing back:
//!
//! 1. the LBVH's Morton codes and their radix sort ([`LbvhBuilder::record_morton_order`]);
//! 2. `bvh/ploc_leaves.wgsl`: the leaves, which are round 0's clusters;
//! 3. [`ploc_rounds`] rounds of `bvh/ploc_nearest.wgsl` (every cluster's nearest neighbour),
//!    `bvh/ploc_count.wgsl` (per block of 256 clusters, how many stay and merge),
//!    `bvh/ploc_scan.wgsl` (one workgroup: the blocks' prefixes, the next round's count and
//!    dispatch arguments) and `bvh/ploc_compact.wgsl` (the merges' nodes, the next round's
//!    clusters), the clusters in two arrays used in turn. The round's size lives on the
//!    device: each round's dispatches are indirect, through arguments its scan wrote, so the
//!    rounds after the last merge cost an empty dispatch each;
//! 4. `bvh/ploc_order.wgsl`: every leaf's place in depth-first order, which gives the
//!    primitive order and each node's `first`.
//!
//! Memory while a build runs: 48 bytes a node (`2n − 1` nodes), and per primitive 4 bytes of
//! codes, 8 of order (the sort's and the tree's), 4 of neighbours, 2 × 36 of clusters and the
//! radix sort's 8.

use bytemuck::{Pod, Zeroable};

use super::context::{GpuContext, GpuError};
use super::encoder::{Encoder, Grid};
use super::kernel::{
    pooled_buffer, storage_buffer, uniform_buffer, write_storage, Checks, Kernel, STORAGE_USAGE,
};
use super::lbvh::{build_and_read, output_buffers, sized_buffer, LbvhBuffers, LbvhBuilder};
use super::pool::GpuBuffer;
use super::prims::Primitives;
use crate::accel::aabb::Aabb;
use crate::accel::bvh::BinaryNodeRecord;
use crate::accel::lbvh::LbvhFrame;
use crate::accel::ploc::{ploc_natural_rounds, ploc_rounds};

/// Clusters per block of the round kernels (`PLOC_WG_SIZE`).
const BLOCK: u64 = 256;

/// The state words before the rounds' entries (`STATE_ROUNDS` in `bvh/ploc_common.wgsl`).
const STATE_ROUNDS: u32 = 4;

/// The most workgroups a round's dispatch takes; they loop over the blocks beyond.
const MAX_GROUPS: u32 = 4096;

/// The uniform of every PLOC kernel. Twin of `PlocParams` in `shaders/bvh/ploc_common.wgsl`;
/// a test checks naga's layout against this one.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct PlocParams {
    /// Primitives.
    pub n: u32,
    /// Rounds that search ([`ploc_natural_rounds`]); later ones pair.
    pub natural_rounds: u32,
    /// The most workgroups a round's dispatches take.
    pub max_groups: u32,
    /// Every round ([`ploc_rounds`]).
    pub rounds: u32,
}

/// The PLOC kernels, built once per context (with the LBVH's for the Morton order).
pub struct PlocBuilder {
    lbvh: LbvhBuilder,
    leaves: Kernel,
    nearest: Kernel,
    count: Kernel,
    scan: Kernel,
    compact: Kernel,
    order: Kernel,
    max_groups: u32,
}

impl PlocBuilder {
    /// Builds the kernels.
    pub fn new(ctx: &GpuContext) -> Result<PlocBuilder, GpuError> {
        let kernel = |file: &str| Kernel::new(ctx, &format!("bvh/{file}"), &[], Checks::Checked);
        Ok(PlocBuilder {
            lbvh: LbvhBuilder::new(ctx)?,
            leaves: kernel("ploc_leaves.wgsl")?,
            nearest: kernel("ploc_nearest.wgsl")?,
            count: kernel("ploc_count.wgsl")?,
            scan: kernel("ploc_scan.wgsl")?,
            compact: kernel("ploc_compact.wgsl")?,
            order: kernel("ploc_order.wgsl")?,
            max_groups: MAX_GROUPS.min(ctx.info.max_compute_workgroups_per_dimension.max(1)),
        })
    }

    /// The same builder with its rounds' dispatches limited to `groups` workgroups (at least
    /// one), so that a small build loops over its blocks as a large one does (for tests).
    pub fn with_max_groups(mut self, groups: u32) -> PlocBuilder {
        self.max_groups = groups.clamp(1, self.max_groups);
        self
    }

    /// Records the PLOC tree over the `n` boxes in `boxes` (`array<vec4<f32>>`, two a
    /// primitive: `lo.xyz`, `hi.xyz`; w is ignored) with the Morton `frame` (normally
    /// [`lbvh_frame`](crate::accel::lbvh::lbvh_frame) of the same boxes) into `encoder`; nothing is read back. The result is
    /// laid out as the LBVH's: `2n − 1` records, the root at 0, and the primitive order.
    pub fn record_build(
        &self,
        ctx: &GpuContext,
        encoder: &mut Encoder,
        prims: &Primitives,
        boxes: &GpuBuffer,
        n: u32,
        frame: &LbvhFrame,
    ) -> Result<LbvhBuffers, GpuError> {
        let LbvhBuffers { nodes, prim_order } = output_buffers(ctx, "PLOC", boxes, n)?;
        if n == 0 {
            return Ok(LbvhBuffers { nodes, prim_order });
        }
        let sorted = sized_buffer(ctx, "PLOC Morton order", n as u64 * 4)?;
        let (_codes, _) = self
            .lbvh
            .record_morton_order(ctx, encoder, prims, boxes, n, frame, &sorted)?;

        let rounds = ploc_rounds(n);
        let params = uniform_buffer(
            ctx,
            "PLOC params",
            &PlocParams {
                n,
                natural_rounds: ploc_natural_rounds(n),
                max_groups: self.max_groups,
                rounds,
            },
        );
        let clusters = [
            sized_buffer(ctx, "PLOC clusters", n as u64 * 4)?,
            sized_buffer(ctx, "PLOC clusters", n as u64 * 4)?,
        ];
        let cluster_boxes = [
            sized_buffer(ctx, "PLOC cluster boxes", n as u64 * 32)?,
            sized_buffer(ctx, "PLOC cluster boxes", n as u64 * 32)?,
        ];
        let nearest = sized_buffer(ctx, "PLOC neighbours", n as u64 * 4)?;
        let block_sums = sized_buffer(ctx, "PLOC block sums", (n as u64).div_ceil(BLOCK) * 8)?;
        // The round, then (clusters, next internal node) for each round 0..=rounds.
        let mut words = vec![0u32; (STATE_ROUNDS + 2 * (rounds + 1)) as usize];
        words[STATE_ROUNDS as usize] = n;
        words[STATE_ROUNDS as usize + 1] = n - 1;
        let state = storage_buffer(ctx, "PLOC state", &words)?;
        let mut first_args = vec![0u32; 3 * (rounds as usize + 1)];
        if n > 1 {
            let groups = (n as u64).div_ceil(BLOCK).min(self.max_groups as u64) as u32;
            first_args[..3].copy_from_slice(&[groups, 1, 1]);
        }
        let args_bytes: &[u8] = bytemuck::cast_slice(&first_args);
        let args = pooled_buffer(
            ctx,
            "PLOC round args",
            args_bytes.len() as u64,
            wgpu::BufferUsages::INDIRECT.union(STORAGE_USAGE),
            false,
        );
        write_storage(ctx, &args, args_bytes);

        let bind = self.leaves.bind(
            ctx,
            &[
                ("params", &params),
                ("order", &sorted),
                ("boxes", boxes),
                ("nodes", &nodes),
                ("clusters", &clusters[0]),
                ("cluster_boxes", &cluster_boxes[0]),
            ],
        )?;
        self.leaves
            .dispatch(encoder, &bind, self.leaves.grid_for(ctx, n as u64));

        if n > 1 {
            let mut nearest_binds = Vec::new();
            let mut compact_binds = Vec::new();
            for side in 0..2 {
                nearest_binds.push(self.nearest.bind(
                    ctx,
                    &[
                        ("params", &params),
                        ("state", &state),
                        ("cluster_boxes", &cluster_boxes[side]),
                        ("nearest", &nearest),
                    ],
                )?);
                compact_binds.push(self.compact.bind(
                    ctx,
                    &[
                        ("params", &params),
                        ("state", &state),
                        ("nearest", &nearest),
                        ("block_sums", &block_sums),
                        ("clusters", &clusters[side]),
                        ("cluster_boxes", &cluster_boxes[side]),
                        ("next_clusters", &clusters[1 - side]),
                        ("next_boxes", &cluster_boxes[1 - side]),
                        ("nodes", &nodes),
                    ],
                )?);
            }
            let count = self.count.bind(
                ctx,
                &[
                    ("params", &params),
                    ("state", &state),
                    ("nearest", &nearest),
                    ("block_sums", &block_sums),
                ],
            )?;
            let scan = self.scan.bind(
                ctx,
                &[
                    ("params", &params),
                    ("state", &state),
                    ("block_sums", &block_sums),
                    ("args", &args),
                ],
            )?;
            for round in 0..rounds as usize {
                let side = round % 2;
                let grid = || Grid::Indirect(&args, round as u64 * 12);
                self.nearest
                    .dispatch_grid(encoder, &nearest_binds[side], grid());
                self.count.dispatch_grid(encoder, &count, grid());
                self.scan.dispatch(encoder, &scan, (1, 1, 1));
                self.compact
                    .dispatch_grid(encoder, &compact_binds[side], grid());
            }
        }

        let bind = self.order.bind(
            ctx,
            &[
                ("params", &params),
                ("order", &sorted),
                ("nodes", &nodes),
                ("prim_order", &prim_order),
            ],
        )?;
        self.order
            .dispatch(encoder, &bind, self.order.grid_for(ctx, n as u64));
        Ok(LbvhBuffers { nodes, prim_order })
    }

    /// Uploads `bounds`, builds their PLOC tree on the GPU (in the frame [`lbvh_frame`](crate::accel::lbvh::lbvh_frame)
    /// gives) and reads the records and the primitive order back, for tests and benchmarks.
    pub fn build_vec(
        &self,
        ctx: &GpuContext,
        prims: &Primitives,
        bounds: &[Aabb],
    ) -> Result<(Vec<BinaryNodeRecord>, Vec<u32>), GpuError> {
        build_and_read(ctx, "PLOC", bounds, |encoder, boxes, n, frame| {
            self.record_build(ctx, encoder, prims, boxes, n, frame)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::shader;

    /// The host `PlocParams` has the size and field offsets naga reflects for its WGSL twin,
    /// and the kernels' constants are the host's.
    #[test]
    fn ploc_params_and_constants_match_their_wgsl_twins() {
        let (span, offsets) = shader::struct_layout("bvh/ploc_leaves.wgsl", "PlocParams");
        assert_eq!(span as usize, std::mem::size_of::<PlocParams>());
        let field = |name: &str, offset: usize| (name.to_string(), offset as u32);
        assert_eq!(
            offsets,
            vec![
                field("n", std::mem::offset_of!(PlocParams, n)),
                field(
                    "natural_rounds",
                    std::mem::offset_of!(PlocParams, natural_rounds)
                ),
                field("max_groups", std::mem::offset_of!(PlocParams, max_groups)),
                field("rounds", std::mem::offset_of!(PlocParams, rounds)),
            ]
        );
        let source = shader::assemble("bvh/ploc_scan.wgsl", &[]).expect("assembles");
        for constant in [
            format!("const PLOC_WG_SIZE: u32 = {BLOCK}u;"),
            format!(
                "const PLOC_RADIUS: u32 = {}u;",
                crate::accel::ploc::PLOC_RADIUS
            ),
            format!("const STATE_ROUNDS: u32 = {STATE_ROUNDS}u;"),
        ] {
            assert!(source.contains(&constant), "{constant}");
        }
    }
}
