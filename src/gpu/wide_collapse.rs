//! The collapse of binary BVHs into the 8-wide compressed layout on the GPU, level by level
//! (`shaders/bvh/collapse_*.wgsl`): the twin of [`collapse_to_cwbvh`], which it matches node for
//! node (the same children, slots, grids and planes); only the order of the nodes within a
//! level, and so the order of the references, can differ, because nodes allocate their
//! children with atomics. A batch collapses several trees (a frame's meshes) in one chain of
//! levels, so that its dispatches are paid once, not per tree. Nothing is read back:
//! [`WideCollapse::record`] dispatches [`COLLAPSE_MAX_LEVELS`] levels, each sized on the device
//! by the one before it.
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

/// The batch's words of the state buffer, then [`TREE_WORDS`] per tree (`STATE_*` and `TREE_*`
/// in `shaders/bvh/collapse_common.wgsl`).
pub const STATE_UNFINISHED: usize = 4;
pub const STATE_WORDS: usize = 8;
pub const TREE_NODES: usize = 0;
pub const TREE_PRIMS: usize = 1;
pub const TREE_DEPTH: usize = 2;
pub const TREE_OVERFLOW: usize = 3;
pub const TREE_WORDS: usize = 4;

/// One tree of a batch. Twin of `CollapseMesh` in `shaders/bvh/collapse_common.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub struct CollapseMesh {
    pub binary_base: u32,
    pub binary_count: u32,
    pub order_base: u32,
    pub prim_count: u32,
    pub node_base: u32,
    pub prim_base: u32,
    pub capacity: u32,
    pub leaf_max: u32,
}

/// Twin of `StartParams` in `shaders/bvh/collapse_start.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
struct StartParams {
    trees: u32,
    _pad: [u32; 3],
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

/// One tree's collapse after it ran, read back ([`CollapseBatch::read`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CollapseState {
    pub nodes: u32,
    pub prims: u32,
    pub depth: u32,
    /// A node found no room in the output (a bug: [`collapse_capacity`] bounds the nodes).
    pub overflow: bool,
    /// The batch held a tree deeper than [`COLLAPSE_MAX_LEVELS`]: nodes were left unwritten.
    pub unfinished: bool,
}

impl CollapseState {
    /// An error for a collapse that did not write a whole tree.
    pub fn check(&self, tree: &str) -> Result<(), GpuError> {
        if self.overflow || self.unfinished {
            return Err(GpuError::Device(format!(
                "{tree}: the GPU collapse into the wide layout {}",
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

/// Where one tree's collapse writes: nodes from `node_base` (80 bytes each) and references from
/// `prim_base` of its batch's output buffers, with indices local to the tree.
#[derive(Clone, Copy, Debug)]
pub struct CollapseTarget {
    pub node_base: u32,
    pub prim_base: u32,
    /// The room for nodes from `node_base` ([`collapse_capacity`] of the tree's primitives).
    pub capacity: u32,
}

/// One tree of a batch: its binary nodes (`binary_count` records, root 0, child indices local
/// to them) and its references (`prim_count`), each a buffer of its own, collapsed with leaf
/// children of up to `leaf_max` primitives into `target`.
pub struct CollapseJob<'a> {
    pub binary: &'a GpuBuffer,
    pub binary_count: u32,
    pub prim_order: &'a GpuBuffer,
    pub prim_count: u32,
    pub leaf_max: u32,
    pub target: CollapseTarget,
}

/// A recorded batch: its state words, read once it ran.
pub struct CollapseBatch {
    state: GpuBuffer,
    trees: usize,
}

impl CollapseBatch {
    /// Each tree's state, in the order of the jobs (waits for the device).
    pub fn read(&self, ctx: &GpuContext) -> Result<Vec<CollapseState>, GpuError> {
        let words = read_buffer::<u32>(ctx, &self.state, STATE_WORDS + TREE_WORDS * self.trees)?;
        let unfinished = words[STATE_UNFINISHED] != 0;
        Ok((0..self.trees)
            .map(|t| {
                let w = &words[STATE_WORDS + TREE_WORDS * t..][..TREE_WORDS];
                CollapseState {
                    nodes: w[TREE_NODES],
                    prims: w[TREE_PRIMS],
                    depth: w[TREE_DEPTH],
                    overflow: w[TREE_OVERFLOW] != 0,
                    unfinished,
                }
            })
            .collect())
    }
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

    /// Records the collapse of every tree of `jobs` in one chain of levels, into `nodes` (wide
    /// nodes, 80 bytes each) and `prims` (references) at each job's target. The trees' nodes and
    /// references are first copied side by side into the batch's own arrays.
    pub fn record(
        &self,
        ctx: &GpuContext,
        encoder: &mut Encoder,
        jobs: &[CollapseJob<'_>],
        nodes: &GpuBuffer,
        prims: &GpuBuffer,
    ) -> Result<CollapseBatch, GpuError> {
        let record_bytes = std::mem::size_of::<BinaryNodeRecord>() as u64;
        let mut trees = Vec::with_capacity(jobs.len());
        let (mut binary_total, mut order_total, mut queue_total) = (0u64, 0u64, 0u64);
        for job in jobs {
            let t = job.target;
            let capacity = t
                .capacity
                .min(collapse_capacity(job.prim_count, job.leaf_max));
            let need_nodes = (t.node_base as u64 + capacity as u64) * 80;
            let need_prims = (t.prim_base as u64 + job.prim_count as u64) * 4;
            if need_nodes > nodes.size()
                || need_prims > prims.size()
                || job.binary_count as u64 * record_bytes > job.binary.size()
                || job.prim_count as u64 * 4 > job.prim_order.size()
            {
                return Err(GpuError::Device(format!(
                    "wide collapse: a tree needs {need_nodes} bytes of nodes and {need_prims} of \
                     references in outputs of {} and {}, or its inputs are short",
                    nodes.size(),
                    prims.size()
                )));
            }
            let to_u32 = |v: u64| {
                u32::try_from(v)
                    .map_err(|_| GpuError::Device("wide collapse: a batch too large".into()))
            };
            trees.push(CollapseMesh {
                binary_base: to_u32(binary_total)?,
                binary_count: job.binary_count,
                order_base: to_u32(order_total)?,
                prim_count: job.prim_count,
                node_base: t.node_base,
                prim_base: t.prim_base,
                capacity,
                leaf_max: job.leaf_max.clamp(1, WIDE_LEAF_MAX as u32),
            });
            binary_total += job.binary_count as u64;
            order_total += job.prim_count as u64;
            queue_total += capacity as u64;
        }
        let state_words = (STATE_WORDS + TREE_WORDS * jobs.len()) as u64;
        let state = storage_buffer_sized(ctx, "collapse state", state_words * 4)?;
        let batch = CollapseBatch {
            state: state.clone(),
            trees: jobs.len(),
        };
        encoder.clear_buffer(&state, 0, None);
        if jobs.is_empty() {
            return Ok(batch);
        }
        let binary = storage_buffer_sized(
            ctx,
            "collapse binary nodes",
            binary_total.max(1) * record_bytes,
        )?;
        let order = storage_buffer_sized(ctx, "collapse references", order_total.max(1) * 4)?;
        for (job, tree) in jobs.iter().zip(&trees) {
            if job.binary_count > 0 {
                encoder.copy_buffer_to_buffer(
                    job.binary,
                    0,
                    &binary,
                    tree.binary_base as u64 * record_bytes,
                    job.binary_count as u64 * record_bytes,
                );
            }
            if job.prim_count > 0 {
                encoder.copy_buffer_to_buffer(
                    job.prim_order,
                    0,
                    &order,
                    tree.order_base as u64 * 4,
                    job.prim_count as u64 * 4,
                );
            }
        }
        let tree_buffer = storage_buffer(ctx, "collapse trees", &trees)?;
        let queue = storage_buffer_sized(ctx, "collapse queue", queue_total.max(1) * 16)?;
        let usage = wgpu::BufferUsages::INDIRECT.union(STORAGE_USAGE);
        let args = pooled_buffer(
            ctx,
            "collapse level args",
            COLLAPSE_MAX_LEVELS as u64 * 12,
            usage,
            true,
        );
        let start_params = uniform_buffer(
            ctx,
            "collapse start params",
            &StartParams {
                trees: jobs.len() as u32,
                _pad: [0; 3],
            },
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
                ("start_params", &start_params),
                ("trees", &tree_buffer),
                ("binary", &binary),
                ("state", &state),
                ("queue", &queue),
            ],
        )?;
        let grid = self.start.grid_for(ctx, jobs.len() as u64);
        self.start.dispatch(encoder, &start, grid);
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
                ("trees", &tree_buffer),
                ("binary", &binary),
                ("prim_order", &order),
                ("state", &state),
                ("queue", &queue),
                ("wide_nodes", nodes),
                ("wide_prims", prims),
            ],
        )?;
        for l in 0..COLLAPSE_MAX_LEVELS {
            self.level.dispatch(encoder, &level, (1, 1, 1));
            self.node
                .dispatch_grid(encoder, &node, Grid::Indirect(&args, l as u64 * 12));
        }
        self.level.dispatch(encoder, &finish, (1, 1, 1));
        Ok(batch)
    }

    /// Uploads `bvhs`, collapses them on the GPU in one batch and reads the trees back: each
    /// one's nodes, its references (those its leaf children hold, in the order the GPU wrote
    /// them) and its depth.
    pub fn collapse_many(
        &self,
        ctx: &GpuContext,
        bvhs: &[&BinaryBvh],
        leaf_max: usize,
    ) -> Result<Vec<(WideTree, CollapseState)>, GpuError> {
        let mut inputs = Vec::new();
        let (mut node_base, mut prim_base) = (0u32, 0u32);
        let mut targets = Vec::new();
        for bvh in bvhs {
            let records = bvh.to_records();
            let count = records.len() as u32;
            // One record at least, so that the buffer binds.
            let padded = if records.is_empty() {
                vec![BinaryNodeRecord::default()]
            } else {
                records
            };
            let prim_count = u32::try_from(bvh.prim_order.len())
                .map_err(|_| GpuError::Device("wide collapse: too many references".into()))?;
            let order = if bvh.prim_order.is_empty() {
                vec![0]
            } else {
                bvh.prim_order.clone()
            };
            inputs.push((
                storage_buffer(ctx, "collapse binary", &padded)?,
                count,
                storage_buffer(ctx, "collapse order", &order)?,
                prim_count,
            ));
            let capacity = collapse_capacity(prim_count, leaf_max as u32);
            targets.push(CollapseTarget {
                node_base,
                prim_base,
                capacity,
            });
            node_base += capacity;
            prim_base += prim_count;
        }
        let nodes = storage_buffer_sized(ctx, "collapse nodes", node_base.max(1) as u64 * 80)?;
        let prims = storage_buffer_sized(ctx, "collapse prims", prim_base.max(1) as u64 * 4)?;
        let jobs: Vec<CollapseJob<'_>> = inputs
            .iter()
            .zip(&targets)
            .map(
                |((binary, binary_count, order, prim_count), target)| CollapseJob {
                    binary,
                    binary_count: *binary_count,
                    prim_order: order,
                    prim_count: *prim_count,
                    leaf_max: leaf_max as u32,
                    target: *target,
                },
            )
            .collect();
        let mut encoder = Encoder::new(ctx);
        let batch = self.record(ctx, &mut encoder, &jobs, &nodes, &prims)?;
        ctx.submit([encoder.finish()]);
        let states = batch.read(ctx)?;
        let all_nodes = read_buffer::<WideNode>(ctx, &nodes, node_base as usize)?;
        let all_prims = read_buffer::<u32>(ctx, &prims, prim_base as usize)?;
        states
            .into_iter()
            .zip(&targets)
            .map(|(state, target)| {
                state.check("wide collapse")?;
                let tree = WideTree {
                    nodes: all_nodes[target.node_base as usize..][..state.nodes as usize].to_vec(),
                    prim_order: all_prims[target.prim_base as usize..][..state.prims as usize]
                        .to_vec(),
                    depth: state.depth as usize,
                };
                Ok((tree, state))
            })
            .collect()
    }

    /// [`WideCollapse::collapse_many`] of one tree.
    pub fn collapse_vec(
        &self,
        ctx: &GpuContext,
        bvh: &BinaryBvh,
        leaf_max: usize,
    ) -> Result<(WideTree, CollapseState), GpuError> {
        let mut trees = self.collapse_many(ctx, &[bvh], leaf_max)?;
        trees
            .pop()
            .ok_or_else(|| GpuError::Device("wide collapse: no tree came back".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::shader;

    fn fields(names: &[(&str, usize)]) -> Vec<(String, u32)> {
        names
            .iter()
            .map(|(n, o)| (n.to_string(), *o as u32))
            .collect()
    }

    /// The host structs have the sizes and field offsets naga reflects for their WGSL twins,
    /// and the state words their constants.
    #[test]
    fn collapse_structs_and_state_words_match_their_wgsl_twins() {
        let (span, offsets) = shader::struct_layout("bvh/collapse_node.wgsl", "CollapseMesh");
        assert_eq!(span as usize, std::mem::size_of::<CollapseMesh>());
        assert_eq!(
            offsets,
            fields(&[
                (
                    "binary_base",
                    std::mem::offset_of!(CollapseMesh, binary_base)
                ),
                (
                    "binary_count",
                    std::mem::offset_of!(CollapseMesh, binary_count)
                ),
                ("order_base", std::mem::offset_of!(CollapseMesh, order_base)),
                ("prim_count", std::mem::offset_of!(CollapseMesh, prim_count)),
                ("node_base", std::mem::offset_of!(CollapseMesh, node_base)),
                ("prim_base", std::mem::offset_of!(CollapseMesh, prim_base)),
                ("capacity", std::mem::offset_of!(CollapseMesh, capacity)),
                ("leaf_max", std::mem::offset_of!(CollapseMesh, leaf_max)),
            ])
        );
        let (span, _) = shader::struct_layout("bvh/collapse_start.wgsl", "StartParams");
        assert_eq!(span as usize, std::mem::size_of::<StartParams>());
        let (span, offsets) = shader::struct_layout("bvh/collapse_level.wgsl", "LevelParams");
        assert_eq!(span as usize, std::mem::size_of::<LevelParams>());
        assert_eq!(
            offsets[..3],
            fields(&[
                (
                    "workgroup_size",
                    std::mem::offset_of!(LevelParams, workgroup_size)
                ),
                ("max_groups", std::mem::offset_of!(LevelParams, max_groups)),
                ("finish", std::mem::offset_of!(LevelParams, finish)),
            ])[..]
        );
        let source = shader::assemble("bvh/collapse_node.wgsl", &[]).expect("assembles");
        for constant in [
            format!("const STATE_UNFINISHED: u32 = {STATE_UNFINISHED}u;"),
            format!("const STATE_WORDS: u32 = {STATE_WORDS}u;"),
            format!("const TREE_NODES: u32 = {TREE_NODES}u;"),
            format!("const TREE_PRIMS: u32 = {TREE_PRIMS}u;"),
            format!("const TREE_DEPTH: u32 = {TREE_DEPTH}u;"),
            format!("const TREE_OVERFLOW: u32 = {TREE_OVERFLOW}u;"),
            format!("const TREE_WORDS: u32 = {TREE_WORDS}u;"),
        ] {
            assert!(source.contains(&constant), "{constant}");
        }
    }
}
