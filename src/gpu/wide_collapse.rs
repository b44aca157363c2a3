//! The collapse of a binary BVH into the 8-wide compressed layout on the GPU, level by level
//! (`shaders/bvh/collapse_*.wgsl`): the twin of [`collapse_to_cwbvh`], which it matches node for
//! node (the same children, slots, grids and planes); only the order of the nodes within a
//! level, and so the order of the references, can differ, because nodes allocate their
//! children with atomics. Nothing is read back: [`WideCollapse::record`] dispatches
//! [`COLLAPSE_MAX_LEVELS`] levels, each sized on the device by the one before it.
//!
//! [`collapse_to_cwbvh`]: crate::accel::wide::collapse_to_cwbvh

use bytemuck::{Pod, Zeroable};

use crate::accel::bvh::{BinaryBvh, BinaryNodeRecord};
use crate::accel::wide::{WideNode, WideTree, WIDE_LEAF_MAX};
use crate::gpu::encoder::{Encoder, Grid};
use crate::gpu::kernel::{
    pooled_buffer, read_buffer, storage_buffer, storage_buffer_sized, uniform_buffer, Checks,
    STORAGE_USAGE,
};
use crate::gpu::pool::GpuBuffer;
use crate::gpu::{GpuContext, GpuError, Kernel};

/// Levels the collapse dispatches. A binary tree's levels bound the wide tree's, and the
/// builders' trees are shallower (the LBVH's at most 63 levels, the SAH builder's at most
/// `MAX_SAH_DEPTH + log2 n`); a deeper tree is reported ([`CollapseState::unfinished`]).
pub const COLLAPSE_MAX_LEVELS: u32 = 64;

/// The words of the collapse's state buffer (`STATE_*` in `shaders/bvh/collapse_common.wgsl`).
pub const STATE_NODES: usize = 0;
pub const STATE_PRIMS: usize = 1;
pub const STATE_DEPTH: usize = 4;
pub const STATE_OVERFLOW: usize = 6;
pub const STATE_UNFINISHED: usize = 7;
const STATE_WORDS: u64 = 8;

/// The parameters of the collapse kernels. Twin of `CollapseParams` in
/// `shaders/bvh/collapse_common.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct CollapseParams {
    pub binary_count: u32,
    pub prim_count: u32,
    pub leaf_max: u32,
    pub capacity: u32,
    pub node_base: u32,
    pub prim_base: u32,
    pub _pad: [u32; 2],
}

/// Twin of `LevelParams` in `shaders/bvh/collapse_level.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
struct LevelParams {
    workgroup_size: u32,
    max_groups: u32,
    finish: u32,
    _pad: u32,
}

/// The most wide nodes a collapse of a tree over `prims` primitives with leaf children of up to
/// `leaf_max` makes. A node whose children are all leaves holds more than `leaf_max`
/// primitives, and those nodes' primitives are disjoint, so there are at most
/// `B = prims / (leaf_max + 1)` of them; every other node has eight children, nodes and leaf
/// children (at most `prims`) together, so there are at most `(B + prims) / 7` of those.
pub fn collapse_capacity(prims: u32, leaf_max: u32) -> u32 {
    let prims = prims as u64;
    let bottom = prims / (leaf_max.clamp(1, WIDE_LEAF_MAX as u32) as u64 + 1);
    let capacity = bottom + (bottom + prims).div_ceil(7) + 1;
    u32::try_from(capacity).unwrap_or(u32::MAX)
}

/// The collapse's state after it ran, read back ([`WideCollapse::collapse_vec`], or by a
/// caller that checks a build).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CollapseState {
    pub nodes: u32,
    pub prims: u32,
    pub depth: u32,
    /// A node found no room in the output (a bug: [`collapse_capacity`] bounds the nodes).
    pub overflow: bool,
    /// The tree is deeper than [`COLLAPSE_MAX_LEVELS`]: nodes were left unwritten.
    pub unfinished: bool,
}

impl CollapseState {
    pub fn from_words(words: &[u32]) -> CollapseState {
        CollapseState {
            nodes: words[STATE_NODES],
            prims: words[STATE_PRIMS],
            depth: words[STATE_DEPTH],
            overflow: words[STATE_OVERFLOW] != 0,
            unfinished: words[STATE_UNFINISHED] != 0,
        }
    }

    /// An error for a collapse that did not write a whole tree.
    pub fn check(&self, tree: &str) -> Result<(), GpuError> {
        if self.overflow || self.unfinished {
            return Err(GpuError::Device(format!(
                "{tree}: the GPU collapse into the wide layout {} ",
                if self.overflow {
                    "ran out of room for its nodes"
                } else {
                    "met a tree deeper than its levels"
                }
            )));
        }
        Ok(())
    }
}

/// Where one collapse writes: nodes from `node_base` of `nodes` (80 bytes each) and references
/// from `prim_base` of `prims`, with indices local to the tree.
pub struct CollapseTarget<'a> {
    pub nodes: &'a GpuBuffer,
    pub node_base: u32,
    pub prims: &'a GpuBuffer,
    pub prim_base: u32,
    /// The room for nodes from `node_base` ([`collapse_capacity`] of the tree's primitives).
    pub capacity: u32,
}

/// The collapse's kernels.
pub struct WideCollapse {
    start: Kernel,
    level: Kernel,
    node: Kernel,
}

impl WideCollapse {
    pub fn new(ctx: &GpuContext) -> Result<WideCollapse, GpuError> {
        Ok(WideCollapse {
            start: Kernel::new(ctx, "bvh/collapse_start.wgsl", &[], Checks::Checked)?,
            level: Kernel::new(ctx, "bvh/collapse_level.wgsl", &[], Checks::Checked)?,
            node: Kernel::new(ctx, "bvh/collapse_node.wgsl", &[], Checks::Checked)?,
        })
    }

    /// Records the collapse of the binary tree `binary` (`binary_count` records, root 0) over
    /// the references `prim_order` (`prim_count` of them) into `target`, with leaf children of
    /// up to `leaf_max` primitives. Returns the state buffer ([`CollapseState::from_words`]).
    #[allow(clippy::too_many_arguments)]
    pub fn record(
        &self,
        ctx: &GpuContext,
        encoder: &mut Encoder,
        binary: &GpuBuffer,
        binary_count: u32,
        prim_order: &GpuBuffer,
        prim_count: u32,
        leaf_max: u32,
        target: &CollapseTarget<'_>,
    ) -> Result<GpuBuffer, GpuError> {
        let capacity = target.capacity.min(collapse_capacity(prim_count, leaf_max));
        let need_nodes = (target.node_base as u64 + capacity as u64) * 80;
        let need_prims = (target.prim_base as u64 + prim_count as u64) * 4;
        if need_nodes > target.nodes.size() || need_prims > target.prims.size() {
            return Err(GpuError::Device(format!(
                "wide collapse: the output holds {} bytes of nodes and {} of references, \
                 {need_nodes} and {need_prims} are needed",
                target.nodes.size(),
                target.prims.size()
            )));
        }
        let params = uniform_buffer(
            ctx,
            "collapse params",
            &CollapseParams {
                binary_count,
                prim_count,
                leaf_max: leaf_max.clamp(1, WIDE_LEAF_MAX as u32),
                capacity,
                node_base: target.node_base,
                prim_base: target.prim_base,
                _pad: [0; 2],
            },
        );
        let state = storage_buffer_sized(ctx, "collapse state", STATE_WORDS * 4)?;
        let work = storage_buffer_sized(ctx, "collapse work", capacity.max(1) as u64 * 4)?;
        let usage = wgpu::BufferUsages::INDIRECT.union(STORAGE_USAGE);
        let args = pooled_buffer(
            ctx,
            "collapse level args",
            COLLAPSE_MAX_LEVELS as u64 * 12,
            usage,
            true,
        );
        let level_params = |finish: u32| {
            uniform_buffer(
                ctx,
                "collapse level params",
                &LevelParams {
                    workgroup_size: self.node.workgroup_size,
                    max_groups: ctx.info.max_compute_workgroups_per_dimension.clamp(1, 4096),
                    finish,
                    _pad: 0,
                },
            )
        };
        let start = self.start.bind(
            ctx,
            &[
                ("params", &params),
                ("binary", binary),
                ("state", &state),
                ("work", &work),
            ],
        )?;
        self.start.dispatch(encoder, &start, (1, 1, 1));
        let (next, last) = (level_params(0), level_params(1));
        let level = self.level.bind(
            ctx,
            &[("level_params", &next), ("state", &state), ("args", &args)],
        )?;
        let finish = self.level.bind(
            ctx,
            &[("level_params", &last), ("state", &state), ("args", &args)],
        )?;
        let node = self.node.bind(
            ctx,
            &[
                ("params", &params),
                ("binary", binary),
                ("prim_order", prim_order),
                ("state", &state),
                ("work", &work),
                ("wide_nodes", target.nodes),
                ("wide_prims", target.prims),
            ],
        )?;
        for l in 0..COLLAPSE_MAX_LEVELS {
            self.level.dispatch(encoder, &level, (1, 1, 1));
            self.node
                .dispatch_grid(encoder, &node, Grid::Indirect(&args, l as u64 * 12));
        }
        self.level.dispatch(encoder, &finish, (1, 1, 1));
        Ok(state)
    }

    /// Uploads `bvh`, collapses it on the GPU and reads the tree back: its nodes, its
    /// references (those the leaf children hold, in the order the GPU wrote them) and its depth.
    pub fn collapse_vec(
        &self,
        ctx: &GpuContext,
        bvh: &BinaryBvh,
        leaf_max: usize,
    ) -> Result<(WideTree, CollapseState), GpuError> {
        let records = bvh.to_records();
        let binary_count = records.len() as u32;
        // One record at least, so that the buffer binds.
        let padded = if records.is_empty() {
            vec![BinaryNodeRecord::default()]
        } else {
            records
        };
        let binary = storage_buffer(ctx, "collapse binary", &padded)?;
        let order = storage_buffer(ctx, "collapse order", &bvh.prim_order)?;
        let prim_count = u32::try_from(bvh.prim_order.len())
            .map_err(|_| GpuError::Device("wide collapse: too many references".into()))?;
        let capacity = collapse_capacity(prim_count, leaf_max as u32);
        let nodes = storage_buffer_sized(ctx, "collapse nodes", capacity.max(1) as u64 * 80)?;
        let prims = storage_buffer_sized(ctx, "collapse prims", prim_count.max(1) as u64 * 4)?;
        let mut encoder = Encoder::new(ctx);
        let state = self.record(
            ctx,
            &mut encoder,
            &binary,
            binary_count,
            &order,
            prim_count,
            leaf_max as u32,
            &CollapseTarget {
                nodes: &nodes,
                node_base: 0,
                prims: &prims,
                prim_base: 0,
                capacity,
            },
        )?;
        ctx.submit([encoder.finish()]);
        let state =
            CollapseState::from_words(&read_buffer::<u32>(ctx, &state, STATE_WORDS as usize)?);
        state.check("wide collapse")?;
        let tree = WideTree {
            nodes: read_buffer::<WideNode>(ctx, &nodes, state.nodes as usize)?,
            prim_order: read_buffer::<u32>(ctx, &prims, state.prims as usize)?,
            depth: state.depth as usize,
        };
        Ok((tree, state))
    }
}
