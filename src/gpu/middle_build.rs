//! The middle levels the GPU builds itself (`--accel wide:gpu_lbvh`, `wide:gpu_sah`,
//! `wide:gpu_hybrid`, `wide:gpu_ploc`, and the two-level grids of `--accel grid`, which
//! [`crate::gpu::grid`] builds into the resident `grid_cells` at the mesh's offset): for every mesh of [`Prepared::device_builds`], the
//! LBVH, binned-SAH, hybrid or PLOC tree over its primitives' boxes ([`crate::gpu::lbvh`],
//! [`crate::gpu::sah_build`], [`crate::gpu::ploc`]), its
//! collapse into the wide layout ([`crate::gpu::wide_collapse`]) straight into the resident
//! scene's `mesh_nodes` and `prim_refs` at the mesh's offsets, and the leaf triangles of its
//! references (`bvh/leaf_triangles.wgsl`). The twins are what [`Prepared::build`] runs when
//! the backend does not build: `accel::lbvh::build_lbvh`, `accel::sah_build::build_sah` or
//! `accel::ploc::build_ploc`, and
//! `accel::wide::collapse_to_cwbvh`.
//! A frame builds the trees the arrays do not hold yet (`ResidentScene::stale_device_builds`:
//! meshes that changed, or all of them when the arrays were written again; a progressive
//! still's later passes build none), each its own LBVH and all of them in one collapse; it then reads back the collapse's few
//! state words once, to check the tree's depth against
//! the traversal's stack and to count its nodes.

use std::sync::OnceLock;
use std::time::Instant;

use bytemuck::{Pod, Zeroable};

use crate::accel::lbvh::lbvh_frame;
use crate::accel::sah_build::SahVariant;
use crate::accel::wide::WIDE_LEAF_MAX;
use crate::accel::wide::WIDE_STACK_SIZE;
use crate::accel::BvhBuilder;
use crate::accel::{DeviceBuild, Prepared};
use crate::gpu::encoder::Encoder;
use crate::gpu::grid::GridBuilder;
use crate::gpu::kernel::{get_or_make, storage_buffer, uniform_buffer, Checks};
use crate::gpu::lbvh::{box_words, LbvhBuilder};
use crate::gpu::ploc::PlocBuilder;
use crate::gpu::prims::Primitives;
use crate::gpu::sah_build::SahBuilder;
use crate::gpu::upload::SceneBuffers;
use crate::gpu::wide_collapse::{CollapseJob, CollapseTarget, WideCollapse};
use crate::gpu::{GpuContext, GpuError, Kernel};

/// Twin of `LeafTriangleParams` in `shaders/bvh/leaf_triangles.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
struct LeafTriangleParams {
    slot_begin: u32,
    count: u32,
    triangle_offset: u32,
    triangle_count: u32,
}

/// The kernels of the device's middle-level builds; each builder's are compiled when a build
/// first needs them.
pub struct MiddleBuildKernels {
    lbvh: OnceLock<LbvhBuilder>,
    ploc: OnceLock<PlocBuilder>,
    sah: OnceLock<SahBuilder>,
    grid: OnceLock<GridBuilder>,
    collapse: WideCollapse,
    leaf_triangles: Kernel,
}

/// What one frame's builds did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MiddleBuildReport {
    /// Meshes built.
    pub meshes: u32,
    /// Primitives of those meshes.
    pub prims: u64,
    /// Wide nodes the builds made.
    pub nodes: u64,
    /// The deepest tree built, in nodes.
    pub depth: u32,
    /// Host milliseconds from recording to the checked states (the device's build and the one
    /// wait for it).
    pub ms: f64,
}

impl MiddleBuildKernels {
    pub fn new(ctx: &GpuContext) -> Result<MiddleBuildKernels, GpuError> {
        Ok(MiddleBuildKernels {
            lbvh: OnceLock::new(),
            ploc: OnceLock::new(),
            sah: OnceLock::new(),
            grid: OnceLock::new(),
            collapse: WideCollapse::new(ctx)?,
            leaf_triangles: Kernel::new(ctx, "bvh/leaf_triangles.wgsl", &[], Checks::Checked)?,
        })
    }

    /// Builds the trees of `builds` (device builds of `prepared`) into `buffers`.
    pub fn build(
        &self,
        ctx: &GpuContext,
        prims: &Primitives,
        prepared: &Prepared,
        builds: &[&DeviceBuild],
        buffers: &SceneBuffers,
    ) -> Result<MiddleBuildReport, GpuError> {
        let start = Instant::now();
        let mut report = MiddleBuildReport::default();
        // Each two-level grid (`--accel grid`) built straight into the grid words, in the room
        // the host counted for it.
        for build in builds.iter().filter(|b| b.builder == BvhBuilder::Grid) {
            let mesh = prepared.meshes[build.mesh as usize];
            get_or_make(&self.grid, || GridBuilder::new(ctx))?.build_into(
                ctx,
                prims,
                &build.boxes,
                &buffers.grid_cells,
                mesh.node_offset,
                mesh.node_count,
            )?;
            report.meshes += 1;
            report.prims += build.boxes.len() as u64;
        }
        let mut encoder = Encoder::new(ctx);
        // Each mesh's LBVH, then one collapse for them all (its dispatches paid once).
        let mut built = Vec::new();
        for build in builds.iter().filter(|b| b.builder != BvhBuilder::Grid) {
            let mesh = prepared.meshes[build.mesh as usize];
            let n = build.boxes.len() as u32;
            let boxes = storage_buffer(ctx, "device build boxes", &box_words(&build.boxes))?;
            let frame = lbvh_frame(&build.boxes);
            let tree = match build.builder {
                BvhBuilder::GpuPloc => get_or_make(&self.ploc, || PlocBuilder::new(ctx))?
                    .record_build(ctx, &mut encoder, prims, &boxes, n, &frame)?,
                BvhBuilder::GpuSah | BvhBuilder::GpuHybrid => {
                    let variant = if build.builder == BvhBuilder::GpuSah {
                        SahVariant::Sah
                    } else {
                        SahVariant::Hybrid
                    };
                    get_or_make(&self.sah, || SahBuilder::new(ctx))?.record_build(
                        ctx,
                        &mut encoder,
                        prims,
                        &boxes,
                        n,
                        &frame,
                        variant,
                    )?
                }
                _ => get_or_make(&self.lbvh, || LbvhBuilder::new(ctx))?.record_build(
                    ctx,
                    &mut encoder,
                    prims,
                    &boxes,
                    n,
                    &frame,
                )?,
            };
            let params = uniform_buffer(
                ctx,
                "leaf triangle params",
                &LeafTriangleParams {
                    slot_begin: mesh.prim_ref_offset,
                    count: n,
                    triangle_offset: mesh.triangle_offset,
                    triangle_count: mesh.triangle_count,
                },
            );
            built.push((build.mesh, mesh, n, tree, params));
            report.meshes += 1;
            report.prims += n as u64;
        }
        if built.is_empty() {
            report.ms = start.elapsed().as_secs_f64() * 1e3;
            return Ok(report);
        }
        let jobs: Vec<CollapseJob<'_>> = built
            .iter()
            .map(|(_, mesh, n, tree, _)| CollapseJob {
                binary: &tree.nodes,
                binary_count: (2 * n).saturating_sub(1),
                prim_order: &tree.prim_order,
                prim_count: *n,
                leaf_max: WIDE_LEAF_MAX as u32,
                target: CollapseTarget {
                    node_base: mesh.node_offset,
                    prim_base: mesh.prim_ref_offset,
                    capacity: mesh.node_count,
                },
            })
            .collect();
        let batch = self.collapse.record(
            ctx,
            &mut encoder,
            &jobs,
            &buffers.mesh_nodes,
            &buffers.prim_refs,
        )?;
        for (_, _, n, _, params) in &built {
            let bind = self.leaf_triangles.bind(
                ctx,
                &[
                    ("params", params),
                    ("prim_refs", &buffers.prim_refs),
                    ("triangles", &buffers.triangles),
                    ("positions", &buffers.positions),
                    ("leaf_triangles", &buffers.leaf_triangles),
                ],
            )?;
            let grid = self.leaf_triangles.grid_for(ctx, *n as u64);
            self.leaf_triangles.dispatch(&mut encoder, &bind, grid);
        }
        ctx.submit([encoder.finish()]);
        for ((mesh, ..), state) in built.iter().zip(batch.read(ctx)?) {
            let name = format!("mesh {mesh}");
            state.check(&name)?;
            let needed = (prepared.top_depth + state.depth + 2) as usize;
            if needed > WIDE_STACK_SIZE {
                return Err(GpuError::Device(format!(
                    "{name}: its GPU-built tree is {} levels deep, which with the top level's \
                     {} needs {needed} entries of the wide traversal's stack of \
                     {WIDE_STACK_SIZE}; build it with --accel wide:cpu_sah",
                    state.depth, prepared.top_depth
                )));
            }
            report.nodes += state.nodes as u64;
            report.depth = report.depth.max(state.depth);
        }
        report.ms = start.elapsed().as_secs_f64() * 1e3;
        Ok(report)
    }
}
