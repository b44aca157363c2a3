//! The VD bottom level inside the Whitted pipeline (paper 000 section 1.5): the record queue the
//! trace kernels append to, the batches that run [`VdBatch`] over it, and the kernels that put
//! the batches' hits back into the pipeline.
//!
//! Every trace of the pipeline (camera rays, each bounce's reflected and refracted rays, each
//! chunk of shadow rays) is one batch:
//! 1. the trace kernel (`whitted/trace.wgsl` or `whitted/shadow.wgsl` with `VD_PATCHES`) finds
//!    the closest triangle or flat quad (any for shadow rays) and appends a record for every VD
//!    patch whose bounds the ray enters before that: the patch, and the ray carried into the
//!    instance's object space with its instance and hit slot (`shared/traverse.wgsl`);
//! 2. the host reads the record count; if the queue was too small it grows it and traces again;
//! 3. [`VdBatch`] sorts the records by patch into jobs, builds each patch's tree on the fly in
//!    persistent workgroups and finds each slot's closest patch hit with 64-bit atomics (or the
//!    two-pass 32-bit fallback);
//! 4. `whitted/vd_merge.wgsl` merges those hits into the trace kernel's (closest hit, the
//!    traversal's tie rule), or `whitted/vd_shadow.wgsl` zeroes the shadow rays they block.
//!
//! Levels (see `accel::vd_frame`): the frame's camera batch chooses each reached patch's level as
//! the largest over its rays and stores it in the frame's level buffer, which starts as the
//! camera bound of `Prepared::vd`; every later batch of the frame builds at the stored level.

use std::time::Instant;

use super::context::{GpuContext, GpuError};
use super::encoder::Encoder;
use super::kernel::{read_buffer, storage_buffer, storage_buffer_sized, Checks, Kernel};
use super::pool::GpuBuffer;
use super::prims::Primitives;
use super::vd_batch::{
    VdBatch, VdBatchOptions, VdBatchOutput, VdBatchPatch, VdBatchRay, VdBatchScene, VdKept,
    VdLevels, VdTexelLayout,
};
use crate::accel::Prepared;

/// Records the queue starts with, at least.
const MIN_RECORD_CAPACITY: u64 = 1 << 14;

/// The VD kernels of one backend, for one deepest level.
pub struct VdKernels {
    pub batch: VdBatch,
    pub merge: Kernel,
    pub shadow: Kernel,
}

impl VdKernels {
    pub fn new(ctx: &GpuContext, max_level: u32) -> Result<VdKernels, GpuError> {
        Ok(VdKernels {
            batch: VdBatch::new(ctx, VdBatchOptions::for_context(ctx, max_level))?,
            merge: Kernel::new(ctx, "whitted/vd_merge.wgsl", &[], Checks::Checked)?,
            shadow: Kernel::new(ctx, "whitted/vd_shadow.wgsl", &[], Checks::Checked)?,
        })
    }
}

/// What the frame's batches did.
#[derive(Clone, Debug, Default)]
pub struct VdStats {
    pub batches: u64,
    pub records: u64,
    pub jobs: u64,
    /// Traces run again because the record queue was too small.
    pub retraces: u64,
    /// Wall-clock milliseconds of the sorts (radix sort and job finding), and of the persistent
    /// build-and-trace kernel with the hit resolution and the merge, each submitted alone.
    pub sort_ms: f64,
    pub build_trace_ms: f64,
    /// Largest record queue of the frame, and the bytes of the frame's VD buffers: the record
    /// queue at that size, the workgroups' scratch slices, the patches and maps, the levels.
    pub record_capacity: u64,
    pub scratch_bytes: u64,
    pub scene_bytes: u64,
    /// Bytes of the patches, maps, texels and seams this frame sent (what changed since the
    /// last frame).
    pub scene_uploaded_bytes: u64,
}

impl VdStats {
    /// Bytes of the record queue at its largest: a ray copy, a patch and an index per record.
    pub fn record_queue_bytes(&self) -> u64 {
        self.record_capacity * (std::mem::size_of::<VdBatchRay>() as u64 + 8)
    }
}

/// The VD state of one frame on the GPU.
pub struct VdFrameGpu<'k> {
    kernels: &'k VdKernels,
    scene: VdBatchScene,
    /// The frame's level of every patch.
    levels: GpuBuffer,
    /// The frame's level of every patch edge (the finest of the patches that share it).
    edge_levels: GpuBuffer,
    /// Whether the camera batch has chosen the levels.
    pub chosen: bool,
    capacity: u32,
    rays: GpuBuffer,
    record_patches: GpuBuffer,
    record_rays: GpuBuffer,
    count: GpuBuffer,
    pub stats: VdStats,
}

impl<'k> VdFrameGpu<'k> {
    /// Uploads the patches, maps and the camera-bound levels of `prepared` (the patches, maps,
    /// texels and seams only where they differ from what `kept` holds of the last frame), with a
    /// record queue for about `rays` rays.
    pub fn new(
        ctx: &GpuContext,
        kernels: &'k VdKernels,
        kept: &mut VdKept,
        prepared: &Prepared,
        rays: u64,
    ) -> Result<VdFrameGpu<'k>, GpuError> {
        let maps: Vec<&crate::scene::VdMap> = prepared.vd_maps.iter().collect();
        let layout = VdTexelLayout::of(&maps)?;
        let patches = VdBatchPatch::all_of(prepared, &layout)?;
        let scene = VdBatchScene::upload_kept(
            ctx,
            kept,
            &layout,
            &patches,
            &maps,
            Some((&prepared.vd_seams, prepared.vd_edge_count)),
        )?;
        let levels = storage_buffer(ctx, "vd levels", &prepared.vd.levels)?;
        let mut edge_levels = prepared.vd_edge_levels(&prepared.vd.levels);
        if edge_levels.is_empty() {
            edge_levels.push(0);
        }
        let edge_levels = storage_buffer(ctx, "vd edge levels", &edge_levels)?;
        let capacity = Self::fit_capacity(ctx, (2 * rays).max(MIN_RECORD_CAPACITY), false)?;
        let (rays, record_patches, record_rays) = Self::queue(ctx, capacity)?;
        let count = storage_buffer_sized(ctx, "vd record count", 16)?;
        let texels = layout.total * 16;
        let stats = VdStats {
            record_capacity: capacity as u64,
            scratch_bytes: kernels.batch.workgroups as u64 * kernels.batch.slice_words as u64 * 4,
            scene_bytes: (std::mem::size_of_val(patches.as_slice())
                + texels
                + 4 * prepared.vd.levels.len()) as u64,
            scene_uploaded_bytes: kept.uploaded,
            ..Default::default()
        };
        Ok(VdFrameGpu {
            kernels,
            scene,
            levels,
            edge_levels,
            chosen: false,
            capacity,
            rays,
            record_patches,
            record_rays,
            count,
            stats,
        })
    }

    /// A queue of `wanted` records, or as many as one storage binding holds; with `must_fit`
    /// an error when that is fewer than `wanted`.
    fn fit_capacity(ctx: &GpuContext, wanted: u64, must_fit: bool) -> Result<u32, GpuError> {
        let limit = (ctx.info.binding_limit() / std::mem::size_of::<VdBatchRay>() as u64)
            .min(u32::MAX as u64);
        if must_fit && wanted > limit {
            return Err(GpuError::Device(format!(
                "one trace makes {wanted} VD records, more than one storage binding holds \
                 ({limit}); render at a lower resolution or with fewer samples"
            )));
        }
        Ok(wanted.min(limit) as u32)
    }

    fn queue(
        ctx: &GpuContext,
        capacity: u32,
    ) -> Result<(GpuBuffer, GpuBuffer, GpuBuffer), GpuError> {
        let n = capacity as u64;
        Ok((
            storage_buffer_sized(
                ctx,
                "vd record rays (object space)",
                n * std::mem::size_of::<VdBatchRay>() as u64,
            )?,
            storage_buffer_sized(ctx, "vd record patches", n * 4)?,
            storage_buffer_sized(ctx, "vd record ray indices", n * 4)?,
        ))
    }

    /// The kernels the frame runs.
    pub fn kernels(&self) -> &'k VdKernels {
        self.kernels
    }

    /// Records the trace kernels may append (`FrameParams::vd_record_capacity`).
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// The record queue, as the trace kernels bind it.
    pub fn record_bindings(&self) -> [(&'static str, &GpuBuffer); 4] {
        [
            ("vd_rays", &self.rays),
            ("vd_record_patches", &self.record_patches),
            ("vd_record_rays", &self.record_rays),
            ("vd_record_count", &self.count),
        ]
    }

    /// Empties the queue before a trace.
    pub fn clear(&self, encoder: &mut Encoder) {
        encoder.clear_buffer(&self.count, 0, None);
    }

    /// After a trace was submitted: the records it made, or `None` when they did not fit, in
    /// which case the queue has been grown and the trace must run again (after [`Self::clear`]).
    pub fn take_count(&mut self, ctx: &GpuContext) -> Result<Option<u32>, GpuError> {
        let count = read_buffer::<u32>(ctx, &self.count, 1)?[0];
        if count <= self.capacity {
            return Ok(Some(count));
        }
        Self::fit_capacity(ctx, count as u64, true)?;
        self.capacity = Self::fit_capacity(ctx, count as u64 + count as u64 / 4, false)?;
        (self.rays, self.record_patches, self.record_rays) = Self::queue(ctx, self.capacity)?;
        self.stats.retraces += 1;
        self.stats.record_capacity = self.stats.record_capacity.max(self.capacity as u64);
        Ok(None)
    }

    /// Runs the bottom level over the `count` records of the last trace, whose rays compete for
    /// `slots` hit slots, then `finish` records the kernel that uses the hits (merge or shadow)
    /// into the same submission.
    pub fn run_batch(
        &mut self,
        ctx: &GpuContext,
        prims: &Primitives,
        count: u32,
        slots: u32,
        finish: impl FnOnce(&mut Encoder, &VdBatchOutput, &Self) -> Result<(), GpuError>,
    ) -> Result<(), GpuError> {
        let choose = !self.chosen;
        if count == 0 {
            return Ok(());
        }
        let batch = &self.kernels.batch;
        let clock = Instant::now();
        let mut encoder = Encoder::new(ctx);
        let jobs = batch.record_jobs(
            ctx,
            prims,
            &mut encoder,
            &self.scene,
            &self.record_patches,
            &self.record_rays,
            count,
        )?;
        ctx.submit([encoder.finish()]);
        ctx.wait_idle()?;
        self.stats.sort_ms += clock.elapsed().as_secs_f64() * 1e3;

        let clock = Instant::now();
        let mut encoder = Encoder::new(ctx);
        let levels = VdLevels {
            buffer: &self.levels,
            edges: &self.edge_levels,
            choose,
        };
        let out = batch.record_trace(
            ctx,
            &mut encoder,
            &self.scene,
            &self.rays,
            &self.record_rays,
            &jobs,
            slots,
            true,
            &levels,
        )?;
        finish(&mut encoder, &out, self)?;
        ctx.submit([encoder.finish()]);
        ctx.wait_idle()?;
        self.stats.build_trace_ms += clock.elapsed().as_secs_f64() * 1e3;
        self.stats.batches += 1;
        self.stats.records += count as u64;
        self.stats.jobs += jobs.runs.count.read(ctx)? as u64;
        Ok(())
    }

    /// The frame's level of every patch (for tests and statistics).
    pub fn levels(&self, ctx: &GpuContext) -> Result<Vec<u32>, GpuError> {
        read_buffer(ctx, &self.levels, self.scene.patch_count as usize)
    }

    /// The sorted record → ray-copy indices of the last batch (the merge kernel binds them).
    pub fn record_rays(&self) -> &GpuBuffer {
        &self.record_rays
    }

    /// The ray copies of the last trace (the merge kernel binds them).
    pub fn rays(&self) -> &GpuBuffer {
        &self.rays
    }
}

/// Texels of the distinct images of `maps` (maps may share one image).
pub fn unique_texels(maps: &[&crate::scene::VdMap]) -> usize {
    super::vd_batch::VdTexelLayout::of(maps).map_or(0, |layout| layout.total)
}
