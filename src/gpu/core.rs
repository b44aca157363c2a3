//! The device plumbing every GPU stage shares (`GpuCore`): the context, the data-parallel
//! primitives, buffers kept by role, named bindings with the scene, timed dispatches and their
//! timers, and the traversal of a batch of rays (VD batches included).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::context::{GpuContext, GpuError};
use super::encoder::{Encoder, Grid};
use super::kernel::{read_buffer, storage_buffer, storage_buffer_sized, uniform_buffer, Kernel};
use super::pool::GpuBuffer;
use super::prims::Primitives;
use super::upload::{FrameParams, GpuRay, SceneBuffers};
use super::vd_batch::VdKept;
use super::vd_pipeline::{VdFrameGpu, VdKernels};
use crate::accel::Prepared;
use crate::render::stats::{AdapterStats, GpuFrameStats, GpuWhittedTimes, WhittedStats};

/// The kernels of one traversal variant.
pub(super) struct TraversalKernels {
    pub(super) trace: Kernel,
    pub(super) shade: Kernel,
    pub(super) shadow: Kernel,
}

/// One level of the shade trees on the GPU.
pub(super) struct ShadeLevel {
    pub(super) nodes: GpuBuffer,
    pub(super) count: u64,
    /// `GpuShadingPoint` per node: the diffuse nodes' shading points (node = NONE elsewhere).
    pub(super) points: GpuBuffer,
}

/// Per-stage GPU times and ray counts of one frame (or one pass, added into the frame's).
#[derive(Clone, Debug, Default)]
pub(super) struct StageStats {
    pub(super) primary_ms: f64,
    pub(super) trace_ms: f64,
    /// The part of `trace_ms` spent on camera rays.
    pub(super) primary_trace_ms: f64,
    pub(super) shade_ms: f64,
    pub(super) shadow_ms: f64,
    pub(super) spawn_ms: f64,
    pub(super) accumulate_ms: f64,
    pub(super) primary_rays: u64,
    pub(super) specular_rays: u64,
    pub(super) shadow_rays: u64,
    pub(super) shade_tree_nodes: u64,
    /// Passes whose levels took their room from an earlier frame's.
    pub(super) sized_tree_passes: u64,
    /// Passes cut in two because a buffer outgrew a binding.
    pub(super) pass_splits: u64,
    /// Whether the phases were timed (`RenderOptions::phase_times`): the `*_ms` above hold
    /// times only then.
    pub(super) phases_timed: bool,
}

impl StageStats {
    pub(super) fn add(&mut self, o: &StageStats) {
        self.primary_ms += o.primary_ms;
        self.trace_ms += o.trace_ms;
        self.primary_trace_ms += o.primary_trace_ms;
        self.shade_ms += o.shade_ms;
        self.shadow_ms += o.shadow_ms;
        self.spawn_ms += o.spawn_ms;
        self.accumulate_ms += o.accumulate_ms;
        self.primary_rays += o.primary_rays;
        self.specular_rays += o.specular_rays;
        self.shadow_rays += o.shadow_rays;
        self.shade_tree_nodes += o.shade_tree_nodes;
        self.sized_tree_passes += o.sized_tree_passes;
        self.pass_splits += o.pass_splits;
        self.phases_timed |= o.phases_timed;
    }

    /// Fills the frame's Whitted figures and its GPU counters, times (with timestamps) and
    /// adapter facts, for a frame that took `seconds`.
    pub(super) fn fill(
        &self,
        seconds: f64,
        ctx: &GpuContext,
        whitted: &mut WhittedStats,
        gpu: &mut GpuFrameStats,
    ) {
        *whitted = WhittedStats {
            primary_rays: self.primary_rays,
            shadow_rays: self.shadow_rays,
            specular_rays: self.specular_rays,
            ms: seconds * 1e3,
        };
        gpu.counters.shade_tree_nodes = self.shade_tree_nodes;
        gpu.counters.sized_tree_passes = self.sized_tree_passes;
        gpu.counters.pass_splits = self.pass_splits;
        if ctx.info.features.timestamps && self.phases_timed {
            gpu.whitted_times = Some(GpuWhittedTimes {
                primary_ms: self.primary_ms,
                trace_ms: self.trace_ms,
                primary_trace_ms: self.primary_trace_ms,
                shade_ms: self.shade_ms,
                shadow_ms: self.shadow_ms,
                spawn_ms: self.spawn_ms,
                accumulate_ms: self.accumulate_ms,
            });
        }
        // What the adapter is and which optional features the pipeline found.
        let f = &ctx.info.features;
        gpu.adapter = AdapterStats {
            subgroups: f.subgroups as u32,
            int64: f.int64 as u32,
            int64_atomic_min_max: f.int64_atomic_min_max as u32,
            timestamps: f.timestamps as u32,
            subgroup_size: ctx.info.subgroup_max_size,
            max_storage_binding_mib: ctx.info.max_storage_buffer_binding_size >> 20,
        };
    }
}

/// Timestamp queries around each dispatch, resolved once per submission.
pub(super) struct Timer {
    set: wgpu::QuerySet,
    resolve: GpuBuffer,
    capacity: u32,
    used: Vec<(&'static str, u32)>,
}

impl Timer {
    pub(super) fn new(ctx: &GpuContext, capacity: u32) -> Option<Timer> {
        if !ctx.info.features.timestamps {
            return None;
        }
        let (set, resolve) =
            super::kernel::timestamp_queries(ctx, "whitted timestamps", capacity * 2);
        Some(Timer {
            set,
            resolve,
            capacity,
            used: Vec::new(),
        })
    }
}

/// The device and what every stage uses on it.
pub struct GpuCore {
    pub ctx: Arc<GpuContext>,
    /// The scans and the compaction that place rays, and the sorts.
    pub prims: Primitives,
    /// Buffers kept by role ([`GpuCore::scratch`]).
    scratch: Mutex<HashMap<&'static str, GpuBuffer>>,
    /// The identity indices ([`GpuCore::iota`]), one buffer per power-of-two size.
    iotas: Mutex<HashMap<u64, GpuBuffer>>,
    /// The frames' timer (its query set made once), between frames.
    timer: Mutex<Option<Timer>>,
    /// The VD scene's buffers between frames (a frame sends only what changed).
    vd_kept: Mutex<VdKept>,
}

impl GpuCore {
    pub fn new(ctx: Arc<GpuContext>, prims: Primitives) -> GpuCore {
        GpuCore {
            ctx,
            prims,
            scratch: Mutex::new(HashMap::new()),
            iotas: Mutex::new(HashMap::new()),
            timer: Mutex::new(None),
            vd_kept: Mutex::new(VdKept::default()),
        }
    }

    /// Records into `encoder` the tracing of the `n` rays of `rays` into `hits` with
    /// `kernels.trace` (`params.ray_count` = n), after what the encoder holds and before what
    /// the caller records next. With VD patches the bottom level runs over the records and its
    /// hits are merged; that reads a count back, so the encoder's commands are submitted first
    /// and the caller goes on in a fresh one. With `live_count` (a `u32` on the device, at most
    /// n: a buffer and the word's byte offset in it) only that many rays are traced: it is
    /// copied into the kernels' `params.ray_count` ahead of the dispatches over n.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn trace_rays(
        &self,
        encoder: &mut Encoder,
        kernels: &TraversalKernels,
        buffers: &SceneBuffers,
        mut params: FrameParams,
        rays: &GpuBuffer,
        hits: &GpuBuffer,
        live_count: Option<(&GpuBuffer, u64)>,
        vd: &mut Option<VdFrameGpu>,
        timer: &mut Option<Timer>,
        stage: &'static str,
    ) -> Result<(), GpuError> {
        let ctx = &self.ctx;
        let n = params.ray_count as u64;
        loop {
            params.vd_record_capacity = vd.as_ref().map_or(0, |v| v.capacity());
            let params_buffer = uniform_buffer(ctx, "params", &params);
            let mut own: Vec<(&str, &GpuBuffer)> = vec![("rays", rays), ("hits", hits)];
            if let Some(v) = vd.as_ref() {
                own.extend(v.record_bindings());
            }
            let bind = self.bind_with_scene(&kernels.trace, buffers, &params_buffer, &own)?;
            if let Some((count, offset)) = live_count {
                let at = std::mem::offset_of!(FrameParams, ray_count) as u64;
                encoder.copy_buffer_to_buffer(count, offset, &params_buffer, at, 4);
            }
            if let Some(v) = vd.as_ref() {
                v.clear(encoder);
            }
            match (live_count, vd.is_none()) {
                // Without VD patches (whose batches size themselves by the slots), workgroups
                // for the live rays only: a trace over the whole room, most of it returning at
                // once, cost about 0.3 ms for 2M slots on the lent H100 (docs/performance.md).
                (Some(live), true) => {
                    let args = self
                        .prims
                        .dispatch_args(ctx, encoder, &kernels.trace, live, n)?;
                    let grid = Grid::Indirect(&args, 0);
                    self.dispatch_timed_grid(encoder, &kernels.trace, &bind, grid, timer, stage);
                }
                _ => self.dispatch_timed(encoder, &kernels.trace, &bind, n, timer, stage),
            }
            let Some(v) = vd.as_mut() else {
                return Ok(());
            };
            ctx.submit([std::mem::replace(encoder, Encoder::new(ctx)).finish()]);
            let Some(count) = v.take_count(ctx)? else {
                continue;
            };
            let merge = &v.kernels().merge;
            v.run_batch(ctx, &self.prims, count, n as u32, |encoder, out, v| {
                let bind = self.bind_with_scene(
                    merge,
                    buffers,
                    &params_buffer,
                    &[
                        ("hits", hits),
                        ("vd_rays", v.rays()),
                        ("vd_record_rays", v.record_rays()),
                        ("vd_hits", &out.hits),
                        ("vd_record_hits", &out.record_hits),
                    ],
                )?;
                merge.dispatch(encoder, &bind, merge.grid_for(ctx, n));
                Ok(())
            })?;
            return Ok(());
        }
    }

    pub fn context(&self) -> &Arc<GpuContext> {
        &self.ctx
    }

    /// A storage buffer of at least `size` bytes for `role`, kept from its last use: its
    /// contents are whatever that use left. Only for buffers that one stage uses at a time,
    /// written and read by kernels alone (so that the queue's order keeps one use's kernels
    /// after the last's, waits or none: the shade trees' levels are recorded without one), and
    /// whose every element a kernel reads is written first in the same use. A larger request
    /// replaces the buffer (by at least a quarter, so that growing frames do not reallocate
    /// every time); the replaced one leaves the pool ([`GpuBuffer::leave_pool`]), so that the
    /// next frame's requests get the buffers this frame's had.
    pub(super) fn scratch(&self, role: &'static str, size: u64) -> Result<GpuBuffer, GpuError> {
        self.ctx.check_binding_size(role, size)?;
        // Only poisoned if a thread panicked while holding it; the block below cannot.
        let mut cache = self.scratch.lock().unwrap();
        if let Some(b) = cache.get(role).filter(|b| b.size() >= size) {
            return Ok(b.clone());
        }
        let limit = self.ctx.info.binding_limit();
        let grown = cache.get(role).map_or(0, |b| b.size() + b.size() / 4);
        let buffer = storage_buffer_sized(&self.ctx, role, size.max(grown.min(limit)))?;
        if let Some(replaced) = cache.insert(role, buffer.clone()) {
            replaced.leave_pool();
        }
        Ok(buffer)
    }

    /// The indices `0..n` (at least) in a storage buffer, kept between uses: one buffer for
    /// every power-of-two size asked for, made once and never replaced, so that every caller
    /// binds the same buffer frame after frame whatever order the stages ask in (a buffer
    /// grown mid-frame would give the next frame's earlier callers another one, and new bind
    /// groups).
    pub(super) fn iota(&self, n: u64) -> Result<GpuBuffer, GpuError> {
        const ROLE: &str = "identity indices";
        let class = n.max(1).next_power_of_two();
        // Only poisoned if a thread panicked while holding it; the block below cannot.
        let mut cache = self.iotas.lock().unwrap();
        if let Some(b) = cache.get(&class) {
            return Ok(b.clone());
        }
        let class_u32 = u32::try_from(class).map_err(|_| GpuError::BufferTooLarge {
            what: ROLE.to_string(),
            size: n * 4,
            limit: u32::MAX as u64,
        })?;
        let indices: Vec<u32> = (0..class_u32).collect();
        let buffer = storage_buffer(&self.ctx, ROLE, &indices)?;
        cache.insert(class, buffer.clone());
        Ok(buffer)
    }

    pub(super) fn bind_with_scene(
        &self,
        kernel: &Kernel,
        scene: &SceneBuffers,
        params: &GpuBuffer,
        own: &[(&str, &GpuBuffer)],
    ) -> Result<wgpu::BindGroup, GpuError> {
        let mut resources: Vec<(&str, &GpuBuffer)> = scene.all().to_vec();
        resources.push(("params", params));
        resources.extend_from_slice(own);
        kernel.bind(&self.ctx, &resources)
    }

    /// Records `kernel` over `n` invocations, with timestamps around it when available.
    pub(super) fn dispatch_timed(
        &self,
        encoder: &mut Encoder,
        kernel: &Kernel,
        bind: &wgpu::BindGroup,
        n: u64,
        timer: &mut Option<Timer>,
        stage: &'static str,
    ) {
        let grid = Grid::Direct(kernel.grid_for(&self.ctx, n));
        self.dispatch_timed_grid(encoder, kernel, bind, grid, timer, stage);
    }

    /// [`GpuCore::dispatch_timed`] over any [`Grid`], an indirect one too.
    pub(super) fn dispatch_timed_grid(
        &self,
        encoder: &mut Encoder,
        kernel: &Kernel,
        bind: &wgpu::BindGroup,
        grid: Grid<'_>,
        timer: &mut Option<Timer>,
        stage: &'static str,
    ) {
        let slot = match timer {
            Some(t) if (t.used.len() as u32) < t.capacity => {
                let slot = t.used.len() as u32;
                t.used.push((stage, slot));
                Some((t, slot))
            }
            _ => None,
        };
        let timestamp_writes = slot
            .as_ref()
            .map(|(t, s)| wgpu::ComputePassTimestampWrites {
                query_set: &t.set,
                beginning_of_pass_write_index: Some(s * 2),
                end_of_pass_write_index: Some(s * 2 + 1),
            });
        encoder.dispatch_grid_in_pass(&kernel.name, &kernel.pipeline, bind, grid, timestamp_writes);
    }

    /// A frame's timer with room for `capacity` timed dispatches: the one the last frame
    /// gave back when it is as large, so that its query set is made once.
    pub(super) fn frame_timer(&self, capacity: u32) -> Option<Timer> {
        // Only poisoned if a thread panicked while swapping it; a new timer serves then.
        let kept = self.timer.lock().unwrap_or_else(|e| e.into_inner()).take();
        match kept {
            Some(mut t) if t.capacity >= capacity => {
                t.used.clear();
                Some(t)
            }
            _ => Timer::new(&self.ctx, capacity),
        }
    }

    /// Keeps a frame's timer for the next frame.
    pub(super) fn keep_timer(&self, timer: Option<Timer>) {
        if timer.is_some() {
            *self.timer.lock().unwrap_or_else(|e| e.into_inner()) = timer;
        }
    }

    /// Resolves the timer's queries into `stats` and resets it.
    pub(super) fn collect_times(
        &self,
        timer: &mut Option<Timer>,
        stats: &mut StageStats,
    ) -> Result<(), GpuError> {
        let Some(t) = timer else { return Ok(()) };
        stats.phases_timed = true;
        if t.used.is_empty() {
            return Ok(());
        }
        let count = t.used.len() as u32 * 2;
        let mut encoder = Encoder::new(&self.ctx);
        encoder.resolve_query_set(&t.set, 0..count, &t.resolve, 0);
        self.ctx.submit([encoder.finish()]);
        let ticks: Vec<u64> = read_buffer(&self.ctx, &t.resolve, count as usize)?;
        let period = self.ctx.info.timestamp_period_ns as f64;
        for &(stage, slot) in &t.used {
            let (a, b) = (ticks[slot as usize * 2], ticks[slot as usize * 2 + 1]);
            let ms = b.saturating_sub(a) as f64 * period * 1e-6;
            match stage {
                "primary" => stats.primary_ms += ms,
                "trace" => stats.trace_ms += ms,
                "primary trace" => {
                    stats.trace_ms += ms;
                    stats.primary_trace_ms += ms;
                }
                "shade" => stats.shade_ms += ms,
                "spawn" => stats.spawn_ms += ms,
                "accumulate" => stats.accumulate_ms += ms,
                // The shadow rays and the sums of their slots into the nodes.
                _ => stats.shadow_ms += ms,
            }
        }
        t.used.clear();
        Ok(())
    }

    /// The frame's VD state on the GPU, for a scene with VD patches.
    pub(super) fn vd_frame<'k>(
        &self,
        kernels: &'k Option<Arc<VdKernels>>,
        prepared: &Prepared,
        rays: u64,
    ) -> Result<Option<VdFrameGpu<'k>>, GpuError> {
        kernels
            .as_deref()
            .map(|k| {
                // Only poisoned if a thread panicked while uploading; start afresh then.
                let mut kept = self.vd_kept.lock().unwrap_or_else(|e| {
                    let mut kept = e.into_inner();
                    *kept = VdKept::default();
                    kept
                });
                VdFrameGpu::new(&self.ctx, k, &mut kept, prepared, rays)
            })
            .transpose()
    }

    /// The most camera-ray slots of one pass on this adapter: a level's child candidates
    /// (two rays of [`GpuRay`] per ray) must fit one storage binding; `caller` can lower it.
    pub fn max_pass_rays(&self, caller: Option<u64>) -> u64 {
        let limit = self.ctx.info.binding_limit();
        let per_ray = 2 * std::mem::size_of::<GpuRay>() as u64;
        (limit / per_ray).min(caller.unwrap_or(u64::MAX)).max(1)
    }
}
