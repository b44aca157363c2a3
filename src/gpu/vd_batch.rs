//! The batched VD bottom level on the GPU (paper 000 sections 1.4.2 and 1.5): records of (ray,
//! patch) sorted by patch into a job queue, persistent workgroups that build each patch's tree
//! on the fly and trace the job's rays through it, and the closest hit across workgroups with
//! atomics. GPU twin of [`crate::accel::vd_bottom`]; a standalone stage, not yet wired into the
//! Whitted pipeline.
//!
//! # Inputs
//!
//! * **Scene** ([`VdBatchScene`], uploaded once): the patches ([`VdBatchPatch`]: corners, the
//!   UVs its map is read at, map, the window of texels it reads, conservative bounds, in the
//!   object space of the patch's mesh), the maps' conventions ([`VdBatchMap`]) and one buffer
//!   of every distinct image's texels (`vec4` per texel, [`VdTexelLayout`]): an atlas, the
//!   tiles of a UDIM map and a per-face map's squares all live in it, addressed by the
//!   patches' windows, so no tile needs a binding of its own.
//! * **Rays** ([`VdBatchRay`]): already in the object space of the patches they are recorded
//!   against, with the spread of their cone (level of detail) and a **hit slot**. A world ray
//!   that reaches patches of several instances is given once per instance (transformed into
//!   that instance's object space without normalising the direction, so `t` is the world `t`),
//!   and all its copies share one hit slot: the closest hit is taken per slot.
//! * **Records**: two `u32` arrays of equal length, the patch and the ray (index into the rays)
//!   of each (ray, patch) pair whose bounds the ray reaches, in any order (the top and middle
//!   traversal will append them with an atomic counter).
//!
//! # Steps ([`VdBatch::record_jobs`], [`VdBatch::record_trace`])
//!
//! 1. **Job queue.** `Primitives::radix_sort_u32` sorts the records by patch (stable, by as
//!    many bits as patch indices need), carrying the ray indices, and `find_sorted_bounds`
//!    turns the runs of equal patches into jobs `(patch, first record, end record)` with a
//!    GPU-resident count.
//! 2. **Persistent workgroups** (`shaders/vd/build_trace.wgsl`, 64 invocations): a fixed number
//!    of workgroups ([`VdBatchOptions::workgroups`]; the paper launches what fills the GPU, 528
//!    on its 44 CUs) each loop: take the next job with an `atomicAdd` on a job counter; compute
//!    the level as the workgroup `atomicMax` of its rays' [`lod_level`]s (distance = the ray's
//!    entry into the patch's conservative bounds, footprint = distance × spread; rays missing
//!    the bounds add nothing); build the tree in the workgroup's **slice** of one scratch buffer
//!    (points, then leaves, then each inner level after a barrier); trace the job's records.
//!    A slice is `3·(2^M+1)²` words of grid points (f32 x y z) followed by `5·first(M+1)` words
//!    of 20-byte [`VdNode`]s, for the largest level `M` ([`VdBatchOptions::max_level`]); the
//!    shared [`LinkTable`] for `M` is uploaded once.
//! 3. **Closest hit across workgroups.** Each record's own closest hit is written to its slot
//!    of `record_hits` ([`VdRecordHit`]: t, patch, cell, (s, t), normal; one writer). The hit
//!    slots hold two words per slot, `[record, f32 bits of t]` (the `u64` `t << 32 | record`
//!    read little-endian): with `INT64_ATOMICS` one `atomicMin` on that `u64`; without, an
//!    `atomicMin` on the t word, then `shaders/vd/resolve_hits.wgsl` (one invocation per
//!    record) offers the record index with `atomicMin` where the record's t equals the slot's.
//!    Both give the smallest t and, among equal t, the smallest record (records are sorted by
//!    patch, so the lowest patch): deterministic, and the same for both paths. t ≥ 0, so its
//!    bits order like the float.
//!
//! [`lod_level`]: crate::accel::vd_bottom::lod_level
//! [`VdNode`]: crate::accel::vd_bottom::VdNode

use std::time::Instant;

use bytemuck::{Pod, Zeroable};
use glam::{Vec2, Vec3};

use super::context::{GpuContext, GpuError};
use super::encoder::Encoder;
use super::kernel::{
    read_buffer, storage_buffer, storage_buffer_sized, uniform_buffer, Checks, Kernel,
};
use super::pool::GpuBuffer;
use super::prims::sorted_bounds::SortedRuns;
use super::prims::Primitives;
use crate::accel::vd_bottom::{first_node_of_level, node_count, LinkTable, MAX_LEVEL};
use crate::accel::vd_seams::VdSeams;
use crate::accel::Aabb;
use std::sync::Arc;

use crate::scene::{VdImage, VdMap, VdSpace};

/// Invocations per workgroup of `vd/build_trace.wgsl` (the paper's 64-wide SIMD).
pub const VD_BATCH_WORKGROUP_SIZE: u32 = 64;
/// Workgroups launched when [`VdBatchOptions::workgroups`] is 0, before the memory cap.
pub const DEFAULT_WORKGROUPS: u32 = 256;
/// "No record / no cell".
pub const VD_NONE: u32 = u32::MAX;

/// One VD patch. WGSL twin: `VdBatchPatch` in `shaders/shared/vd_types.wgsl` (128 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct VdBatchPatch {
    pub v0: [f32; 3],
    pub map: u32,
    pub v1: [f32; 3],
    /// The window of texels the patch reads ([`VdBatchTile`]).
    pub tile_offset: u32,
    pub v2: [f32; 3],
    pub tile_stride: u32,
    pub v3: [f32; 3],
    pub tile_width: u32,
    pub uv0: [f32; 2],
    pub uv1: [f32; 2],
    pub uv2: [f32; 2],
    pub uv3: [f32; 2],
    pub bounds_min: [f32; 3],
    pub tile_height: u32,
    pub bounds_max: [f32; 3],
    pub _pad0: u32,
}

/// Where a patch's window of texels is in the texel buffer: texel `(x, y)` of the window is
/// `texels[offset + y * stride + x]`, for `x < width`, `y < height`; `width` 0 for a tile the
/// map lacks (no displacement).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VdBatchTile {
    pub offset: u32,
    pub stride: u32,
    pub width: u32,
    pub height: u32,
}

/// Where each distinct image of a list of maps starts in the one texel buffer (maps may share
/// an image, as one atlas scaled per material does), in the order the maps and their tiles
/// first name them.
pub struct VdTexelLayout<'a> {
    images: Vec<(&'a Arc<VdImage>, u32)>,
    /// Texels of all the images.
    pub total: usize,
}

impl<'a> VdTexelLayout<'a> {
    pub fn of(maps: &[&'a VdMap]) -> Result<VdTexelLayout<'a>, GpuError> {
        let mut images: Vec<(&Arc<VdImage>, u32)> = Vec::new();
        let mut total = 0usize;
        for image in maps.iter().flat_map(|m| &m.images) {
            if images.iter().any(|(i, _)| Arc::ptr_eq(i, image)) {
                continue;
            }
            let offset = u32::try_from(total)
                .map_err(|_| GpuError::Device(format!("{total} VD texels before an image")))?;
            images.push((image, offset));
            total += image.texels.len();
        }
        Ok(VdTexelLayout { images, total })
    }

    /// The buffer position of `window`, one of these maps' windows.
    pub fn tile(&self, window: &crate::scene::vdmap::VdWindow) -> Result<VdBatchTile, GpuError> {
        if window.is_empty() {
            return Ok(VdBatchTile::default());
        }
        let &(_, offset) = self
            .images
            .iter()
            .find(|(i, _)| std::ptr::eq(&***i, window.image))
            .ok_or_else(|| GpuError::Device("a VD window outside the uploaded maps".into()))?;
        let start = offset as u64 + window.y0 as u64 * window.image.width as u64 + window.x0 as u64;
        Ok(VdBatchTile {
            offset: u32::try_from(start)
                .map_err(|_| GpuError::Device(format!("VD texel {start} past u32")))?,
            stride: window.image.width,
            width: window.width,
            height: window.height,
        })
    }

    /// Whether the images are `kept`'s, in order.
    fn same_images(&self, kept: &[Arc<VdImage>]) -> bool {
        self.images.len() == kept.len()
            && self
                .images
                .iter()
                .zip(kept)
                .all(|((i, _), k)| Arc::ptr_eq(i, k))
    }

    /// The texels of every image, in order.
    fn texels(&self) -> Vec<[f32; 4]> {
        let mut texels = Vec::with_capacity(self.total.max(1));
        for (image, _) in &self.images {
            texels.extend(image.texels.iter().map(|t| t.extend(0.0).to_array()));
        }
        texels
    }
}

impl VdBatchPatch {
    /// The patches of `prepared` (its global patch order), with their conservative bounds and
    /// windows into `layout`, the texels of `prepared.vd_maps`.
    pub fn all_of(
        prepared: &crate::accel::Prepared,
        layout: &VdTexelLayout,
    ) -> Result<Vec<VdBatchPatch>, GpuError> {
        (0..prepared.vd_patches.len() as u32)
            .map(|p| {
                let (corners, uvs, surface) = prepared.vd_patch_geometry(p);
                let record = &prepared.vd_patches[p as usize];
                let tile = layout.tile(&surface.window)?;
                Ok(VdBatchPatch::new(
                    &corners,
                    &uvs,
                    record.map,
                    tile,
                    &record.bounds(),
                ))
            })
            .collect()
    }

    /// One past the last texel of the patch's window, from its start.
    fn tile_window_end(&self) -> usize {
        (self.tile_height as usize).saturating_sub(1) * self.tile_stride as usize
            + self.tile_width as usize
    }

    /// The patch `corners` (`v0 v1 v2 v3`), displaced by map `map` read at `uvs` in the window
    /// `tile`, whose conservative bounds are `bounds`.
    pub fn new(
        corners: &[Vec3; 4],
        uvs: &[Vec2; 4],
        map: u32,
        tile: VdBatchTile,
        bounds: &Aabb,
    ) -> VdBatchPatch {
        VdBatchPatch {
            v0: corners[0].to_array(),
            v1: corners[1].to_array(),
            v2: corners[2].to_array(),
            v3: corners[3].to_array(),
            map,
            tile_offset: tile.offset,
            tile_stride: tile.stride,
            tile_width: tile.width,
            tile_height: tile.height,
            uv0: uvs[0].to_array(),
            uv1: uvs[1].to_array(),
            uv2: uvs[2].to_array(),
            uv3: uvs[3].to_array(),
            bounds_min: bounds.min.to_array(),
            bounds_max: bounds.max.to_array(),
            _pad0: 0,
        }
    }
}

/// One VD map's conventions (its texels are addressed by the patches' windows). WGSL twin:
/// `VdBatchMap` (32 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct VdBatchMap {
    /// 0 = object space, 1 = tangent space.
    pub space: u32,
    pub channel_x: u32,
    pub channel_y: u32,
    pub channel_z: u32,
    pub scale: f32,
    pub midlevel: f32,
    pub padding: f32,
    pub _pad0: u32,
}

/// One object-space ray. WGSL twin: `VdBatchRay` (48 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct VdBatchRay {
    pub origin: [f32; 3],
    /// Hits count for `0 < t < t_max`.
    pub t_max: f32,
    pub dir: [f32; 3],
    /// Footprint growth per unit of `t`, for the level of detail: the cone's spread angle times
    /// `|dir|` (the footprint at the patch is `t_entry · spread`).
    pub spread: f32,
    /// The hit slot this ray competes for.
    pub hit: u32,
    /// The instance whose object space the ray is in (the pipeline's records; 0 otherwise).
    pub instance: u32,
    pub _pad1: u32,
    pub _pad2: u32,
}

/// The closest hit of one record. WGSL twin: `VdRecordHit` (32 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct VdRecordHit {
    pub normal: [f32; 3],
    pub t: f32,
    pub st: [f32; 2],
    /// Morton index of the leaf cell hit, [`VD_NONE`] for a miss.
    pub cell: u32,
    pub patch_index: u32,
}

/// The stage's uniform. WGSL twin: `VdBatchParams` (32 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct VdBatchParams {
    pub max_level: u32,
    /// Bit 0: trace (else build only, for timing). Bit 1: read the levels (else choose them).
    /// Bit 2: choose the levels only.
    pub mode: u32,
    pub slice_words: u32,
    pub node_words_offset: u32,
    pub record_count: u32,
    /// Where a slice's edge points start.
    pub edge_words_offset: u32,
    pub patch_count: u32,
    pub _pad2: u32,
}

/// How the stage is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VdBatchOptions {
    /// Largest subdivision level (at most [`MAX_LEVEL`]); scratch slices are sized for it.
    pub max_level: u32,
    /// Persistent workgroups to launch; 0 for [`DEFAULT_WORKGROUPS`]. Always capped so that the
    /// scratch buffer fits one storage binding.
    pub workgroups: u32,
    /// Use 64-bit `atomicMin` for the closest hit (needs
    /// `GpuFeatures::int64_atomic_min_max`); otherwise the two-pass 32-bit path.
    pub int64_atomics: bool,
}

impl VdBatchOptions {
    /// `max_level` with the adapter's best closest-hit path and the default workgroup count.
    pub fn for_context(ctx: &GpuContext, max_level: u32) -> VdBatchOptions {
        VdBatchOptions {
            max_level,
            workgroups: 0,
            int64_atomics: ctx.info.features.int64_atomic_min_max,
        }
    }
}

/// The patches, maps and texels on the GPU, with who defines each patch's boundary.
#[derive(Clone)]
pub struct VdBatchScene {
    pub patches: GpuBuffer,
    pub maps: GpuBuffer,
    pub texels: GpuBuffer,
    pub seams: GpuBuffer,
    pub patch_count: u32,
    /// Edge ids the seams use.
    pub edge_count: u32,
}

impl VdBatchScene {
    /// Uploads `patches` (whose `map` fields index `maps` and whose windows are
    /// [`VdTexelLayout::of`] these `maps`), the maps' texels and the patches' `seams` with their
    /// number of edge ids (`None`: every patch alone, its boundary its own).
    pub fn upload(
        ctx: &GpuContext,
        patches: &[VdBatchPatch],
        maps: &[&VdMap],
        seams: Option<(&[VdSeams], u32)>,
    ) -> Result<VdBatchScene, GpuError> {
        let layout = VdTexelLayout::of(maps)?;
        VdBatchScene::upload_kept(ctx, &mut VdKept::default(), &layout, patches, maps, seams)
    }

    /// [`VdBatchScene::upload`], keeping the buffers in `kept` and sending only the parts that
    /// differ from what `kept` holds from the last upload (the texels when the maps' images are
    /// other images, the patches when the meshes moved or deformed, the seams, the maps'
    /// conventions); `kept.uploaded` says how many bytes this upload sent.
    /// `layout` is [`VdTexelLayout::of`] these `maps`.
    pub fn upload_kept(
        ctx: &GpuContext,
        kept: &mut VdKept,
        layout: &VdTexelLayout,
        patches: &[VdBatchPatch],
        maps: &[&VdMap],
        seams: Option<(&[VdSeams], u32)>,
    ) -> Result<VdBatchScene, GpuError> {
        let mut records: Vec<VdBatchMap> = maps
            .iter()
            .map(|map| VdBatchMap {
                space: match map.space {
                    VdSpace::Object => 0,
                    VdSpace::Tangent => 1,
                },
                channel_x: map.channels[0] as u32,
                channel_y: map.channels[1] as u32,
                channel_z: map.channels[2] as u32,
                scale: map.scale,
                midlevel: map.midlevel,
                padding: map.padding,
                _pad0: 0,
            })
            .collect();
        if let Some(p) = patches.iter().find(|p| {
            p.tile_width > 0 && p.tile_offset as usize + p.tile_window_end() > layout.total
        }) {
            return Err(GpuError::Device(format!(
                "a VD patch reads texels up to {} of {}",
                p.tile_offset as usize + p.tile_window_end(),
                layout.total
            )));
        }
        if let Some(p) = patches.iter().find(|p| p.map as usize >= maps.len()) {
            return Err(GpuError::Device(format!(
                "VD patch names map {} of {}",
                p.map,
                maps.len()
            )));
        }
        // Empty arrays still bind one element (a binding holds at least one of its elements).
        let patch_data = if patches.is_empty() {
            &[VdBatchPatch::zeroed()][..]
        } else {
            patches
        };
        if records.is_empty() {
            records.push(VdBatchMap::zeroed());
        }
        let alone: Vec<VdSeams>;
        let (seams, edge_count) = match seams {
            Some((seams, edges)) if seams.len() == patches.len() => (seams, edges),
            Some((seams, _)) => {
                return Err(GpuError::Device(format!(
                    "{} VD seams for {} patches",
                    seams.len(),
                    patches.len()
                )))
            }
            None => {
                alone = (0..patches.len() as u32).map(VdSeams::alone).collect();
                (&alone[..], 4 * patches.len() as u32)
            }
        };
        let seam_data = if seams.is_empty() {
            &[VdSeams::zeroed()][..]
        } else {
            seams
        };
        kept.uploaded = 0;
        let texels = match &kept.texels {
            Some((images, buffer)) if layout.same_images(images) => buffer.clone(),
            _ => {
                let mut texels = layout.texels();
                if texels.is_empty() {
                    texels.push([0.0; 4]);
                }
                let buffer = storage_buffer(ctx, "vd texels", &texels)?;
                kept.uploaded += std::mem::size_of_val(texels.as_slice()) as u64;
                let images = layout.images.iter().map(|(i, _)| Arc::clone(i)).collect();
                kept.texels = Some((images, buffer.clone()));
                buffer
            }
        };
        Ok(VdBatchScene {
            patches: keep(
                ctx,
                &mut kept.patches,
                "vd patches",
                patch_data,
                &mut kept.uploaded,
            )?,
            maps: keep(ctx, &mut kept.maps, "vd maps", &records, &mut kept.uploaded)?,
            texels,
            seams: keep(
                ctx,
                &mut kept.seams,
                "vd seams",
                seam_data,
                &mut kept.uploaded,
            )?,
            patch_count: patches.len() as u32,
            edge_count,
        })
    }
}

/// The VD scene's buffers kept from one upload to the next ([`VdBatchScene::upload_kept`]),
/// with what each holds.
#[derive(Default)]
pub struct VdKept {
    patches: Option<(Vec<VdBatchPatch>, GpuBuffer)>,
    maps: Option<(Vec<VdBatchMap>, GpuBuffer)>,
    /// The distinct images, in the order their texels lie in the buffer.
    texels: Option<(Vec<Arc<VdImage>>, GpuBuffer)>,
    seams: Option<(Vec<VdSeams>, GpuBuffer)>,
    /// Bytes the last upload sent.
    pub uploaded: u64,
}

/// The buffer holding `data`: the kept one when it holds the same, else the kept one written
/// over when `data` is as long (a frame's earlier commands read it before this write runs, as
/// wgpu orders a queue's writes after the work already submitted), else a new one.
fn keep<T: Pod + PartialEq>(
    ctx: &GpuContext,
    slot: &mut Option<(Vec<T>, GpuBuffer)>,
    label: &str,
    data: &[T],
    uploaded: &mut u64,
) -> Result<GpuBuffer, GpuError> {
    if let Some((held, buffer)) = slot {
        if held.as_slice() == data {
            return Ok(buffer.clone());
        }
        if held.len() == data.len() {
            super::kernel::write_storage(ctx, buffer, bytemuck::cast_slice(data));
            held.copy_from_slice(data);
            *uploaded += std::mem::size_of_val(data) as u64;
            return Ok(buffer.clone());
        }
    }
    let buffer = storage_buffer(ctx, label, data)?;
    *uploaded += std::mem::size_of_val(data) as u64;
    *slot = Some((data.to_vec(), buffer.clone()));
    Ok(buffer)
}

/// The level of every patch for a batch: one `u32` per patch of the [`VdBatchScene`], and one
/// per edge id (the finest level of the patches that share it).
pub struct VdLevels<'a> {
    pub buffer: &'a GpuBuffer,
    pub edges: &'a GpuBuffer,
    /// Choose each job's level from its rays (the largest [`lod_level`]) and store it in
    /// `buffer` (a frame's camera batch), or build at the level `buffer` holds (later batches).
    ///
    /// [`lod_level`]: crate::accel::vd_bottom::lod_level
    pub choose: bool,
}

/// The job queue of one batch: records sorted by patch (in the caller's buffers) and their runs.
pub struct VdJobs {
    pub runs: SortedRuns,
    pub records: u32,
}

/// What [`VdBatch::record_trace`] leaves on the GPU.
pub struct VdBatchOutput {
    /// Two words per hit slot: `[record, f32 bits of t]`, `[VD_NONE, VD_NONE]` without a hit.
    pub hits: GpuBuffer,
    /// One [`VdRecordHit`] per (sorted) record.
    pub record_hits: GpuBuffer,
    /// The level each job was built at, by job.
    pub job_levels: GpuBuffer,
    /// The uniform the kernels ran with.
    pub params: GpuBuffer,
}

/// A resolved closest hit of one slot.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VdBatchHit {
    pub t: f32,
    pub patch: u32,
    pub cell: u32,
    pub st: Vec2,
    pub normal: Vec3,
    /// The (sorted) record that won.
    pub record: u32,
}

/// Wall-clock milliseconds of the steps of [`VdBatch::trace_vec`] (each submitted alone and
/// waited for).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct VdBatchTimings {
    /// Radix sort and run finding.
    pub jobs_ms: f64,
    /// `build_trace` with tracing switched off: level choice and tree builds only.
    pub build_only_ms: f64,
    /// `build_trace` in full (levels, builds, traversal, atomics).
    pub build_trace_ms: f64,
    /// The fallback's second pass (0 with 64-bit atomics).
    pub resolve_ms: f64,
    /// GPU timestamps of the build-only and the full `build_trace` dispatches, when the adapter
    /// has timestamp queries.
    pub gpu_build_only_ms: Option<f64>,
    pub gpu_build_trace_ms: Option<f64>,
}

/// Everything [`VdBatch::trace_vec`] reads back.
#[derive(Clone, Debug, Default)]
pub struct VdBatchResult {
    /// The closest hit of each slot.
    pub hits: Vec<Option<VdBatchHit>>,
    /// `(patch, level)` of every job, in job order (patches ascending).
    pub levels: Vec<(u32, u32)>,
    pub timings: VdBatchTimings,
}

/// The stage's kernels and its shared link table.
pub struct VdBatch {
    pub options: VdBatchOptions,
    build_trace: Kernel,
    resolve: Kernel,
    /// Fills the hit slots with `VD_NONE` (`vd/clear_hits.wgsl`).
    clear_hits: Kernel,
    edge_levels: Kernel,
    links: GpuBuffer,
    /// Words of one workgroup's scratch slice, and the offsets of its nodes and edge points.
    pub slice_words: u32,
    pub node_words_offset: u32,
    pub edge_words_offset: u32,
    /// Workgroups launched (after the memory cap).
    pub workgroups: u32,
}

impl VdBatch {
    pub fn new(ctx: &GpuContext, options: VdBatchOptions) -> Result<VdBatch, GpuError> {
        if options.max_level > MAX_LEVEL {
            return Err(GpuError::Device(format!(
                "VD batch level {} above MAX_LEVEL {MAX_LEVEL}",
                options.max_level
            )));
        }
        if options.int64_atomics && !ctx.info.features.int64_atomic_min_max {
            return Err(GpuError::Device(
                "64-bit atomic min/max asked for, but the adapter lacks it".into(),
            ));
        }
        let defines: &[&str] = if options.int64_atomics {
            &["INT64_ATOMICS"]
        } else {
            &[]
        };
        let build_trace = Kernel::new(ctx, "vd/build_trace.wgsl", defines, Checks::Checked)?;
        let resolve = Kernel::new(ctx, "vd/resolve_hits.wgsl", &[], Checks::Checked)?;
        let clear_hits = Kernel::new(ctx, "vd/clear_hits.wgsl", &[], Checks::Checked)?;
        let edge_levels = Kernel::new(ctx, "vd/edge_levels.wgsl", &[], Checks::Checked)?;
        let links = storage_buffer(ctx, "vd links", &LinkTable::new(options.max_level).links)?;
        let row = (1u64 << options.max_level) + 1;
        let node_words_offset = 3 * row * row;
        let edge_words_offset = node_words_offset + 5 * node_count(options.max_level) as u64;
        let slice_words = edge_words_offset + 3 * 4 * row;
        let limit = ctx.info.binding_limit();
        let fit = (limit / (4 * slice_words)).max(1);
        let wanted = if options.workgroups == 0 {
            DEFAULT_WORKGROUPS
        } else {
            options.workgroups
        };
        let workgroups = (wanted as u64)
            .min(fit)
            .min(ctx.info.max_compute_workgroups_per_dimension as u64)
            .max(1) as u32;
        Ok(VdBatch {
            options,
            build_trace,
            resolve,
            clear_hits,
            edge_levels,
            links,
            slice_words: slice_words as u32,
            node_words_offset: node_words_offset as u32,
            edge_words_offset: edge_words_offset as u32,
            workgroups,
        })
    }

    /// Step 1: sorts `records` pairs of (`record_patches`, `record_rays`) by patch in place and
    /// finds the jobs.
    #[allow(clippy::too_many_arguments)]
    pub fn record_jobs(
        &self,
        ctx: &GpuContext,
        prims: &Primitives,
        encoder: &mut Encoder,
        scene: &VdBatchScene,
        record_patches: &GpuBuffer,
        record_rays: &GpuBuffer,
        records: u32,
    ) -> Result<VdJobs, GpuError> {
        let bits = (32 - scene.patch_count.saturating_sub(1).leading_zeros()).max(1);
        prims.radix_sort_u32(ctx, encoder, record_patches, record_rays, records, bits)?;
        let runs = prims.find_sorted_bounds(ctx, encoder, record_patches, None, records)?;
        Ok(VdJobs { runs, records })
    }

    /// Steps 2 and 3: the persistent build-and-trace kernel over `jobs` (and the fallback's
    /// second pass), for `rays` competing for `hit_slots` slots. With `trace` false only the
    /// levels and trees are made (for timing the build).
    #[allow(clippy::too_many_arguments)]
    pub fn record_trace(
        &self,
        ctx: &GpuContext,
        encoder: &mut Encoder,
        scene: &VdBatchScene,
        rays: &GpuBuffer,
        record_rays: &GpuBuffer,
        jobs: &VdJobs,
        hit_slots: u32,
        trace: bool,
        levels: &VdLevels,
    ) -> Result<VdBatchOutput, GpuError> {
        let out = self.record_build_trace(
            ctx,
            encoder,
            scene,
            rays,
            record_rays,
            jobs,
            hit_slots,
            trace,
            levels,
            None,
        )?;
        if trace {
            self.record_resolve(ctx, encoder, rays, record_rays, jobs, &out)?;
        }
        Ok(out)
    }

    /// [`VdBatch::record_trace`] without the fallback's second pass.
    #[allow(clippy::too_many_arguments)]
    pub fn record_build_trace(
        &self,
        ctx: &GpuContext,
        encoder: &mut Encoder,
        scene: &VdBatchScene,
        rays: &GpuBuffer,
        record_rays: &GpuBuffer,
        jobs: &VdJobs,
        hit_slots: u32,
        trace: bool,
        levels: &VdLevels,
        timestamp_writes: Option<wgpu::ComputePassTimestampWrites>,
    ) -> Result<VdBatchOutput, GpuError> {
        let records = jobs.records;
        let params_for = |mode: u32| {
            uniform_buffer(
                ctx,
                "vd batch params",
                &VdBatchParams {
                    max_level: self.options.max_level,
                    mode,
                    slice_words: self.slice_words,
                    node_words_offset: self.node_words_offset,
                    record_count: records,
                    edge_words_offset: self.edge_words_offset,
                    patch_count: scene.patch_count,
                    ..Default::default()
                },
            )
        };
        let params = params_for(u32::from(trace) | 2);
        let scratch = storage_buffer_sized(
            ctx,
            "vd scratch",
            self.workgroups as u64 * self.slice_words as u64 * 4,
        )?;
        let job_counter = storage_buffer_sized(ctx, "vd job counter", 4)?;
        encoder.clear_buffer(&job_counter, 0, None);
        let record_hits = storage_buffer_sized(
            ctx,
            "vd record hits",
            records.max(1) as u64 * std::mem::size_of::<VdRecordHit>() as u64,
        )?;
        let job_levels = storage_buffer_sized(ctx, "vd job levels", records as u64 * 4)?;
        let hit_words = 2 * hit_slots.max(1) as u64;
        let hits = storage_buffer_sized(ctx, "vd hits", hit_words * 4)?;
        let words = u32::try_from(hit_words)
            .map_err(|_| GpuError::Device(format!("{hit_words} VD hit words past u32")))?;
        let clear_params = uniform_buffer(ctx, "vd clear hits params", &[words, 0, 0, 0]);
        let clear = self
            .clear_hits
            .bind(ctx, &[("params", &clear_params), ("hits", &hits)])?;
        self.clear_hits
            .dispatch(encoder, &clear, self.clear_hits.grid_for(ctx, hit_words));
        let bind_with = |params: &GpuBuffer| {
            self.build_trace.bind(
                ctx,
                &[
                    ("params", params),
                    ("patches", &scene.patches),
                    ("maps", &scene.maps),
                    ("texels", &scene.texels),
                    ("rays", rays),
                    ("record_rays", record_rays),
                    ("job_patches", &jobs.runs.keys_lo),
                    ("job_starts", &jobs.runs.starts),
                    ("job_ends", &jobs.runs.ends),
                    ("job_count", &jobs.runs.count.buffer),
                    ("links", &self.links),
                    ("scratch", &scratch),
                    ("job_counter", &job_counter),
                    ("record_hits", &record_hits),
                    ("job_levels", &job_levels),
                    ("hits", &hits),
                    ("levels", levels.buffer),
                    ("seams", &scene.seams),
                    ("edge_levels", levels.edges),
                ],
            )
        };
        if levels.choose {
            // The levels first, then the edges' (the finest of the patches that share each),
            // which every build needs before it starts.
            let choose = params_for(4);
            let bind = bind_with(&choose)?;
            self.build_trace
                .dispatch(encoder, &bind, (self.workgroups, 1, 1));
            encoder.clear_buffer(&job_counter, 0, None);
            encoder.clear_buffer(levels.edges, 0, None);
            let bind = self.edge_levels.bind(
                ctx,
                &[
                    ("params", &choose),
                    ("seams", &scene.seams),
                    ("levels", levels.buffer),
                    ("edge_levels", levels.edges),
                ],
            )?;
            self.edge_levels.dispatch(
                encoder,
                &bind,
                self.edge_levels.grid_for(ctx, scene.patch_count as u64),
            );
        }
        let bind = bind_with(&params)?;
        encoder.dispatch_in_pass(
            &self.build_trace.name,
            &self.build_trace.pipeline,
            &bind,
            (self.workgroups, 1, 1),
            timestamp_writes,
        );
        Ok(VdBatchOutput {
            hits,
            record_hits,
            job_levels,
            params,
        })
    }

    /// The fallback's second pass over `out` (nothing with 64-bit atomics);
    /// [`VdBatch::record_trace`] records it already, this is for timing it apart.
    pub fn record_resolve(
        &self,
        ctx: &GpuContext,
        encoder: &mut Encoder,
        rays: &GpuBuffer,
        record_rays: &GpuBuffer,
        jobs: &VdJobs,
        out: &VdBatchOutput,
    ) -> Result<(), GpuError> {
        if self.options.int64_atomics || jobs.records == 0 {
            return Ok(());
        }
        let bind = self.resolve.bind(
            ctx,
            &[
                ("params", &out.params),
                ("rays", rays),
                ("record_rays", record_rays),
                ("record_hits", &out.record_hits),
                ("hits", &out.hits),
            ],
        )?;
        self.resolve.dispatch(
            encoder,
            &bind,
            self.resolve.grid_for(ctx, jobs.records as u64),
        );
        Ok(())
    }

    /// Uploads `rays` and the records (`(patch, ray)` pairs), runs the whole stage for
    /// `hit_slots` slots step by step (each step submitted alone and timed), and reads back the
    /// closest hit of each slot and the level of each job. With `levels` (one per patch, and one
    /// per edge id: [`crate::accel::Prepared::vd_edge_levels`]) the patches are built at those;
    /// without, each job chooses its level from its rays.
    #[allow(clippy::too_many_arguments)]
    pub fn trace_vec(
        &self,
        ctx: &GpuContext,
        prims: &Primitives,
        scene: &VdBatchScene,
        rays: &[VdBatchRay],
        records: &[(u32, u32)],
        hit_slots: u32,
        levels: Option<(&[u32], &[u32])>,
    ) -> Result<VdBatchResult, GpuError> {
        let n = u32::try_from(records.len())
            .map_err(|_| GpuError::Device("too many VD records".into()))?;
        if n == 0 || rays.is_empty() {
            return Ok(VdBatchResult {
                hits: vec![None; hit_slots as usize],
                ..Default::default()
            });
        }
        if let Some(&(p, r)) = records
            .iter()
            .find(|&&(p, r)| p >= scene.patch_count || r as usize >= rays.len())
        {
            return Err(GpuError::Device(format!(
                "VD record ({p}, {r}) out of range: {} patches, {} rays",
                scene.patch_count,
                rays.len()
            )));
        }
        if let Some(ray) = rays.iter().find(|ray| ray.hit >= hit_slots) {
            return Err(GpuError::Device(format!(
                "VD ray hit slot {} out of range: {hit_slots} slots",
                ray.hit
            )));
        }
        let rays_buffer = storage_buffer(ctx, "vd rays", rays)?;
        let patches: Vec<u32> = records.iter().map(|r| r.0).collect();
        let ray_ids: Vec<u32> = records.iter().map(|r| r.1).collect();
        let record_patches = storage_buffer(ctx, "vd record patches", &patches)?;
        let record_rays = storage_buffer(ctx, "vd record rays", &ray_ids)?;
        let (given, given_edges) = levels.unwrap_or_default();
        if levels.is_some()
            && (given.len() != scene.patch_count as usize
                || given_edges.len() != scene.edge_count as usize)
        {
            return Err(GpuError::Device(format!(
                "{} levels and {} edge levels for {} patches and {} edges",
                given.len(),
                given_edges.len(),
                scene.patch_count,
                scene.edge_count
            )));
        }
        let or_zeros = |given: &[u32], count: u32| {
            let mut v = given.to_vec();
            v.resize(count.max(1) as usize, 0);
            v
        };
        let level_buffer = storage_buffer(ctx, "vd levels", &or_zeros(given, scene.patch_count))?;
        let edge_buffer = storage_buffer(
            ctx,
            "vd edge levels",
            &or_zeros(given_edges, scene.edge_count),
        )?;
        let levels = VdLevels {
            buffer: &level_buffer,
            edges: &edge_buffer,
            choose: levels.is_none(),
        };
        let mut timings = VdBatchTimings::default();
        let encoder_for = || Encoder::new(ctx);
        ctx.wait_idle()?;
        // GPU timestamps around the two build_trace dispatches, when the adapter has them.
        let query = ctx.info.features.timestamps.then(|| {
            ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("vd batch"),
                ty: wgpu::QueryType::Timestamp,
                count: 4,
            })
        });
        let stamps = match query {
            Some(_) => Some((
                ctx.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("vd batch timestamps"),
                    size: 32,
                    usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                }),
                storage_buffer_sized(ctx, "vd batch timestamps (copy)", 32)?,
            )),
            None => None,
        };
        let writes = |first: u32| {
            query.as_ref().map(|q| wgpu::ComputePassTimestampWrites {
                query_set: q,
                beginning_of_pass_write_index: Some(first),
                end_of_pass_write_index: Some(first + 1),
            })
        };

        let clock = Instant::now();
        let mut encoder = encoder_for();
        let jobs = self.record_jobs(
            ctx,
            prims,
            &mut encoder,
            scene,
            &record_patches,
            &record_rays,
            n,
        )?;
        ctx.submit([encoder.finish()]);
        ctx.wait_idle()?;
        timings.jobs_ms = clock.elapsed().as_secs_f64() * 1e3;

        let clock = Instant::now();
        let mut encoder = encoder_for();
        self.record_build_trace(
            ctx,
            &mut encoder,
            scene,
            &rays_buffer,
            &record_rays,
            &jobs,
            hit_slots,
            false,
            &levels,
            writes(0),
        )?;
        ctx.submit([encoder.finish()]);
        ctx.wait_idle()?;
        timings.build_only_ms = clock.elapsed().as_secs_f64() * 1e3;

        // The full kernel, then (fallback) the resolve pass, timed apart.
        let clock = Instant::now();
        let mut encoder = encoder_for();
        let out = self.record_build_trace(
            ctx,
            &mut encoder,
            scene,
            &rays_buffer,
            &record_rays,
            &jobs,
            hit_slots,
            true,
            &levels,
            writes(2),
        )?;
        if let (Some(q), Some((resolve, _))) = (&query, &stamps) {
            encoder.resolve_query_set(q, 0..4, resolve, 0);
        }
        ctx.submit([encoder.finish()]);
        ctx.wait_idle()?;
        timings.build_trace_ms = clock.elapsed().as_secs_f64() * 1e3;
        let clock = Instant::now();
        let mut encoder = encoder_for();
        self.record_resolve(ctx, &mut encoder, &rays_buffer, &record_rays, &jobs, &out)?;
        ctx.submit([encoder.finish()]);
        ctx.wait_idle()?;
        timings.resolve_ms = clock.elapsed().as_secs_f64() * 1e3;

        if let Some((resolve, copy)) = &stamps {
            let mut encoder = encoder_for();
            encoder.copy_buffer_to_buffer(resolve, 0, copy, 0, 32);
            ctx.submit([encoder.finish()]);
            let ticks: Vec<u64> = read_buffer(ctx, copy, 4)?;
            let ms = |a: u64, b: u64| {
                b.saturating_sub(a) as f64 * ctx.info.timestamp_period_ns as f64 * 1e-6
            };
            timings.gpu_build_only_ms = Some(ms(ticks[0], ticks[1]));
            timings.gpu_build_trace_ms = Some(ms(ticks[2], ticks[3]));
        }
        let job_count = jobs.runs.count.read(ctx)? as usize;
        let job_patches: Vec<u32> = read_buffer(ctx, &jobs.runs.keys_lo, job_count)?;
        let job_levels: Vec<u32> = read_buffer(ctx, &out.job_levels, job_count)?;
        let words: Vec<u32> = read_buffer(ctx, &out.hits, 2 * hit_slots as usize)?;
        let record_hits: Vec<VdRecordHit> = read_buffer(ctx, &out.record_hits, n as usize)?;
        let hits = words
            .chunks_exact(2)
            .map(|w| {
                let record = w[0];
                (record != VD_NONE).then(|| {
                    let h = record_hits[record as usize];
                    debug_assert_eq!(h.t.to_bits(), w[1]);
                    VdBatchHit {
                        t: h.t,
                        patch: h.patch_index,
                        cell: h.cell,
                        st: Vec2::from_array(h.st),
                        normal: Vec3::from_array(h.normal),
                        record,
                    }
                })
            })
            .collect();
        Ok(VdBatchResult {
            hits,
            levels: job_patches.into_iter().zip(job_levels).collect(),
            timings,
        })
    }
}

/// The scratch bytes one workgroup slice takes at `max_level` (points, nodes, edge points).
pub fn slice_bytes(max_level: u32) -> u64 {
    let row = (1u64 << max_level) + 1;
    4 * (3 * row * row + 5 * node_count(max_level) as u64 + 3 * 4 * row)
}

/// Nodes of a tree of `level` start at word `node_words_offset`; the leaves of that tree at
/// node [`first_node_of_level`]`(level)`.
pub fn first_leaf(level: u32) -> u32 {
    first_node_of_level(level)
}
