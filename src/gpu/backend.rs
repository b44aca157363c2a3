//! The GPU backend and its frame driver: the plan's passes, each running the stages in order
//! (camera rays, the frame's photon maps on the first pass, their debug views, the Whitted shade
//! trees, photon mapping's composition, the layers' copies, the film), a pass that outgrows a
//! binding cut in two and run again; then the film and the AOVs read back once. The stages are
//! in their own files (`whitted`, `photons`, `gather`) on [`GpuCore`]; the CPU twin's driver is
//! `cpu::backend`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use glam::Vec3;

use super::context::{AdapterSet, GpuContext, GpuError};
use super::core::{GpuCore, ShadeLevel, StageStats, Timer, TraversalKernels};
use super::encoder::Encoder;
use super::gather::PrecomputedIrradiance;
use super::kernel::{
    read_buffer, read_buffer_map, read_checked_unzip, storage_buffer_sized, Checks, Kernel,
};
use super::maps::FrameMaps;
use super::middle_build::{MiddleBuildKernels, MiddleBuildReport};
use super::photons::{MapSteps, PhotonKernels};
use super::pool::GpuBuffer;
use super::prims::{CountBuffer, Primitives};
use super::tree_sizes::{TreeCounts, TreeHistory, TreeSizes};
use super::tri_kdtree::{KdTreeBuilder, SmallLogs};
use super::upload::{
    frame_params, grid_walk, one_instance_loop, upload_scene, FrameParams, ResidentScene,
    SceneBuffers,
};
use super::vd_pipeline::{VdFrameGpu, VdKernels};
use super::whitted::{pass_params, ShadeTrees, WhittedKernels};
use crate::accel::aabb::Aabb;
use crate::accel::photon_estimate::PhotonRecord;
use crate::accel::tri_kdtree::{KdTreeDevice, KdTreeTooLarge};

use crate::accel::{BvhLayout, Prepared};
use crate::render::photons::{PhotonPass, PhotonPassStats};
use crate::render::plan::{FramePlan, PassPlan, TILE_SIDE};
use crate::render::progress::{Phase, ProgressSink};
use crate::render::stats::{
    FrameStats, GatherStats, GpuFrameStats, PhotonMapStats, StageTimes, VdStats, ViewSearches,
};
use crate::render::{
    aov_layers, Backend, FirstHitSums, Frame, FrameMetadata, PhotonViews, RenderError,
    RenderOptions,
};
use crate::scene::{Aov, Integrator, Scene};

/// The GPU backend: the Whitted pipeline's kernels on one device.
pub struct GpuBackend {
    /// The device and what every stage uses on it (the backend derefs to it).
    core: GpuCore,
    /// The Whitted stage's kernels.
    whitted: WhittedKernels,
    trace_checks: Checks,
    /// The kernels that traverse and shade the scene, compiled on first use, at
    /// `VD + 2 · glossy`: with or without the VD-patch traversal code
    /// (`VD_PATCHES`), which costs a kernel that never runs it about 10% of its ray rate, and
    /// with or without the rough and plastic materials' shading (`GLOSSY_MATERIALS`), which costs the shade
    /// kernel about 15% of its time (docs/performance.md), and for the wide layout
    /// (`WIDE_BVH`, at `+ 4 · wide`) or the QBVH's, and in the wide layout with the loop of a
    /// top level that holds one instance (`ONE_INSTANCE`, at `+ 8`: [`one_instance_loop`]), and
    /// with the two-level grid's walk for `--accel grid` (`GRID`, at `+ 16`: [`grid_walk`]).
    traversal: [Mutex<Option<Arc<TraversalKernels>>>; 32],
    /// The VD bottom-level kernels for the deepest level they were compiled for.
    vd: Mutex<Option<(u32, Arc<VdKernels>)>>,
    /// The photon-tracing kernels, compiled on first use.
    photons: Mutex<Option<Arc<PhotonKernels>>>,
    /// The kernels of the middle levels the device builds, compiled on first use.
    middle_build: Mutex<Option<Arc<MiddleBuildKernels>>>,
    /// Paper 002's kd-tree builder for `Prepared` ([`KdTreeDevice`]), compiled on first use;
    /// its lock is held by the build in progress.
    kdtree: Mutex<Option<KdTreeBuilder>>,
    /// The scene's arrays, kept on the device from frame to frame.
    resident: Mutex<ResidentScene>,
    /// The last frames' shade-tree sizes: the next frame's levels take their room from them.
    tree_sizes: FrameHistory,
}

impl KdTreeDevice for GpuBackend {
    /// One build at a time (`Prepared` builds its meshes on rayon's threads): each build's
    /// levels wait for the device, and builds side by side would only contend for it.
    fn build_kdtree_words(
        &self,
        boxes: &[Aabb],
    ) -> Result<Result<Vec<u32>, KdTreeTooLarge>, String> {
        // Only poisoned if a build panicked; the next one starts afresh.
        let mut slot = self.kdtree.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = Some(KdTreeBuilder::new(&self.ctx).map_err(|e| e.to_string())?);
        }
        let builder = slot.as_ref().expect("made above");
        let built = builder.build_unclocked(&self.ctx, &self.prims, boxes, SmallLogs::Pooled);
        Ok(built.map_err(|e| e.to_string())?.map(|b| b.words))
    }
}

/// The shade-tree sizes of the last frames ([`TreeHistory`]), which the devices of one render
/// share: the sizes are the scene's, not the device's, so a share of the camera rays that a
/// level reaches for the first time makes one frame render again on one device, not on each.
#[derive(Clone, Debug, Default)]
pub struct FrameHistory(Arc<Mutex<TreeHistory>>);

impl std::ops::Deref for GpuBackend {
    type Target = GpuCore;

    fn deref(&self) -> &GpuCore {
        &self.core
    }
}

impl GpuBackend {
    /// Compiles the pipeline's kernels on `ctx`: the trace kernel without naga's runtime checks
    /// (it finds the same hits, faster: docs/performance.md), the others with them.
    pub fn new(ctx: Arc<GpuContext>) -> Result<GpuBackend, GpuError> {
        GpuBackend::with_trace_checks(ctx, Checks::Unchecked)
    }

    /// [`GpuBackend::new`] with the trace kernel created `trace_checks` (tests compare the
    /// checked and unchecked kernels' hits).
    pub fn with_trace_checks(
        ctx: Arc<GpuContext>,
        trace_checks: Checks,
    ) -> Result<GpuBackend, GpuError> {
        // The kernels side by side on rayon's threads, the primitives beside them.
        let (whitted, prims) = rayon::join(|| WhittedKernels::new(&ctx), || Primitives::new(&ctx));
        Ok(GpuBackend {
            whitted: whitted?,
            trace_checks,
            traversal: Default::default(),
            vd: Mutex::new(None),
            photons: Mutex::new(None),
            middle_build: Mutex::new(None),
            kdtree: Mutex::new(None),
            resident: Mutex::new(ResidentScene::default()),
            tree_sizes: FrameHistory::default(),
            core: GpuCore::new(ctx, prims?),
        })
    }

    /// The traversal kernels for a scene with (or without) VD patches and glossy materials,
    /// compiled on first use.
    pub(super) fn traversal_kernels(
        &self,
        scene: &Scene,
        prepared: &Prepared,
    ) -> Result<Arc<TraversalKernels>, GpuError> {
        let with_vd = !prepared.vd_patches.is_empty();
        let with_glossy = scene.materials.iter().any(|m| m.kind.is_glossy());
        let wide = prepared.layout == BvhLayout::Wide;
        let one = one_instance_loop(prepared);
        let grid = grid_walk(prepared);
        // The lock is only poisoned if a thread panicked while compiling, which Kernel::new
        // reports as an error instead.
        let mut slot = self.traversal[with_vd as usize
            + 2 * with_glossy as usize
            + 4 * wide as usize
            + 8 * one as usize
            + 16 * grid as usize]
            .lock()
            .unwrap();
        if let Some(k) = slot.as_ref() {
            return Ok(k.clone());
        }
        let defines: Vec<&str> = [
            (with_vd, "VD_PATCHES"),
            (with_glossy, "GLOSSY_MATERIALS"),
            (wide, "WIDE_BVH"),
            (one, "ONE_INSTANCE"),
            (grid, "GRID"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect();
        let defines = defines.as_slice();
        let kernel = |name: &str, checks| {
            Kernel::new(&self.ctx, &format!("whitted/{name}.wgsl"), defines, checks)
        };
        let (trace, (shade, shadow)) = rayon::join(
            || kernel("trace", self.trace_checks),
            || {
                rayon::join(
                    || kernel("shade", Checks::Checked),
                    || kernel("shadow", Checks::Checked),
                )
            },
        );
        let kernels = Arc::new(TraversalKernels {
            trace: trace?,
            shade: shade?,
            shadow: shadow?,
        });
        *slot = Some(kernels.clone());
        Ok(kernels)
    }

    /// The VD kernels for `prepared`'s deepest level, or `None` for a scene without VD patches.
    pub(super) fn vd_kernels(
        &self,
        prepared: &Prepared,
    ) -> Result<Option<Arc<VdKernels>>, GpuError> {
        if prepared.vd_patches.is_empty() {
            return Ok(None);
        }
        let level = prepared.vd_max_level;
        let mut slot = self.vd.lock().unwrap();
        if let Some((l, k)) = slot.as_ref() {
            if *l == level {
                return Ok(Some(k.clone()));
            }
        }
        let kernels = Arc::new(VdKernels::new(&self.ctx, level)?);
        *slot = Some((level, kernels.clone()));
        Ok(Some(kernels))
    }

    /// The kernels of the device's middle-level builds, compiled on first use.
    fn middle_build_kernels(&self) -> Result<Arc<MiddleBuildKernels>, GpuError> {
        // Only poisoned if a thread panicked while compiling, which Kernel::new reports as an
        // error instead.
        let mut slot = self.middle_build.lock().unwrap();
        if let Some(k) = slot.as_ref() {
            return Ok(k.clone());
        }
        let kernels = Arc::new(MiddleBuildKernels::new(&self.ctx)?);
        *slot = Some(kernels.clone());
        Ok(kernels)
    }

    /// Whether the adapter is a software renderer (such as lavapipe) rather than a GPU.
    pub fn is_software(&self) -> bool {
        self.ctx.info.device_type == format!("{:?}", wgpu::DeviceType::Cpu)
    }

    /// Opens a device the way the command line does and compiles the kernels.
    pub fn open(require_gpu: bool) -> Result<GpuBackend, GpuError> {
        GpuBackend::new(Arc::new(GpuContext::open(require_gpu)?))
    }

    /// Opens a device on the adapter with `index` in `adapters` and compiles the kernels: one
    /// device of a render on several, sharing `history` with the others.
    pub fn open_on(
        adapters: &AdapterSet,
        index: usize,
        history: &FrameHistory,
    ) -> Result<GpuBackend, GpuError> {
        Ok(GpuBackend::new(Arc::new(adapters.open(index)?))?.sharing(history))
    }

    /// This backend taking its shade-tree sizes from `history` and adding its frames' to it,
    /// with the other devices of a render.
    pub fn sharing(self, history: &FrameHistory) -> GpuBackend {
        GpuBackend {
            tree_sizes: history.clone(),
            ..self
        }
    }

    /// The photon kernels, compiled on first use.
    pub(super) fn photon_kernels(&self) -> Result<Arc<PhotonKernels>, GpuError> {
        // Only poisoned if a thread panicked while compiling, which Kernel::new reports instead.
        let mut slot = self.photons.lock().unwrap();
        if let Some(k) = slot.as_ref() {
            return Ok(k.clone());
        }
        let kernels = Arc::new(PhotonKernels::new(&self.ctx)?);
        *slot = Some(kernels.clone());
        Ok(kernels)
    }

    /// Traces `count` photons of `pass` for `scene` and reads the map back (tests and
    /// benchmarks). With VD patches, the camera rays choose the frame's levels first.
    pub fn trace_photons_vec(
        &self,
        scene: &Scene,
        prepared: &Prepared,
        pass: PhotonPass,
        count: u32,
    ) -> Result<(Vec<PhotonRecord>, PhotonPassStats), GpuError> {
        self.with_chosen_vd_levels(scene, prepared, |buffers, _, traversal, vd| {
            let map = self.trace_photon_pass(
                self.photon_kernels()?.as_ref(),
                scene,
                prepared,
                buffers,
                traversal,
                vd,
                pass,
                count,
            )?;
            let records: Vec<PhotonRecord> =
                read_buffer(&self.ctx, &map.records, map.count as usize)?;
            Ok((records, map.stats))
        })
    }

    /// (instance, prim) of the closest hit of the camera ray through each pixel centre and the
    /// lens centre, −1 for a miss, row by row: the GPU twin of `Tracer::primary_hit_id`. VD
    /// patches are at the frame's levels, which the camera samples choose first.
    pub fn primary_hit_ids(
        &self,
        scene: &Scene,
        prepared: &Prepared,
    ) -> Result<Vec<[f32; 2]>, GpuError> {
        self.with_chosen_vd_levels(scene, prepared, |buffers, params, kernels, vd| {
            self.centre_hit_ids(&self.whitted, kernels, buffers, params, vd)
        })
    }

    /// Runs `f` with the scene on the device, its frame parameters, its traversal kernels and
    /// its VD state, the levels chosen by every camera sample of the frame: where a query made
    /// outside a frame (the photons alone, the hit ids) starts.
    fn with_chosen_vd_levels<T>(
        &self,
        scene: &Scene,
        prepared: &Prepared,
        f: impl FnOnce(
            &SceneBuffers,
            FrameParams,
            &TraversalKernels,
            &mut Option<VdFrameGpu>,
        ) -> Result<T, GpuError>,
    ) -> Result<T, GpuError> {
        // A query is whole, like a frame: what the last one dropped is free now, and what this
        // one drops is free for the next.
        self.ctx.recycle_buffers()?;
        let buffers = upload_scene(&self.ctx, scene, prepared)?;
        let params = frame_params(scene, prepared);
        let kernels = self.traversal_kernels(scene, prepared)?;
        let vd_kernels = self.vd_kernels(prepared)?;
        let plan = FramePlan::new(scene, self.max_pass_rays(None));
        let largest = plan.passes.iter().map(|p| p.ray_slots()).max().unwrap_or(1);
        let mut vd = self.vd_frame(&vd_kernels, prepared, largest)?;
        self.choose_vd_levels(
            &self.whitted,
            &kernels,
            &buffers,
            params,
            &plan.passes,
            &mut vd,
        )?;
        let out = f(&buffers, params, &kernels, &mut vd)?;
        drop((buffers, vd));
        self.ctx.recycle_buffers()?;
        Ok(out)
    }

    /// Renders the frame: the plan's passes, each accumulated into the film, then the colour
    /// and the requested AOV layers with stage statistics. A pass whose buffers outgrow a
    /// binding (a deep level of glass, a large image) is cut in two and run again.
    pub fn render(
        &self,
        scene: &Scene,
        prepared: &Prepared,
        options: &RenderOptions,
    ) -> Result<Frame, GpuError> {
        self.render_sized(scene, prepared, options, true)
    }

    /// [`GpuBackend::render`], the shade trees' levels taking their room from the last frames'
    /// sizes if `sized` (and there are some), else reading each level's count as it comes.
    fn render_sized(
        &self,
        scene: &Scene,
        prepared: &Prepared,
        options: &RenderOptions,
        sized: bool,
    ) -> Result<Frame, GpuError> {
        let start = Instant::now();
        let ctx = &self.ctx;
        // What the last frame dropped after its end (nothing of it is in flight) is free now.
        ctx.recycle_buffers()?;
        // The device clock times this frame's submissions only, the host clock its stages.
        ctx.reset_clocks();
        // Checks an earlier frame deferred and left (it stopped with an error) are not this
        // frame's.
        ctx.take_deferred_checks();
        let traffic = ctx.traffic.snapshot();
        let pool_before = ctx.pool.counters();
        ctx.set_stage("upload");
        let clock = Instant::now();
        // Only poisoned if a thread panicked while uploading; the next frame uploads anew.
        let (buffers, device_builds) = {
            let mut resident = self.resident.lock().unwrap_or_else(|e| {
                let mut guard = e.into_inner();
                *guard = ResidentScene::default();
                guard
            });
            let buffers = resident.update(ctx, scene, prepared)?;
            // The middle levels this device builds itself (`--accel wide:gpu_lbvh`) that its
            // arrays do not hold yet.
            let stale = resident.stale_device_builds(prepared);
            let report = if stale.is_empty() {
                MiddleBuildReport::default()
            } else {
                ctx.set_stage("middle_build");
                let report = self.middle_build_kernels()?.build(
                    ctx,
                    &self.prims,
                    prepared,
                    &stale,
                    &buffers,
                )?;
                resident.device_trees_built(prepared, &stale);
                report
            };
            (buffers, report)
        };
        let upload_ms = clock.elapsed().as_secs_f64() * 1e3;
        let plan = FramePlan::new(scene, self.max_pass_rays(options.max_pass_rays));
        // The kernels the frame needs, compiled side by side on the first frame.
        let (kernels, photon_kernels) = rayon::join(
            || self.traversal_kernels(scene, prepared),
            || {
                (plan.global_map || plan.caustic_map)
                    .then(|| self.photon_kernels())
                    .transpose()
            },
        );
        let kernels = kernels?;
        photon_kernels?;
        let base = frame_params(scene, prepared);
        let (width, height, spp) = (base.width, base.height, base.spp);
        let pixels = (width * height) as u64;
        // Timestamps are read once a pass: room for every timed dispatch of a deep pass (a
        // level of glass takes about six, VD batches more).
        let mut timer = if options.phase_times {
            self.frame_timer(1024)
        } else {
            None
        };
        let mut frame = FrameState::new(ctx, scene, pixels as usize)?;
        frame.max_gather_rays = self.max_gather_rays(options.max_gather_rays);
        frame.progress = options.progress.clone().map(|p| (p, scene.frame));
        frame.passes = plan.passes.len() as u32;
        if sized {
            // Only poisoned if a thread panicked while holding it; the sizes are only a guess.
            frame.tree_sizes = self.tree_sizes.0.lock().map_or(None, |h| h.sizes());
        }
        frame.host("upload", upload_ms);
        let vd_kernels = self.vd_kernels(prepared)?;
        let largest = plan.passes.iter().map(|p| p.ray_slots()).max().unwrap_or(1);
        let mut vd = self.vd_frame(&vd_kernels, prepared, largest)?;
        let mut queue: VecDeque<PassPlan> = plan.passes.iter().copied().collect();
        let mut passes_run = 0u32;
        while let Some(pass) = queue.pop_front() {
            if !queue.is_empty() {
                // Several passes: every camera sample chooses the VD levels before any shading.
                let all = std::iter::once(&pass).chain(queue.iter());
                self.choose_vd_levels(&self.whitted, &kernels, &buffers, base, all, &mut vd)?;
            }
            frame.pass = passes_run;
            match self.render_pass(
                scene,
                prepared,
                &plan,
                &pass,
                &buffers,
                &kernels,
                &mut vd,
                &mut frame,
                &mut timer,
                !queue.is_empty(),
            ) {
                Ok(()) => passes_run += 1,
                Err(GpuError::BufferTooLarge { .. }) if pass.split().is_some() => {
                    // Report the size, cut, retry: the halves go first, in order.
                    if let Some((a, b)) = pass.split() {
                        queue.push_front(b);
                        queue.push_front(a);
                    }
                    frame.stats.pass_splits += 1;
                    frame.passes += 1;
                }
                Err(e) => return Err(e),
            }
        }
        self.collect_times(&mut timer, &mut frame.stats)?;
        ctx.set_stage("read_back");
        let clock = Instant::now();
        // The kernels' status words (checked before any of what they wrote reaches the host),
        // the passes' shadow-ray counts and the colour, with in w how many samples hit
        // something (the coverage), in one read-back.
        // The shade-tree levels' child counts, too (those not read while the trees were
        // recorded).
        let mut counted: Vec<(&GpuBuffer, u64)> =
            frame.shadow_counts.iter().map(|c| (&c.buffer, 0)).collect();
        counted.extend(TreeCounts::device_words(&frame.tree_counts));
        let (mut counts, (color, hits)) = read_checked_unzip(
            ctx,
            &counted,
            &frame.color,
            pixels as usize,
            |c: &[f32; 4]| (Vec3::new(c[0], c[1], c[2]), c[3]),
        )?;
        let tree_words = counts.split_off(frame.shadow_counts.len());
        frame.stats.shadow_rays += counts.iter().map(|&c| c as u64).sum::<u64>();
        match TreeSizes::of_passes(base.max_depth, &frame.tree_counts, &tree_words) {
            Ok((sizes, totals)) => {
                frame.stats.shade_tree_nodes += totals.nodes;
                frame.stats.specular_rays += totals.specular_rays;
                frame.stats.sized_tree_passes += totals.sized_passes;
                if let Ok(mut history) = self.tree_sizes.0.lock() {
                    history.push(sizes);
                }
            }
            // A level outgrew the room the last frame's sizes gave it: the frame again, its
            // levels' counts read as they come (which fit by construction).
            Err(outgrown) if frame.tree_sizes.is_some() => {
                log::info!(
                    "frame {}: shade-tree level {} held {} rays, room for {}: rendered again",
                    scene.frame,
                    outgrown.level,
                    outgrown.children,
                    outgrown.room
                );
                drop((frame, vd, buffers));
                self.keep_timer(timer);
                ctx.end_frame()?;
                let mut again = self.render_sized(scene, prepared, options, false)?;
                if let Some(gpu) = again.metadata.stats.gpu.as_mut() {
                    gpu.counters.shade_tree_retries += 1;
                }
                return Ok(again);
            }
            Err(outgrown) => {
                return Err(GpuError::Device(format!(
                "shade-tree level {} held {} rays, more than the room of {} its own count gave it",
                outgrown.level, outgrown.children, outgrown.room
            )))
            }
        }
        let mut photon_views = std::mem::take(&mut frame.views);
        if let Some(direct) = &frame.direct {
            photon_views.direct_part = frame.read_film(ctx, direct)?;
        }
        if let Some(caustic) = &frame.caustic {
            photon_views.caustic_part = frame.read_film(ctx, caustic)?;
        }
        if let Some(indirect) = &frame.indirect {
            photon_views.indirect_part = frame.read_film(ctx, indirect)?;
        }
        if scene.film.integrator != Integrator::PhotonMap {
            photon_views.direct_part = color.clone();
        }
        frame.host("read_films", clock.elapsed().as_secs_f64() * 1e3);
        ctx.set_stage("read_layers");
        // The coverage and the first-hit layers, summed on the device over the passes (the
        // normals and positions only where one of their layers is asked for).
        let pixels = pixels as usize;
        let mut first = FirstHitSums {
            hits,
            ..Default::default()
        };
        let xyz = |a: &[f32; 4]| Vec3::new(a[0], a[1], a[2]);
        let [albedo, shading, geometric, position] = &frame.first_hit_sums;
        if frame.albedo_layer {
            first.albedo = read_buffer_map(ctx, albedo, pixels, xyz)?;
        }
        if frame.first_hit_layers {
            first.shading_normal = read_buffer_map(ctx, shading, pixels, xyz)?;
            first.geometric_normal = read_buffer_map(ctx, geometric, pixels, xyz)?;
            first.position = read_buffer_map(ctx, position, pixels, xyz)?;
        }
        let first = first.resolve(spp, &scene.camera);
        let ids = if scene.output.layers.contains(&Aov::Id) {
            ctx.set_stage("ids");
            self.centre_hit_ids(&self.whitted, &kernels, &buffers, base, &mut vd)?
        } else {
            Vec::new()
        };
        ctx.set_stage("assemble");
        let aovs = aov_layers(&scene.output.layers, pixels, &first, &ids, &photon_views);
        let mut vd_stats = None;
        if let Some(v) = &vd {
            let s = &v.stats;
            let levels = v.levels(ctx)?;
            vd_stats = Some(VdStats {
                batches: Some(s.batches),
                records: Some(s.records),
                jobs: Some(s.jobs),
                retraces: Some(s.retraces),
                sort_ms: Some(s.sort_ms),
                build_trace_ms: Some(s.build_trace_ms),
                max_level: levels.iter().copied().max().unwrap_or(0),
                mean_level: levels.iter().map(|&l| l as f64).sum::<f64>()
                    / levels.len().max(1) as f64,
                record_queue_bytes: Some(s.record_queue_bytes()),
                scratch_bytes: Some(s.scratch_bytes),
                scene_bytes: Some(s.scene_bytes),
                scene_uploaded_bytes: Some(s.scene_uploaded_bytes),
                ..Default::default()
            });
        }
        let (scene_bytes, scene_uploaded) = (buffers.bytes, buffers.uploaded);
        // The frame's buffers go back to the pool (those the next frames do not take are
        // dropped after a while).
        let FrameState {
            stats,
            photon_maps,
            view_stats,
            gather,
            host_steps,
            ..
        } = frame;
        ctx.set_stage("end_frame");
        drop((vd, buffers));
        self.keep_timer(timer);
        ctx.end_frame()?;
        let seconds = start.elapsed().as_secs_f64();
        // Kernels this frame compiled go to the disk cache (after the frame's time is taken).
        ctx.save_pipeline_cache();
        let mut frame_stats = FrameStats {
            photon_maps,
            gather,
            vd: vd_stats,
            ..Default::default()
        };
        frame_stats.add_view_searches(&view_stats);
        let mut gpu = GpuFrameStats {
            host_steps,
            ..Default::default()
        };
        stats.fill(seconds, ctx, &mut frame_stats.whitted, &mut gpu);
        gpu.counters.scene_bytes = scene_bytes;
        gpu.counters.scene_uploaded_bytes = scene_uploaded;
        gpu.counters.passes = passes_run;
        // The frame's traffic with the device, the scene's upload included.
        gpu.traffic = ctx.traffic.since(traffic);
        gpu.host_busy = ctx.read_host_clock();
        if let Some(clock) = ctx.read_device_clock()? {
            gpu.device_busy = clock.by_stage;
            gpu.device_idle = clock.idle_by_stage;
            gpu.counters.device_ms = Some(clock.device_ms);
            gpu.counters.timed_submissions = Some(clock.submissions);
            gpu.counters.untimed_submissions = Some(clock.untimed);
        }
        if let Some(kernels) = ctx.read_kernel_times()? {
            gpu.kernels = kernels;
        }
        let pool = ctx.pool.counters();
        gpu.counters.pool_reused = pool.reused - pool_before.reused;
        gpu.counters.pool_held_bytes = pool.held_bytes;
        gpu.counters.device_builds = device_builds.meshes;
        gpu.counters.device_build_prims = device_builds.prims;
        gpu.counters.device_build_nodes = device_builds.nodes;
        gpu.counters.device_build_depth = device_builds.depth;
        gpu.counters.device_build_ms = device_builds.ms;
        frame_stats.gpu = Some(gpu);
        Ok(Frame {
            width,
            height,
            color,
            alpha: first.alpha,
            aovs,
            metadata: FrameMetadata::of(
                scene,
                format!("{} ({})", ctx.info.name, ctx.info.backend),
                seconds,
                frame_stats,
            ),
        })
    }

    /// One pass of the frame: camera rays, the shade-tree levels with their shadow rays and
    /// specular children, photon mapping's composition (the frame's photon maps, traced on the
    /// first pass), then the trees accumulated into the film and the pass's first hits into
    /// the AOV sums. Nothing of the frame's film changes unless the whole pass succeeds.
    #[allow(clippy::too_many_arguments)]
    fn render_pass(
        &self,
        scene: &Scene,
        prepared: &Prepared,
        plan: &FramePlan,
        pass: &PassPlan,
        buffers: &SceneBuffers,
        kernels: &TraversalKernels,
        vd: &mut Option<VdFrameGpu>,
        frame: &mut FrameState,
        timer: &mut Option<Timer>,
        more_passes: bool,
    ) -> Result<(), GpuError> {
        let ctx = &self.ctx;
        let photon_map = scene.film.integrator == Integrator::PhotonMap;
        let base = pass_params(frame_params(scene, prepared), pass);
        let mut pass_stats = StageStats::default();
        let maps_needed = frame.maps.is_none() && (plan.global_map || plan.caustic_map);
        frame.report(if maps_needed {
            Phase::Photons
        } else {
            Phase::Shading
        });
        ctx.set_stage("camera_rays");
        let mut clock = Instant::now();
        let (rays, hits, ray_count) = self.primary_rays_and_hits(
            &self.whitted,
            kernels,
            buffers,
            base,
            pass.ray_slots(),
            false,
            vd,
            timer,
        )?;
        if let Some(v) = vd.as_mut() {
            // A lone pass's camera trace has just chosen the levels from every sample.
            v.chosen = true;
        }
        pass_stats.primary_rays += pass_pixel_samples(pass, &base);
        frame.lap("camera_rays", &mut clock);
        let views_wanted = [Aov::PhotonsGlobal, Aov::PhotonsCaustic]
            .iter()
            .any(|a| scene.output.layers.contains(a));
        // Without VD patches (whose photon passes wait for their batches) and without the maps'
        // debug views (which read the camera rays before the shade trees take them), the maps
        // are traced a step at a time while the host waits for the shade trees' levels: the
        // device traces photons and builds trees instead of standing idle at every level.
        let mut map_steps =
            (maps_needed && vd.is_none() && !views_wanted).then(|| MapSteps::new(plan, scene));
        let photon_kernels = if maps_needed {
            Some(self.photon_kernels()?)
        } else {
            None
        };
        if let (None, Some(photon_kernels)) = (&map_steps, &photon_kernels) {
            let (maps, map_stats) = self.trace_frame_maps(
                photon_kernels,
                scene,
                prepared,
                buffers,
                kernels,
                vd,
                plan,
                &|| frame.report(Phase::KdTrees),
            )?;
            frame.photon_maps.extend(map_stats);
            frame.maps = Some(maps);
            frame.lap("photon_maps", &mut clock);
        }
        // The photon maps' debug views, from the camera rays' first hits.
        ctx.set_stage("photon_views");
        let (pass_views, view_stats) = match &frame.maps {
            Some(maps) => self.photon_views(
                self.photon_kernels()?.as_ref(),
                scene,
                prepared,
                buffers,
                maps,
                &rays,
                &hits,
                ray_count,
            )?,
            None => (PhotonViews::default(), Vec::new()),
        };
        frame.lap("photon_views", &mut clock);

        // The Whitted shade trees: every level's shading, shadow rays and specular children.
        frame.report(Phase::Shading);
        ctx.set_stage("shade_trees");
        // The next step of the maps (without VD patches), and whether there was one.
        let step_maps = |steps: &mut MapSteps| match &photon_kernels {
            Some(k) => self.map_step(steps, k, scene, prepared, buffers, kernels, &mut None),
            None => Ok(false),
        };
        // The maps' first step goes ahead of the first level, so that the device traces photons
        // while the host records that level's shading.
        if let Some(steps) = map_steps.as_mut() {
            step_maps(steps)?;
        }
        let ShadeTrees {
            levels,
            first_hits,
            shadow_counts,
            counts: tree_counts,
        } = self.shade_trees(
            &self.whitted,
            kernels,
            buffers,
            base,
            (rays, hits, ray_count),
            vd,
            timer,
            frame.tree_sizes.as_ref(),
            &mut || match map_steps.as_mut() {
                Some(steps) => step_maps(steps).map(|_| ()),
                None => Ok(()),
            },
        )?;
        // The maps' steps the levels left.
        if let Some(mut steps) = map_steps {
            while step_maps(&mut steps)? {}
            let (maps, map_stats) = steps.finish();
            frame.photon_maps.extend(map_stats);
            frame.maps = Some(maps);
        }
        frame.lap("shade_trees", &mut clock);

        // Photon mapping's layers: copies of the trees holding the direct light (before the
        // composition) or one component alone, accumulated like the colour.
        let wants = |a: Aov| photon_map && scene.output.layers.contains(&a);
        ctx.set_stage("layers");
        let copy_levels = |levels: &[ShadeLevel]| -> Result<Vec<(GpuBuffer, u64)>, GpuError> {
            let mut encoder = Encoder::new(ctx);
            let mut out = Vec::new();
            for l in levels {
                let copy = storage_buffer_sized(ctx, "layer nodes", l.nodes.size())?;
                encoder.copy_buffer_to_buffer(&l.nodes, 0, &copy, 0, l.nodes.size());
                out.push((copy, l.count));
            }
            ctx.submit([encoder.finish()]);
            Ok(out)
        };
        let direct_levels = if wants(Aov::Direct) {
            Some(copy_levels(&levels)?)
        } else {
            None
        };
        // Photon mapping adds caustics and indirect light to the diffuse nodes.
        let composed = match (&frame.maps, photon_map) {
            (Some(maps), true) => Some(self.compose_photon_map(
                &self.photon_kernels()?.gather_stage(),
                scene,
                prepared,
                buffers,
                kernels,
                vd,
                maps,
                &frame.precomputed,
                &levels,
                frame.max_gather_rays,
                &|phase| frame.report(phase),
            )?),
            _ => None,
        };
        frame.lap("compose", &mut clock);
        frame.report(Phase::Layers);
        ctx.set_stage("layers");
        let mut layer_levels = Vec::new();
        if let Some(out) = &composed {
            for (aov, mode) in [
                (Aov::Caustic, super::upload::COMPOSE_CAUSTIC),
                (Aov::Indirect, super::upload::COMPOSE_INDIRECT),
            ] {
                if !wants(aov) {
                    continue;
                }
                let copies = copy_levels(&levels)?;
                let refs: Vec<&GpuBuffer> = copies.iter().map(|(b, _)| b).collect();
                self.apply_components(
                    &self.photon_kernels()?.gather_stage(),
                    &refs,
                    &out.parts,
                    mode,
                    base,
                )?;
                layer_levels.push((aov, copies));
            }
        }
        frame.lap("layers", &mut clock);
        // Everything that can fail has run: the pass goes into the film.
        ctx.set_stage("film");
        let level_nodes: Vec<(GpuBuffer, u64)> =
            levels.into_iter().map(|l| (l.nodes, l.count)).collect();
        let whitted = &self.whitted;
        self.accumulate_and_resolve(
            whitted,
            &level_nodes,
            &first_hits,
            base,
            &frame.color,
            timer,
        )?;
        if let (Some(copies), Some(film)) = (&direct_levels, &frame.direct) {
            self.accumulate_and_resolve(whitted, copies, &first_hits, base, film, &mut None)?;
        }
        for (aov, copies) in &layer_levels {
            let film = match aov {
                Aov::Caustic => frame.caustic.as_ref(),
                _ => frame.indirect.as_ref(),
            };
            if let Some(film) = film {
                self.accumulate_and_resolve(whitted, copies, &first_hits, base, film, &mut None)?;
            }
        }
        // The pass's first hits into the first-hit layers asked for.
        if frame.albedo_layer || frame.first_hit_layers {
            let [albedo, shading, geometric, position] = &frame.first_hit_sums;
            self.resolve_aovs(
                &self.whitted,
                &first_hits,
                base,
                pass.ray_slots(),
                [albedo, shading, geometric, position],
            )?;
        }
        frame.lap("accumulate", &mut clock);
        frame.views.add(&pass_views);
        if let Some(out) = composed {
            frame.views.add(&PhotonViews {
                seeds: out.seeds_per_pixel,
                ..Default::default()
            });
            // Each pass composes: its figures join the frame's.
            GatherStats::join_pass(&mut frame.gather, out.stats, frame.composed);
            frame.composed += 1;
        }
        frame.view_stats.extend(view_stats);
        // The shadow rays are counted on the device and read with the frame's status words, at
        // its end: no wait here.
        frame.shadow_counts.extend(shadow_counts);
        frame.tree_counts.push(tree_counts);
        self.collect_times(timer, &mut pass_stats)?;
        frame.stats.add(&pass_stats);
        if more_passes {
            // Every encoder of the pass has been submitted: its dropped buffers serve the next
            // (after the last pass, the frame's end recycles them).
            ctx.recycle_buffers()?;
        }
        Ok(())
    }
}

/// The camera samples of `pass` that get a ray: those of its tiles' pixels inside the image
/// and inside the crop `[x0, x1) × [y0, y1)` of `base` (padding slots excluded).
fn pass_pixel_samples(pass: &PassPlan, base: &FrameParams) -> u64 {
    let tiles_x = crate::render::plan::tiles_across(base.width);
    let (cx1, cy1) = (base.crop_x1.min(base.width), base.crop_y1.min(base.height));
    let mut pixels = 0u64;
    for t in pass.tile_start..pass.tile_start + pass.tiles {
        let (x0, y0) = ((t % tiles_x) * TILE_SIDE, (t / tiles_x) * TILE_SIDE);
        let span = |lo: u32, from: u32, to: u32| {
            (lo + TILE_SIDE).min(to).saturating_sub(lo.max(from)) as u64
        };
        pixels += span(x0, base.crop_x0, cx1) * span(y0, base.crop_y0, cy1);
    }
    pixels * pass.samples as u64
}

/// What a frame accumulates over its passes: the films on the GPU, the AOV sums and photon
/// views on the host, the frame's photon maps and the statistics.
struct FrameState {
    color: GpuBuffer,
    direct: Option<GpuBuffer>,
    caustic: Option<GpuBuffer>,
    indirect: Option<GpuBuffer>,
    /// On the device, the sums over the samples of the first hits' albedo, shading normals,
    /// geometric normals and positions, where the layers ask for them; otherwise one-element
    /// stand-ins (`resolve_aovs.wgsl` sees that). The samples that hit are counted in the
    /// colour film's w.
    first_hit_sums: [GpuBuffer; 4],
    /// Whether the albedo sums, and the other three sums, are made.
    albedo_layer: bool,
    first_hit_layers: bool,
    views: PhotonViews,
    maps: Option<FrameMaps>,
    /// The global map's irradiance photons, made by the frame's first composition.
    precomputed: PrecomputedIrradiance,
    photon_maps: Vec<PhotonMapStats>,
    /// Each pass's photon-map debug views: the map, its searches and their rate.
    view_stats: Vec<ViewSearches>,
    /// The shadow rays of every shade-tree level of the passes so far, counted on the device
    /// and read at the frame's end.
    shadow_counts: Vec<CountBuffer>,
    /// The shade-tree levels' counts of every pass so far, checked at the frame's end.
    tree_counts: Vec<TreeCounts>,
    /// The sizes the levels take their room from (the last frames'), if any.
    tree_sizes: Option<TreeSizes>,
    /// The gather figures of the passes so far, and how many passes composed.
    gather: Option<GatherStats>,
    composed: u32,
    /// The wall time of each step on the host (`host/…_ms`), submission and any waits
    /// included, summed over the passes.
    host_steps: StageTimes,
    stats: StageStats,
    /// The most gather rays the final gather traces at once (`GpuCore::max_gather_rays`).
    max_gather_rays: u64,
    /// Where the phases are reported, and the frame's number.
    progress: Option<(ProgressSink, i64)>,
    /// The pass being rendered (from 0) and the passes so far planned (splits add some).
    pass: u32,
    passes: u32,
}

impl FrameState {
    fn new(ctx: &GpuContext, scene: &Scene, pixels: usize) -> Result<FrameState, GpuError> {
        let film = |label: &str| storage_buffer_sized(ctx, label, pixels as u64 * 16);
        let albedo_layer = scene.output.layers.contains(&Aov::Albedo);
        let first_hit_layers = [Aov::Normal, Aov::Depth, Aov::Position]
            .iter()
            .any(|a| scene.output.layers.contains(a));
        // A layer's sums, or one vec4 the kernel leaves alone (it checks the length; only a
        // one-pixel image fills it, and nothing reads it).
        let sized = |label: &str, wanted: bool| {
            storage_buffer_sized(ctx, label, if wanted { pixels as u64 * 16 } else { 16 })
        };
        let photon_map = scene.film.integrator == Integrator::PhotonMap;
        let wants = |a: Aov| photon_map && scene.output.layers.contains(&a);
        let layer = |a: Aov, label: &str| wants(a).then(|| film(label)).transpose();
        Ok(FrameState {
            color: film("film")?,
            direct: layer(Aov::Direct, "direct film")?,
            caustic: layer(Aov::Caustic, "caustic film")?,
            indirect: layer(Aov::Indirect, "indirect film")?,
            first_hit_sums: [
                sized("albedo sums", albedo_layer)?,
                sized("shading normal sums", first_hit_layers)?,
                sized("geometric normal sums", first_hit_layers)?,
                sized("position sums", first_hit_layers)?,
            ],
            albedo_layer,
            first_hit_layers,
            views: PhotonViews::default(),
            maps: None,
            precomputed: PrecomputedIrradiance::new(),
            photon_maps: Vec::new(),
            view_stats: Vec::new(),
            shadow_counts: Vec::new(),
            tree_counts: Vec::new(),
            tree_sizes: None,
            gather: None,
            composed: 0,
            host_steps: StageTimes::default(),
            stats: StageStats::default(),
            max_gather_rays: u64::MAX,
            progress: None,
            pass: 0,
            passes: 1,
        })
    }

    /// Reports that the pass being rendered entered `phase`.
    fn report(&self, phase: Phase) {
        if let Some((sink, frame)) = &self.progress {
            sink.step(*frame, phase, self.pass, self.passes, 0.0);
        }
    }

    /// Records `ms` of host wall time under `name`.
    fn host(&mut self, name: &str, ms: f64) {
        self.host_steps.add(name, ms);
    }

    /// Records the time since `clock` under `name` and restarts it.
    fn lap(&mut self, name: &str, clock: &mut Instant) {
        self.host(name, clock.elapsed().as_secs_f64() * 1e3);
        *clock = Instant::now();
    }

    /// The pixels of a film.
    fn read_film(&self, ctx: &GpuContext, film: &GpuBuffer) -> Result<Vec<Vec3>, GpuError> {
        read_buffer_map(ctx, film, (film.size() / 16) as usize, |c: &[f32; 4]| {
            Vec3::new(c[0], c[1], c[2])
        })
    }
}

impl Backend for GpuBackend {
    fn name(&self) -> String {
        self.ctx.info.name.clone()
    }

    /// The wide BVH: its frames are the fastest on the lent H200 (docs/performance.md, "The wide
    /// compressed BVH").
    fn preferred_layout(&self) -> BvhLayout {
        BvhLayout::Wide
    }

    fn builds_on_device(&self) -> bool {
        true
    }

    fn kdtree_device(&self) -> Option<&dyn KdTreeDevice> {
        Some(self)
    }

    fn render_frame(
        &self,
        scene: &Scene,
        prepared: &Prepared,
        options: &RenderOptions,
    ) -> Result<Frame, RenderError> {
        self.render(scene, prepared, options)
            .map_err(|e| RenderError::DeviceUnavailable(e.to_string()))
    }
}
