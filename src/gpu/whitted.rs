//! The Whitted ray tracer on the GPU as a wavefront that builds shade trees and evaluates them
//! bottom-up (paper 003 sections 5.1.2-5.1.3); the GPU twin of `cpu::whitted`.
//!
//! Ray `i` of bounce `L` is node `i` of level `L` of the shade trees (`GpuShadeNode`, 32 bytes:
//! the hit state in 2 bits with the index of the first child in the next level, the node's own
//! light, a weight and the Fresnel coefficient). Stages per frame (one WGSL kernel each, under
//! `shaders/whitted/`):
//! 1. `primary`: one ray per (pixel, sample), threads mapped to pixels in 8×8 Morton tiles;
//! 2. `trace`: the fused two-level QBVH traversal with the compact stack (closest hit);
//! 3. per chunk of the level (the chunks bound the shadow slots to one storage binding):
//!    `shade` writes each ray's node, its shadow rays into its own `shadows_per_hit` slots and
//!    its child rays as candidates `2i` (reflected) and `2i + 1` (refracted), each with a 0/1
//!    flag; the compaction of the data-parallel primitives (`Primitives::compact`) lists the used
//!    shadow slots in order; `shadow` traces them and zeroes the blocked ones; `direct` sums each
//!    diffuse node's slots into its own light;
//! 4. `spawn`: an exclusive scan of the child flags (`Primitives::exclusive_scan`) gives each
//!    child its index in the next level, stable in the parents' order, so a dielectric's two
//!    children sit next to each other; `spawn` scatters them and links the parent to the first;
//!
//! then 2–4 again for each specular bounce up to `film.max_depth`, and at last:
//! 5. `accumulate`, level by level from the deepest: a node's colour is its own light plus its
//!    children's colours times their weights (`fresnel`, `(1 - fresnel) · tint`, reflectance);
//! 6. `resolve`: one invocation per pixel averages its `spp` camera nodes.
//!
//! Every sum has one writer and a fixed order (a shadow ray owns its slot, a node sums its slots
//! and its children in index order, a pixel its samples), so the image is the same bit for bit
//! from run to run without float or integer atomics.
//!
//! Random numbers: each ray carries the next dimension of its (pixel, sample) stream. Camera
//! rays, mirror chains and the reflected branch of a dielectric read the same numbers as the CPU;
//! the refracted branch of a dielectric continues at the dimension of its parent, while the CPU's
//! recursion continues after the reflected branch's numbers, so quad-light samples seen through
//! a refraction use other (equally distributed) numbers than the CPU.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use glam::Vec3;
use rayon::prelude::*;

use super::context::{GpuContext, GpuError};
use super::core::{GpuCore, ShadeLevel, StageStats, Timer, TraversalKernels};
use super::kernel::{read_buffer, storage_buffer_sized, uniform_buffer, Checks, Kernel};
use super::maps::FrameMaps;
use super::photons::PhotonKernels;
use super::prims::{CountBuffer, Primitives};
use super::upload::{
    frame_params, upload_scene, FrameParams, GpuFirstHit, GpuHit, GpuRay, GpuShadeNode,
    GpuShadingPoint, GpuShadowRay, SceneBuffers, NONE,
};
use super::vd_pipeline::{VdFrameGpu, VdKernels};
use crate::accel::photon_estimate::PhotonRecord;
use crate::accel::Prepared;
use crate::render::photons::{PhotonPass, PhotonPassStats};
use crate::render::plan::{pass_slot, tile_count, FramePlan, PassPlan, TILE_SIDE};
use crate::render::stats::merge_counters;
use crate::render::{
    aov_layers, Backend, Frame, FrameMetadata, PhotonViews, RenderError, RenderOptions,
};
use crate::scene::{Aov, Integrator, Scene};

/// The most child candidates of one level: a node's link holds its first child's index in 30
/// bits (`NODE_CHILD_MASK` in `shaders/shared/types.wgsl`).
const NODE_CHILD_LIMIT: u32 = 1 << 30;

/// The GPU backend: the Whitted pipeline's kernels on one device.
pub struct GpuBackend {
    /// The device and what every stage uses on it (the backend derefs to it).
    core: GpuCore,
    primary: Kernel,
    direct: Kernel,
    spawn: Kernel,
    accumulate: Kernel,
    resolve: Kernel,
    trace_checks: Checks,
    /// The kernels that traverse the scene, compiled on first use: [without, with] the VD-patch
    /// traversal code (`VD_PATCHES`), which costs a kernel that never runs it about 10% of its
    /// ray rate (docs/performance.md).
    traversal: [Mutex<Option<Arc<TraversalKernels>>>; 2],
    /// The VD bottom-level kernels for the deepest level they were compiled for.
    vd: Mutex<Option<(u32, Arc<VdKernels>)>>,
    /// The photon-tracing kernels, compiled on first use.
    photons: Mutex<Option<Arc<PhotonKernels>>>,
}

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
        let names = ["primary", "direct", "spawn", "accumulate", "resolve"];
        let (kernels, prims) = rayon::join(
            || {
                names
                    .par_iter()
                    .map(|n| Kernel::new(&ctx, &format!("whitted/{n}.wgsl"), &[], Checks::Checked))
                    .collect::<Result<Vec<Kernel>, GpuError>>()
            },
            || Primitives::new(&ctx),
        );
        let [primary, direct, spawn, accumulate, resolve]: [Kernel; 5] = kernels?
            .try_into()
            .map_err(|_| GpuError::Device("the Whitted kernels did not all compile".into()))?;
        Ok(GpuBackend {
            primary,
            direct,
            spawn,
            accumulate,
            resolve,
            trace_checks,
            traversal: [Mutex::new(None), Mutex::new(None)],
            vd: Mutex::new(None),
            photons: Mutex::new(None),
            core: GpuCore::new(ctx, prims?),
        })
    }

    /// The traversal kernels for a scene with (or without) VD patches, compiled on first use.
    pub(super) fn traversal_kernels(
        &self,
        prepared: &Prepared,
    ) -> Result<Arc<TraversalKernels>, GpuError> {
        let with_vd = !prepared.vd_patches.is_empty();
        // The lock is only poisoned if a thread panicked while compiling, which Kernel::new
        // reports as an error instead.
        let mut slot = self.traversal[with_vd as usize].lock().unwrap();
        if let Some(k) = slot.as_ref() {
            return Ok(k.clone());
        }
        let defines: &[&str] = if with_vd { &["VD_PATCHES"] } else { &[] };
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

    /// Whether the adapter is a software renderer (such as lavapipe) rather than a GPU.
    pub fn is_software(&self) -> bool {
        self.ctx.info.device_type == format!("{:?}", wgpu::DeviceType::Cpu)
    }

    /// Opens a device the way the command line does and compiles the kernels.
    pub fn open(require_gpu: bool) -> Result<GpuBackend, GpuError> {
        GpuBackend::new(Arc::new(GpuContext::open(require_gpu)?))
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
        let buffers = upload_scene(&self.ctx, scene, prepared)?;
        let params = frame_params(scene, prepared);
        let traversal = self.traversal_kernels(prepared)?;
        let vd_kernels = self.vd_kernels(prepared)?;
        let plan = FramePlan::new(scene, self.max_pass_rays(None));
        let largest = plan.passes.iter().map(|p| p.ray_slots()).max().unwrap_or(1);
        let mut vd = self.vd_frame(&vd_kernels, prepared, largest)?;
        self.choose_vd_levels(&traversal, &buffers, params, &plan.passes, &mut vd)?;
        let map = self.trace_photon_pass(
            self.photon_kernels()?.as_ref(),
            scene,
            prepared,
            &buffers,
            &traversal,
            &mut vd,
            &mut None,
            pass,
            count,
        )?;
        let records: Vec<PhotonRecord> = read_buffer(&self.ctx, &map.records, map.count as usize)?;
        Ok((records, map.stats))
    }

    /// Generates the camera rays of one pass (`params` from [`pass_params`], `slots` the pass's
    /// camera-ray slots), or with `centre_rays` one through each pixel centre and the lens
    /// centre, and traces them: the rays and their closest hits, slot by slot. Until
    /// `vd.chosen` is set, the trace chooses the frame's VD levels from these rays.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn primary_rays_and_hits(
        &self,
        kernels: &TraversalKernels,
        scene_buffers: &SceneBuffers,
        mut params: FrameParams,
        slots: u64,
        centre_rays: bool,
        vd: &mut Option<VdFrameGpu>,
        timer: &mut Option<Timer>,
    ) -> Result<(wgpu::Buffer, wgpu::Buffer, u64), GpuError> {
        let ray_count = u32::try_from(slots).map_err(|_| {
            GpuError::Device(format!(
                "{slots} camera rays are more than 32-bit indices address"
            ))
        })?;
        params.ray_count = ray_count;
        params.centre_rays = centre_rays as u32;
        let params_buffer = uniform_buffer(&self.ctx, "params", &params);
        let rays = storage_buffer_sized(
            &self.ctx,
            "camera rays",
            slots * std::mem::size_of::<GpuRay>() as u64,
        )?;
        let hits = storage_buffer_sized(
            &self.ctx,
            "camera hits",
            slots * std::mem::size_of::<GpuHit>() as u64,
        )?;
        let primary_bind = self
            .primary
            .bind(&self.ctx, &[("params", &params_buffer), ("rays", &rays)])?;
        let mut encoder = self.ctx.device.create_command_encoder(&Default::default());
        self.dispatch_timed(
            &mut encoder,
            &self.primary,
            &primary_bind,
            slots,
            timer,
            "primary",
        );
        self.ctx.queue.submit([encoder.finish()]);
        self.trace_rays(
            kernels,
            scene_buffers,
            params,
            &rays,
            &hits,
            vd,
            timer,
            "primary trace",
        )?;
        Ok((rays, hits, slots))
    }

    /// Chooses the frame's VD levels from every camera sample of `passes` (the CPU twin's
    /// rule) by tracing each pass's camera rays once, unless they are chosen already. Nothing
    /// to do without VD patches.
    pub(super) fn choose_vd_levels<'a>(
        &self,
        kernels: &TraversalKernels,
        buffers: &SceneBuffers,
        base: FrameParams,
        passes: impl IntoIterator<Item = &'a PassPlan>,
        vd: &mut Option<VdFrameGpu>,
    ) -> Result<(), GpuError> {
        if vd.as_ref().is_none_or(|v| v.chosen) {
            return Ok(());
        }
        for pass in passes {
            let params = pass_params(base, pass);
            self.primary_rays_and_hits(
                kernels,
                buffers,
                params,
                pass.ray_slots(),
                false,
                vd,
                &mut None,
            )?;
        }
        if let Some(v) = vd.as_mut() {
            v.chosen = true;
        }
        Ok(())
    }

    /// (instance, prim) of the closest hit of the camera ray through each pixel centre and the
    /// lens centre, −1 for a miss, row by row: the GPU twin of `Tracer::primary_hit_id`. VD
    /// patches are at the frame's levels, which the camera samples choose first.
    pub fn primary_hit_ids(
        &self,
        scene: &Scene,
        prepared: &Prepared,
    ) -> Result<Vec<[f32; 2]>, GpuError> {
        let buffers = upload_scene(&self.ctx, scene, prepared)?;
        let params = frame_params(scene, prepared);
        let kernels = self.traversal_kernels(prepared)?;
        let vd_kernels = self.vd_kernels(prepared)?;
        let plan = FramePlan::new(scene, self.max_pass_rays(None));
        let largest = plan.passes.iter().map(|p| p.ray_slots()).max().unwrap_or(1);
        let mut vd = self.vd_frame(&vd_kernels, prepared, largest)?;
        self.choose_vd_levels(&kernels, &buffers, params, &plan.passes, &mut vd)?;
        self.centre_hit_ids(&kernels, &buffers, params, &mut vd)
    }

    /// [`GpuBackend::primary_hit_ids`] with the scene uploaded and the VD levels chosen.
    fn centre_hit_ids(
        &self,
        kernels: &TraversalKernels,
        buffers: &SceneBuffers,
        base: FrameParams,
        vd: &mut Option<VdFrameGpu>,
    ) -> Result<Vec<[f32; 2]>, GpuError> {
        let whole = PassPlan {
            sample_start: 0,
            samples: 1,
            tile_start: 0,
            tiles: tile_count(base.width, base.height),
        };
        let params = pass_params(base, &whole);
        let (rays, hits, slots) = self.primary_rays_and_hits(
            kernels,
            buffers,
            params,
            whole.ray_slots(),
            true,
            vd,
            &mut None,
        )?;
        let rays: Vec<GpuRay> = read_buffer(&self.ctx, &rays, slots as usize)?;
        let hits: Vec<GpuHit> = read_buffer(&self.ctx, &hits, slots as usize)?;
        let mut ids = vec![[-1.0f32; 2]; (base.width * base.height) as usize];
        for (ray, hit) in rays.iter().zip(&hits) {
            if ray.pixel != NONE && hit.instance != NONE {
                ids[ray.pixel as usize] = [hit.instance as f32, hit.prim as f32];
            }
        }
        Ok(ids)
    }

    /// The shade trees' bottom-up accumulation, deepest level first, then the pass's camera
    /// nodes into the film (each pixel gains the sum of its pass samples over the frame's spp):
    /// `levels` are nodes and node count per level, camera level first; `params` the pass's.
    /// The node buffers end up holding colours.
    fn accumulate_and_resolve(
        &self,
        levels: &[(wgpu::Buffer, u64)],
        params: FrameParams,
        film: &wgpu::Buffer,
        timer: &mut Option<Timer>,
    ) -> Result<(), GpuError> {
        let ctx = &self.ctx;
        let pixels = (params.width * params.height) as u64;
        let mut encoder = ctx.device.create_command_encoder(&Default::default());
        let mut level_params = Vec::new();
        for pair in levels.windows(2).rev() {
            let (nodes, count, child_nodes) = (&pair[0].0, &pair[0].1, &pair[1].0);
            let params_buffer = uniform_buffer(
                ctx,
                "params",
                &FrameParams {
                    ray_count: *count as u32,
                    ..params
                },
            );
            let bind = self.accumulate.bind(
                ctx,
                &[
                    ("params", &params_buffer),
                    ("nodes", nodes),
                    ("child_nodes", child_nodes),
                ],
            )?;
            self.dispatch_timed(
                &mut encoder,
                &self.accumulate,
                &bind,
                *count,
                timer,
                "accumulate",
            );
            level_params.push(params_buffer);
        }
        let resolve_params = uniform_buffer(
            ctx,
            "params",
            &FrameParams {
                ray_count: levels[0].1 as u32,
                ..params
            },
        );
        let resolve_bind = self.resolve.bind(
            ctx,
            &[
                ("params", &resolve_params),
                ("nodes", &levels[0].0),
                ("pixels", film),
            ],
        )?;
        self.dispatch_timed(
            &mut encoder,
            &self.resolve,
            &resolve_bind,
            pixels,
            timer,
            "accumulate",
        );
        ctx.queue.submit([encoder.finish()]);
        Ok(())
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
        let start = Instant::now();
        let ctx = &self.ctx;
        let traffic = ctx.traffic.snapshot();
        let buffers = upload_scene(ctx, scene, prepared)?;
        let plan = FramePlan::new(scene, self.max_pass_rays(options.max_pass_rays));
        // The kernels the frame needs, compiled side by side on the first frame.
        let (kernels, photon_kernels) = rayon::join(
            || self.traversal_kernels(prepared),
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
        let mut timer = Timer::new(ctx, 256);
        let mut frame = FrameState::new(ctx, scene, pixels as usize)?;
        let vd_kernels = self.vd_kernels(prepared)?;
        let largest = plan.passes.iter().map(|p| p.ray_slots()).max().unwrap_or(1);
        let mut vd = self.vd_frame(&vd_kernels, prepared, largest)?;
        let mut queue: VecDeque<PassPlan> = plan.passes.iter().copied().collect();
        let mut passes_run = 0u32;
        while let Some(pass) = queue.pop_front() {
            if !queue.is_empty() {
                // Several passes: every camera sample chooses the VD levels before any shading.
                let all = std::iter::once(&pass).chain(queue.iter());
                self.choose_vd_levels(&kernels, &buffers, base, all, &mut vd)?;
            }
            match self.render_pass(
                scene, prepared, &plan, &pass, &buffers, &kernels, &mut vd, &mut frame, &mut timer,
            ) {
                Ok(()) => passes_run += 1,
                Err(GpuError::BufferTooLarge { .. }) if pass.split().is_some() => {
                    // Report the size, cut, retry: the halves go first, in order.
                    if let Some((a, b)) = pass.split() {
                        queue.push_front(b);
                        queue.push_front(a);
                    }
                    frame.stats.pass_splits += 1;
                }
                Err(e) => return Err(e),
            }
        }
        self.collect_times(&mut timer, &mut frame.stats)?;
        let color = frame.read_film(ctx, &frame.color)?;
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
        let normal: Vec<Vec3> = frame
            .normal
            .iter()
            .map(|n| n.try_normalize().unwrap_or(Vec3::ZERO))
            .collect();
        let albedo: Vec<Vec3> = frame.albedo.iter().map(|a| *a / spp as f32).collect();
        let ids = if scene.output.layers.contains(&Aov::Id) {
            self.centre_hit_ids(&kernels, &buffers, base, &mut vd)?
        } else {
            Vec::new()
        };
        let aovs = aov_layers(
            &scene.output.layers,
            &albedo,
            &normal,
            &frame.depth,
            &ids,
            &photon_views,
        );
        let seconds = start.elapsed().as_secs_f64();
        let mut frame_stats = frame.stats.to_vec(seconds, ctx);
        frame_stats.push(("gpu/upload_bytes".to_string(), buffers.bytes as f64));
        frame_stats.push(("frame/passes".to_string(), passes_run as f64));
        // The frame's traffic with the device, the scene's upload included.
        frame_stats.extend(ctx.traffic.since(traffic));
        frame_stats.extend(merge_counters(std::mem::take(&mut frame.photon_stats)));
        if let Some(v) = &vd {
            let s = &v.stats;
            let levels = v.levels(ctx)?;
            let mean_level =
                levels.iter().map(|&l| l as f64).sum::<f64>() / levels.len().max(1) as f64;
            frame_stats.extend([
                ("vd/batches".to_string(), s.batches as f64),
                ("vd/records".to_string(), s.records as f64),
                ("vd/jobs".to_string(), s.jobs as f64),
                ("vd/retraces".to_string(), s.retraces as f64),
                ("vd/sort_ms".to_string(), s.sort_ms),
                ("vd/build_trace_ms".to_string(), s.build_trace_ms),
                (
                    "vd/max_level".to_string(),
                    levels.iter().copied().max().unwrap_or(0) as f64,
                ),
                ("vd/mean_level".to_string(), mean_level),
                (
                    "vd/record_queue_bytes".to_string(),
                    s.record_queue_bytes() as f64,
                ),
                ("vd/scratch_bytes".to_string(), s.scratch_bytes as f64),
                ("vd/scene_bytes".to_string(), s.scene_bytes as f64),
            ]);
        }
        Ok(Frame {
            width,
            height,
            color,
            aovs,
            metadata: FrameMetadata {
                frame: scene.frame,
                time: scene.time,
                render_seconds: seconds,
                spp,
                camera_position: scene.camera.position,
                camera_look_at: scene.camera.look_at,
                camera_up: scene.camera.up,
                camera_fov_deg: scene.camera.fov_deg,
                device: format!("{} ({})", ctx.info.name, ctx.info.backend),
                stats: frame_stats,
                ..Default::default()
            },
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
    ) -> Result<(), GpuError> {
        let ctx = &self.ctx;
        let photon_map = scene.film.integrator == Integrator::PhotonMap;
        let base = pass_params(frame_params(scene, prepared), pass);
        let mut pass_stats = StageStats::default();
        let (mut rays, mut hits, mut ray_count) =
            self.primary_rays_and_hits(kernels, buffers, base, pass.ray_slots(), false, vd, timer)?;
        if let Some(v) = vd.as_mut() {
            // A lone pass's camera trace has just chosen the levels from every sample.
            v.chosen = true;
        }
        pass_stats.primary_rays += pass_pixel_samples(pass, base.width, base.height);
        if frame.maps.is_none() && (plan.global_map || plan.caustic_map) {
            let (maps, map_stats) = self.trace_frame_maps(
                self.photon_kernels()?.as_ref(),
                scene,
                prepared,
                buffers,
                kernels,
                vd,
                plan,
            )?;
            frame.photon_stats.extend(map_stats);
            frame.maps = Some(maps);
        }
        // The photon maps' debug views, from the camera rays' first hits.
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

        let first_hits = storage_buffer_sized(
            ctx,
            "first hits",
            ray_count * std::mem::size_of::<GpuFirstHit>() as u64,
        )?;

        // Chunks of a level whose shadow slots fit one storage binding.
        let per_hit = base.shadows_per_hit.max(1) as u64;
        let shadow_size = std::mem::size_of::<GpuShadowRay>() as u64;
        let limit = ctx
            .info
            .max_storage_buffer_binding_size
            .min(ctx.info.max_buffer_size);
        let chunk_rays = ((limit / (shadow_size * per_hit)) / 64 * 64).clamp(64, 1 << 20);
        // The levels of the shade trees, camera nodes first: nodes, node count, and the
        // shading point of each diffuse node.
        let mut levels: Vec<ShadeLevel> = Vec::new();
        let mut shadow_counts: Vec<CountBuffer> = Vec::new();
        let mut bounce = 0u32;
        loop {
            let level_rays = u32::try_from(ray_count * 2)
                .ok()
                .filter(|&n| n <= NODE_CHILD_LIMIT)
                .ok_or_else(|| GpuError::BufferTooLarge {
                    what: format!("{ray_count} rays of one bounce (shade-tree links)"),
                    size: ray_count * 2,
                    limit: NODE_CHILD_LIMIT as u64,
                })?;
            let nodes = storage_buffer_sized(
                ctx,
                "shade nodes",
                ray_count * std::mem::size_of::<GpuShadeNode>() as u64,
            )?;
            let child_candidates = self.scratch(
                "child candidates",
                level_rays as u64 * std::mem::size_of::<GpuRay>() as u64,
            )?;
            let child_flags = self.scratch("child flags", level_rays as u64 * 4)?;
            let diffuse_points = storage_buffer_sized(
                ctx,
                "diffuse points",
                ray_count * std::mem::size_of::<GpuShadingPoint>() as u64,
            )?;
            let shadow_slots_len = ray_count.min(chunk_rays) * per_hit;
            let shadow_rays = self.scratch("shadow rays", shadow_slots_len * shadow_size)?;
            let shadow_flags = self.scratch("shadow flags", shadow_slots_len * 4)?;
            let shadow_slots = self.scratch("shadow slots", shadow_slots_len * 4)?;
            let slot_indices = self.iota(shadow_slots_len)?;
            let mut params = base;
            params.ray_count = ray_count as u32;
            params.bounce = bounce;
            params.ray_capacity = level_rays;
            params.shadow_capacity = shadow_slots_len as u32;
            params.shadows_per_hit = per_hit as u32;
            let params_buffer = uniform_buffer(ctx, "params", &params);
            let shade_bind = self.bind_with_scene(
                &kernels.shade,
                buffers,
                &params_buffer,
                &[
                    ("rays", &rays),
                    ("hits", &hits),
                    ("nodes", &nodes),
                    ("child_candidates", &child_candidates),
                    ("child_flags", &child_flags),
                    ("shadow_rays", &shadow_rays),
                    ("shadow_flags", &shadow_flags),
                    ("first_hits", &first_hits),
                    ("diffuse_points", &diffuse_points),
                ],
            )?;
            let direct_bind = self.direct.bind(
                ctx,
                &[
                    ("params", &params_buffer),
                    ("nodes", &nodes),
                    ("shadow_rays", &shadow_rays),
                    ("shadow_flags", &shadow_flags),
                ],
            )?;
            let mut offset = 0u64;
            while offset < ray_count {
                let n = chunk_rays.min(ray_count - offset);
                let write_params = |vd_record_capacity: u32| {
                    ctx.queue.write_buffer(
                        &params_buffer,
                        0,
                        bytemuck::bytes_of(&FrameParams {
                            ray_offset: offset as u32,
                            vd_record_capacity,
                            ..params
                        }),
                    );
                };
                write_params(vd.as_ref().map_or(0, |v| v.capacity()));
                let mut encoder = ctx.device.create_command_encoder(&Default::default());
                if let Some(v) = vd.as_ref() {
                    v.clear(&mut encoder);
                }
                self.dispatch_timed(&mut encoder, &kernels.shade, &shade_bind, n, timer, "shade");
                // DiffuseHits: the used shadow slots, densely and in node order.
                let shadow_count = self.prims.compact(
                    ctx,
                    &mut encoder,
                    &slot_indices,
                    &shadow_flags,
                    &shadow_slots,
                    (n * per_hit) as u32,
                )?;
                let shadow_bind = |vd: Option<&VdFrameGpu>| {
                    let mut own: Vec<(&str, &wgpu::Buffer)> = vec![
                        ("shadow_rays", &shadow_rays),
                        ("shadow_slots", &shadow_slots),
                        ("shadow_count", &shadow_count.buffer),
                    ];
                    if let Some(v) = vd {
                        own.extend(v.record_bindings());
                    }
                    self.bind_with_scene(&kernels.shadow, buffers, &params_buffer, &own)
                };
                self.dispatch_timed(
                    &mut encoder,
                    &kernels.shadow,
                    &shadow_bind(vd.as_ref())?,
                    n * per_hit,
                    timer,
                    "shadow",
                );
                if let Some(v) = vd.as_mut() {
                    // The VD patches the unblocked shadow rays reach: the bottom level, then
                    // vd_shadow zeroes the blocked slots before direct sums them.
                    ctx.queue.submit([encoder.finish()]);
                    let count = loop {
                        if let Some(count) = v.take_count(ctx)? {
                            break count;
                        }
                        // The queue grew: trace the chunk's shadow rays again into it.
                        write_params(v.capacity());
                        let mut encoder = ctx.device.create_command_encoder(&Default::default());
                        v.clear(&mut encoder);
                        let bind = shadow_bind(Some(&*v))?;
                        self.dispatch_timed(
                            &mut encoder,
                            &kernels.shadow,
                            &bind,
                            n * per_hit,
                            timer,
                            "shadow",
                        );
                        ctx.queue.submit([encoder.finish()]);
                    };
                    let vd_shadow = &v.kernels().shadow;
                    v.run_batch(
                        ctx,
                        &self.prims,
                        count,
                        (n * per_hit) as u32,
                        |encoder, out, _| {
                            let bind = self.bind_with_scene(
                                vd_shadow,
                                buffers,
                                &params_buffer,
                                &[
                                    ("shadow_rays", &shadow_rays),
                                    ("shadow_slots", &shadow_slots),
                                    ("shadow_count", &shadow_count.buffer),
                                    ("vd_hits", &out.hits),
                                ],
                            )?;
                            vd_shadow.dispatch(
                                encoder,
                                &bind,
                                vd_shadow.grid_for(ctx, n * per_hit),
                            );
                            Ok(())
                        },
                    )?;
                    encoder = ctx.device.create_command_encoder(&Default::default());
                }
                self.dispatch_timed(&mut encoder, &self.direct, &direct_bind, n, timer, "direct");
                ctx.queue.submit([encoder.finish()]);
                ctx.wait_idle()?;
                shadow_counts.push(shadow_count);
                offset += n;
            }
            // NumBouncedRays / TwoBouncedRaysFlags: the scan of the child flags places the
            // children of the level, in their parents' order.
            let mut spawned = 0u64;
            if bounce < base.max_depth {
                let child_positions = self.scratch("child positions", level_rays as u64 * 4)?;
                let next_rays = storage_buffer_sized(
                    ctx,
                    "next rays",
                    level_rays as u64 * std::mem::size_of::<GpuRay>() as u64,
                )?;
                let child_count = CountBuffer::new(ctx, "child count");
                let mut encoder = ctx.device.create_command_encoder(&Default::default());
                ctx.queue.write_buffer(
                    &params_buffer,
                    0,
                    bytemuck::bytes_of(&FrameParams {
                        ray_offset: 0,
                        ..params
                    }),
                );
                self.prims.exclusive_scan(
                    ctx,
                    &mut encoder,
                    &child_flags,
                    &child_positions,
                    level_rays,
                )?;
                let spawn_bind = self.spawn.bind(
                    ctx,
                    &[
                        ("params", &params_buffer),
                        ("nodes", &nodes),
                        ("child_candidates", &child_candidates),
                        ("child_flags", &child_flags),
                        ("child_positions", &child_positions),
                        ("next_rays", &next_rays),
                        ("child_count", &child_count.buffer),
                    ],
                )?;
                self.dispatch_timed(
                    &mut encoder,
                    &self.spawn,
                    &spawn_bind,
                    ray_count,
                    timer,
                    "spawn",
                );
                ctx.queue.submit([encoder.finish()]);
                spawned = child_count.read(ctx)? as u64;
                rays = next_rays;
            }
            pass_stats.specular_rays += spawned;
            pass_stats.shade_tree_nodes += ray_count;
            levels.push(ShadeLevel {
                nodes,
                count: ray_count,
                points: diffuse_points,
            });
            self.collect_times(timer, &mut pass_stats)?;
            bounce += 1;
            if spawned == 0 || bounce > base.max_depth {
                break;
            }
            // The spawned rays are the next level; trace them.
            let next_hits =
                storage_buffer_sized(ctx, "hits", spawned * std::mem::size_of::<GpuHit>() as u64)?;
            let mut trace_params = base;
            trace_params.ray_count = spawned as u32;
            self.trace_rays(
                kernels,
                buffers,
                trace_params,
                &rays,
                &next_hits,
                vd,
                timer,
                "trace",
            )?;
            hits = next_hits;
            ray_count = spawned;
        }
        for count in &shadow_counts {
            pass_stats.shadow_rays += count.read(ctx)? as u64;
        }

        // Photon mapping's layers: copies of the trees holding the direct light (before the
        // composition) or one component alone, accumulated like the colour.
        let wants = |a: Aov| photon_map && scene.output.layers.contains(&a);
        let copy_levels = |levels: &[ShadeLevel]| -> Result<Vec<(wgpu::Buffer, u64)>, GpuError> {
            let mut encoder = ctx.device.create_command_encoder(&Default::default());
            let mut out = Vec::new();
            for l in levels {
                let copy = storage_buffer_sized(ctx, "layer nodes", l.nodes.size())?;
                encoder.copy_buffer_to_buffer(&l.nodes, 0, &copy, 0, l.nodes.size());
                out.push((copy, l.count));
            }
            ctx.queue.submit([encoder.finish()]);
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
                &levels,
            )?),
            _ => None,
        };
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
                let refs: Vec<&wgpu::Buffer> = copies.iter().map(|(b, _)| b).collect();
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
        // The first hits of the pass's camera samples, for the albedo, normal and depth layers.
        let layers = &scene.output.layers;
        let first_hit_values = if [Aov::Albedo, Aov::Normal, Aov::Depth]
            .iter()
            .any(|a| layers.contains(a))
        {
            let firsts: Vec<GpuFirstHit> =
                read_buffer(ctx, &first_hits, pass.ray_slots() as usize)?;
            Some(firsts)
        } else {
            None
        };

        // Everything that can fail has run: the pass goes into the film.
        let level_nodes: Vec<(wgpu::Buffer, u64)> =
            levels.into_iter().map(|l| (l.nodes, l.count)).collect();
        self.accumulate_and_resolve(&level_nodes, base, &frame.color, timer)?;
        if let (Some(copies), Some(film)) = (&direct_levels, &frame.direct) {
            self.accumulate_and_resolve(copies, base, film, &mut None)?;
        }
        for (aov, copies) in &layer_levels {
            let film = match aov {
                Aov::Caustic => frame.caustic.as_ref(),
                _ => frame.indirect.as_ref(),
            };
            if let Some(film) = film {
                self.accumulate_and_resolve(copies, base, film, &mut None)?;
            }
        }
        if let Some(firsts) = first_hit_values {
            for (slot, f) in firsts.iter().enumerate() {
                let Some((pixel, s)) = pass_slot(pass, slot as u64, base.width, base.height) else {
                    continue;
                };
                let p = pixel as usize;
                frame.albedo[p] += Vec3::from_array(f.albedo);
                frame.normal[p] += Vec3::from_array(f.normal);
                if s == 0 {
                    frame.depth[p] = f.depth;
                }
            }
        }
        frame.views.add(&pass_views);
        if let Some(out) = composed {
            frame.views.add(&PhotonViews {
                seeds: out.seeds_per_pixel,
                ..Default::default()
            });
            frame.photon_stats.extend(out.stats);
        }
        frame.photon_stats.extend(view_stats);
        self.collect_times(timer, &mut pass_stats)?;
        frame.stats.add(&pass_stats);
        Ok(())
    }
}

/// `base` with the sample and tile offsets of `pass`.
pub(super) fn pass_params(base: FrameParams, pass: &PassPlan) -> FrameParams {
    FrameParams {
        sample_offset: pass.sample_start,
        pass_spp: pass.samples,
        tile_offset: pass.tile_start,
        ..base
    }
}

/// The camera samples of `pass` that fall inside the image (padding slots excluded).
fn pass_pixel_samples(pass: &PassPlan, width: u32, height: u32) -> u64 {
    let tiles_x = crate::render::plan::tiles_across(width);
    let mut pixels = 0u64;
    for t in pass.tile_start..pass.tile_start + pass.tiles {
        let (x0, y0) = ((t % tiles_x) * TILE_SIDE, (t / tiles_x) * TILE_SIDE);
        let w = TILE_SIDE.min(width.saturating_sub(x0)) as u64;
        let h = TILE_SIDE.min(height.saturating_sub(y0)) as u64;
        pixels += w * h;
    }
    pixels * pass.samples as u64
}

/// What a frame accumulates over its passes: the films on the GPU, the AOV sums and photon
/// views on the host, the frame's photon maps and the statistics.
struct FrameState {
    color: wgpu::Buffer,
    direct: Option<wgpu::Buffer>,
    caustic: Option<wgpu::Buffer>,
    indirect: Option<wgpu::Buffer>,
    /// Sums over the samples of the first hits' albedo and normal; the first sample's depth.
    albedo: Vec<Vec3>,
    normal: Vec<Vec3>,
    depth: Vec<f32>,
    views: PhotonViews,
    maps: Option<FrameMaps>,
    photon_stats: Vec<(String, f64)>,
    stats: StageStats,
}

impl FrameState {
    fn new(ctx: &GpuContext, scene: &Scene, pixels: usize) -> Result<FrameState, GpuError> {
        let film = |label: &str| storage_buffer_sized(ctx, label, pixels as u64 * 16);
        let photon_map = scene.film.integrator == Integrator::PhotonMap;
        let wants = |a: Aov| photon_map && scene.output.layers.contains(&a);
        let layer = |a: Aov, label: &str| wants(a).then(|| film(label)).transpose();
        Ok(FrameState {
            color: film("film")?,
            direct: layer(Aov::Direct, "direct film")?,
            caustic: layer(Aov::Caustic, "caustic film")?,
            indirect: layer(Aov::Indirect, "indirect film")?,
            albedo: vec![Vec3::ZERO; pixels],
            normal: vec![Vec3::ZERO; pixels],
            depth: vec![f32::INFINITY; pixels],
            views: PhotonViews::default(),
            maps: None,
            photon_stats: Vec::new(),
            stats: StageStats::default(),
        })
    }

    /// The pixels of a film.
    fn read_film(&self, ctx: &GpuContext, film: &wgpu::Buffer) -> Result<Vec<Vec3>, GpuError> {
        let texels: Vec<[f32; 4]> = read_buffer(ctx, film, self.albedo.len())?;
        Ok(texels.iter().map(|c| Vec3::new(c[0], c[1], c[2])).collect())
    }
}

impl Backend for GpuBackend {
    fn name(&self) -> String {
        self.ctx.info.name.clone()
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
