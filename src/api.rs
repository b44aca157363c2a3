//! The library's steps, each a function the command line, the tests and the benchmarks call:
//! parse a scene, evaluate a frame, build its hierarchy, pick the backends, compare images,
//! describe a scene or the GPUs; and the one error type that carries every failure to the user.
//! `jobs` chains them into a whole render; `lib.rs` re-exports both.

use std::path::Path;

pub use crate::lang::{Diagnostics, IncludeScope, SceneFile};

use crate::accel::{self, PrepareOptions, Prepared};
use crate::render::{self, Backend};
use crate::scene::{self, MeshOrigin, Scene};
use crate::{cpu, gpu, io};
/// Everything that can stop a render, each with a message fit for the user.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The scene text or a file it names is wrong; the diagnostics carry `file:line:col`.
    #[error("{0}")]
    Scene(#[from] Diagnostics),
    #[error("building the hierarchy failed: {0}")]
    Accel(#[from] accel::AccelError),
    #[error("{0}")]
    Render(#[from] render::RenderError),
    #[error("{0}")]
    Io(#[from] io::IoError),
    #[error("{0}")]
    Usage(String),
    /// `caustica compare --tolerance`: the images differ by more than allowed.
    #[error("{0}")]
    OutOfTolerance(String),
}

/// Which backend renders.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Device {
    /// The GPU when there is one, otherwise the CPU with a warning.
    Auto,
    Cpu,
    Gpu,
}

pub use gpu::context::gpu_required;

/// Picks the backend for `device`.
///
/// - `cpu`: the CPU reference backend.
/// - `gpu`: the wgpu pipeline on a Vulkan adapter (or the backend named by `WGPU_BACKEND`); an
///   error when there is none.
/// - `auto`: the GPU when there is a hardware one; otherwise the CPU, with a one-line warning.
///   A software adapter (lavapipe) is slower than the CPU backend, so `auto` takes it only under
///   `CAUSTICA_REQUIRE_GPU=1`, which also makes a missing adapter an error.
pub fn select_backend(device: Device) -> Result<Box<dyn Backend>, Error> {
    // A GPU was asked for: pin the search to Vulkan (see gpu::context::backends_to_search).
    let open_gpu = || gpu::GpuBackend::open(true);
    match device {
        Device::Cpu => Ok(Box::new(cpu::CpuBackend)),
        Device::Gpu => match open_gpu() {
            Ok(backend) => Ok(Box::new(backend)),
            Err(gpu::GpuError::NoAdapter(details)) => {
                log::debug!("no GPU adapter{details}");
                Err(render::RenderError::DeviceUnavailable(NO_GPU_FOR_DEVICE_GPU.into()).into())
            }
            Err(e) => Err(render::RenderError::DeviceUnavailable(e.to_string()).into()),
        },
        Device::Auto => match open_gpu() {
            Ok(backend) if gpu_required() || !backend.is_software() => Ok(Box::new(backend)),
            Ok(backend) => {
                log::warn!(
                    "only a software GPU adapter ({}) was found; rendering on the CPU",
                    backend.name()
                );
                Ok(Box::new(cpu::CpuBackend))
            }
            Err(e) if gpu_required() => {
                Err(render::RenderError::DeviceUnavailable(e.to_string()).into())
            }
            Err(gpu::GpuError::NoAdapter(details)) => {
                log::debug!("no GPU adapter{details}");
                log::warn!("{NO_GPU_FOR_DEVICE_AUTO}");
                Ok(Box::new(cpu::CpuBackend))
            }
            Err(e) => {
                log::warn!("the GPU could not be opened ({e}); rendering on the CPU");
                Ok(Box::new(cpu::CpuBackend))
            }
        },
    }
}

/// What `--device auto` says when it finds no GPU and renders on the CPU.
pub const NO_GPU_FOR_DEVICE_AUTO: &str =
    "no GPU adapter found; rendering on the CPU (set RUST_LOG=wgpu=warn for details)";

/// Why `--device gpu` fails without a GPU, with what to do about it.
pub const NO_GPU_FOR_DEVICE_GPU: &str = "--device gpu: no GPU adapter found\n  \
     hint: install a Vulkan driver (`caustica info --gpu` lists the adapters found), or \
     render with --device cpu or --device auto; RUST_LOG=wgpu=warn shows why none was found";

/// A description of the GPU adapter that `--device gpu` would use: name, backend, the optional
/// features found and the limits. Pinned to Vulkan under `CAUSTICA_REQUIRE_GPU`.
pub fn describe_device() -> Result<String, Error> {
    let ctx = gpu::GpuContext::open(gpu_required())
        .map_err(|e| render::RenderError::DeviceUnavailable(e.to_string()))?;
    Ok(ctx.info.to_string())
}

/// The backends a job renders on: one per device of `devices` (each with its own resident
/// pipeline), opened side by side.
///
/// - `Device::Cpu`: the CPU backend alone (`devices` does not apply).
/// - `DeviceList::Auto`: every discrete GPU on the backend of the first one; with none, the
///   one backend [`select_backend`] picks (which may be the CPU under `Device::Auto`).
/// - `All` or a list: those adapters (`caustica info --gpu` numbers them), software ones
///   included; a list may name one adapter twice for two logical devices on it.
pub fn select_backends(
    device: Device,
    devices: &scene::DeviceList,
) -> Result<Vec<Box<dyn Backend>>, Error> {
    if device == Device::Cpu {
        return Ok(vec![Box::new(cpu::CpuBackend)]);
    }
    // The indices are counted on the backends the devices are then opened on.
    let require = device == Device::Gpu || gpu_required();
    let set = gpu::context::AdapterSet::enumerate(require);
    let indices = gpu::context::resolve_devices(devices, &set.summaries())
        .map_err(|e| Error::Usage(format!("--devices {devices}: {e}")))?;
    let Some(indices) = indices else {
        return Ok(vec![select_backend(device)?]);
    };
    if indices.len() == 1 && *devices == scene::DeviceList::Auto {
        return Ok(vec![select_backend(device)?]);
    }
    // Each device opens and compiles its kernels on its own thread.
    let history = gpu::backend::FrameHistory::default();
    let opened: Vec<Result<gpu::GpuBackend, gpu::GpuError>> = std::thread::scope(|s| {
        let set = &set;
        let history = &history;
        let handles: Vec<_> = indices
            .iter()
            .map(|&i| s.spawn(move || gpu::GpuBackend::open_on(set, i, history)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    let mut backends: Vec<Box<dyn Backend>> = Vec::new();
    for (index, backend) in indices.iter().zip(opened) {
        let backend = backend.map_err(|e| {
            render::RenderError::DeviceUnavailable(format!("GPU adapter {index}: {e}"))
        })?;
        backends.push(Box::new(backend));
    }
    Ok(backends)
}

/// The GPU adapters a render can use, one line each with the index that `--devices` takes.
pub fn describe_adapters() -> String {
    let adapters = gpu::context::list_adapters(gpu_required());
    if adapters.is_empty() {
        return "no GPU adapter found".to_string();
    }
    let auto = gpu::context::resolve_devices(&scene::DeviceList::Auto, &adapters)
        .ok()
        .flatten()
        .unwrap_or_default();
    adapters
        .iter()
        .map(|a| {
            let mark = if auto.contains(&a.index) {
                "  [auto]"
            } else {
                ""
            };
            format!("{a}{mark}")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Command-line overrides of what a scene file says.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Overrides {
    pub resolution: Option<(u32, u32)>,
    pub spp: Option<u32>,
    pub seed: Option<u64>,
    /// Output path pattern (`####` becomes the frame number).
    pub output: Option<String>,
    /// The EXR layers besides the colour, instead of the scene's.
    pub layers: Option<Vec<scene::Aov>>,
    /// The integrator, instead of the scene's.
    pub integrator: Option<scene::Integrator>,
    /// The quality preset, instead of the scene's (`--quick`).
    pub quality: Option<scene::Quality>,
    /// Progressive passes, instead of the scene's `film { passes }` (`--passes`).
    pub passes: Option<u32>,
    /// Render only this part of the image (`--crop`).
    pub crop: Option<scene::CropWindow>,
    /// The hierarchy's node layout and builder, instead of the scene's (`--accel`).
    pub accel: Option<(scene::BvhLayout, scene::BvhBuilder)>,
}

impl Overrides {
    pub fn apply(&self, scene: &mut Scene) {
        if let Some((w, h)) = self.resolution {
            scene.film.width = w;
            scene.film.height = h;
        }
        if let Some(spp) = self.spp {
            scene.film.spp = spp;
        }
        if let Some(seed) = self.seed {
            scene.film.seed = seed;
        }
        if let Some(output) = &self.output {
            scene.output.path = output.clone();
        }
        if let Some(layers) = &self.layers {
            scene.output.layers = layers.clone();
        }
        if let Some(integrator) = self.integrator {
            scene.film.integrator = integrator;
        }
        if let Some(quality) = self.quality {
            scene.film.quality = quality;
        }
        if let Some(crop) = self.crop {
            scene.film.crop = Some(crop);
        }
        if let Some((layout, builder)) = self.accel {
            scene.film.accel = Some(layout);
            scene.film.builder = Some(builder);
        }
        if let Some(passes) = self.passes {
            scene.film.passes = passes.max(1);
        }
    }
}

/// A pixel rectangle `x0,y0,x1,y1` of `--exclude`.
pub fn parse_rect(text: &str) -> Result<render::compare::Rect, Error> {
    let [x0, y0, x1, y1] = four_numbers::<u32>(text)
        .ok_or_else(|| Error::Usage(format!("--exclude {text}: expected x0,y0,x1,y1")))?;
    if x0 < x1 && y0 < y1 {
        Ok(render::compare::Rect { x0, y0, x1, y1 })
    } else {
        Err(Error::Usage(format!(
            "--exclude {text}: expected x0,y0,x1,y1 with x0 < x1 and y0 < y1"
        )))
    }
}

/// Exactly four comma-separated numbers, or `None`.
fn four_numbers<T: std::str::FromStr>(text: &str) -> Option<[T; 4]> {
    let values: Vec<T> = text
        .split(',')
        .map(|t| t.trim().parse().ok())
        .collect::<Option<_>>()?;
    values.try_into().ok()
}

/// Compares the colour of two images (a render and a reference, e.g. from
/// `tools/mitsuba_reference.py`) outside `excluded`. Each is an OpenEXR file (its RGB) or a PNG
/// or JPEG (decoded from sRGB to linear). Images of different sizes, and images holding NaN or
/// infinite values, are usage errors. With
/// `diff`, also writes a PNG of each pixel's relative squared error in false colour
/// ([`render::compare::false_colour`]).
pub fn compare_files(
    image: &Path,
    reference: &Path,
    excluded: &[render::compare::Rect],
    diff: Option<&Path>,
) -> Result<render::compare::Comparison, Error> {
    let a = io::read_image(image)?;
    let b = io::read_image(reference)?;
    if (a.width, a.height) != (b.width, b.height) {
        return Err(Error::Usage(format!(
            "{} is {}x{} but {} is {}x{}",
            image.display(),
            a.width,
            a.height,
            reference.display(),
            b.width,
            b.height
        )));
    }
    for (path, image) in [(image, &a), (reference, &b)] {
        let bad = image.texels.iter().filter(|t| !t.is_finite()).count();
        if let Some(first) = image.texels.iter().position(|t| !t.is_finite()) {
            let width = image.width.max(1) as usize;
            return Err(Error::Usage(format!(
                "{} has {bad} pixel{} that are not finite numbers (the first at x {}, y {}): they have no error to measure",
                path.display(),
                if bad == 1 { "" } else { "s" },
                first % width,
                first / width
            )));
        }
    }
    let comparison =
        render::compare::compare(&a.texels, &b.texels, a.width, excluded).map_err(Error::Usage)?;
    if let Some(path) = diff {
        let pixels: Vec<[u8; 3]> = render::compare::pixel_errors(&a.texels, &b.texels)
            .into_iter()
            .map(render::compare::false_colour)
            .collect();
        io::write_rgb8_png(path, a.width, a.height, &pixels)?;
    }
    Ok(comparison)
}

/// `--accel LAYOUT[:BUILDER]`: the hierarchy's node layout (`qbvh`, `wide`, `binary`) and how
/// its middle level is built (`cpu_sah`, the default, or `gpu_lbvh` or `gpu_ploc`, for the wide
/// layout).
pub fn parse_accel(text: &str) -> Result<(scene::BvhLayout, scene::BvhBuilder), Error> {
    let (layout, builder) = match text.split_once(':') {
        Some(pair) => pair,
        // A structure of its own (`--accel grid`) sits under the wide layout's top level.
        None if scene::BvhBuilder::from_name(text).is_some_and(|b| b.is_structure()) => {
            ("wide", text)
        }
        None => (text, "cpu_sah"),
    };
    let layouts = scene::BvhLayout::ALL.map(|l| l.name()).join(", ");
    let layout = scene::BvhLayout::from_name(layout).ok_or_else(|| {
        Error::Usage(format!(
            "--accel {text}: unknown layout \"{layout}\": expected one of {layouts}"
        ))
    })?;
    let builder = scene::BvhBuilder::from_name(builder).ok_or_else(|| {
        Error::Usage(format!(
            "--accel {text}: unknown builder \"{builder}\": expected one of {}",
            scene::BvhBuilder::ALL.map(|b| b.name()).join(", ")
        ))
    })?;
    if !builder.builds(layout) {
        return Err(Error::Usage(format!(
            "--accel {text}: {} builds the wide layout only (use wide:{0}, or {}:cpu_sah)",
            builder.name(),
            layout.name()
        )));
    }
    Ok((layout, builder))
}

/// What `caustica info --accels` prints: every `--accel` choice, one a line.
pub fn describe_accels() -> String {
    let mut out = String::from(
        "--accel LAYOUT:BUILDER choices (without one, a GPU renders in wide, the CPU in qbvh, \
         both built by cpu_sah):\n",
    );
    for layout in scene::BvhLayout::ALL {
        for builder in scene::BvhBuilder::ALL {
            if !builder.builds(layout) {
                continue;
            }
            let what = match layout {
                scene::BvhLayout::Qbvh => "4-wide BVH, compact stack (paper 004)",
                scene::BvhLayout::Wide => "8-wide compressed BVH (Ylitie et al. 2017)",
                scene::BvhLayout::Binary => "binary BVH in the QBVH's node format",
            };
            let how = match builder {
                scene::BvhBuilder::CpuSah => "binned SAH built on the CPU",
                scene::BvhBuilder::GpuLbvh => {
                    "LBVH (Karras 2012) built and collapsed on the GPU (the CPU backend builds \
                     the same tree)"
                }
                scene::BvhBuilder::GpuPloc => {
                    "PLOC (Meister & Bittner 2018) built and collapsed on the GPU (the CPU backend \
                     builds the same tree)"
                }
                scene::BvhBuilder::GpuSah => {
                    "binned SAH (paper 003) built and collapsed on the GPU (the CPU backend \
                     builds the same tree)"
                }
                scene::BvhBuilder::GpuHybrid => {
                    "Morton splits for the top levels, binned SAH below (paper 003's hybrid), \
                     built and collapsed on the GPU (the CPU backend builds the same tree)"
                }
                scene::BvhBuilder::Grid => {
                    "for the top level; each triangle mesh a two-level grid (paper 001) traced \
                     by DDA, built by its CPU twin (VD and sphere meshes keep cpu_sah trees; \
                     `--accel grid` alone is wide:grid)"
                }
                scene::BvhBuilder::Kdtree => {
                    "for the top level; each triangle mesh a kd-tree (paper 002: spatial \
                     medians and empty-space cuts, then the exact SAH under 64 primitives) \
                     walked with a short stack, built by its CPU twin (VD and sphere meshes \
                     keep cpu_sah trees; `--accel kdtree` alone is wide:kdtree)"
                }
            };
            out.push_str(&format!(
                "  {}:{}  {what}, {how}\n",
                layout.name(),
                builder.name()
            ));
        }
    }
    out
}

/// `--crop X0,X1,Y0,Y1`: fractions of the image, as pbrt's `--cropwindow`.
pub fn parse_crop(text: &str) -> Result<scene::CropWindow, Error> {
    let [x0, x1, y0, y1] = four_numbers::<f32>(text)
        .ok_or_else(|| Error::Usage(format!("--crop {text}: expected four numbers X0,X1,Y0,Y1")))?;
    scene::CropWindow::new(x0, x1, y0, y1).map_err(|e| Error::Usage(format!("--crop: {e}")))
}

/// The layers of `--layers` (`color` is accepted and ignored, as in the scene language);
/// an unknown name is a usage error that lists the known ones.
pub fn parse_layers(names: &[String]) -> Result<Vec<scene::Aov>, Error> {
    let mut layers = Vec::new();
    for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        if name == "color" {
            continue;
        }
        let aov = scene::Aov::from_name(name).ok_or_else(|| {
            let known: Vec<&str> = scene::Aov::ALL.iter().map(|a| a.name()).collect();
            Error::Usage(format!(
                "--layers: unknown layer \"{name}\": expected color, {}",
                known.join(", ")
            ))
        })?;
        if !layers.contains(&aov) {
            layers.push(aov);
        }
    }
    Ok(layers)
}

/// Parses a scene file and everything it includes.
pub fn load_scene(path: &Path) -> Result<SceneFile, Error> {
    Ok(SceneFile::load(path)?)
}

/// [`load_scene`], then each `-D NAME=VALUE` of `defines` in order ([`SceneFile::define`]); a
/// define that names no top-level `let` is a usage error.
pub fn load_scene_defined(path: &Path, defines: &[String]) -> Result<SceneFile, Error> {
    load_scene_scoped(path, defines, IncludeScope::SceneFolder)
}

/// [`load_scene_defined`] with includes allowed where `scope` says
/// (`--allow-includes-outside`: anywhere).
pub fn load_scene_scoped(
    path: &Path,
    defines: &[String],
    scope: IncludeScope,
) -> Result<SceneFile, Error> {
    let mut file = SceneFile::load_scoped(path, scope)?;
    for definition in defines {
        file.define(definition).map_err(Error::Usage)?;
    }
    Ok(file)
}

/// Evaluates a parsed scene for `frame`, loading the files it names through `assets`, and
/// applies `overrides`.
pub fn evaluate_frame(
    file: &SceneFile,
    frame: i64,
    assets: &io::AssetCache,
    overrides: &Overrides,
) -> Result<Scene, Error> {
    let mut scene = file.eval(frame, assets).map_err(|mut e| {
        // The same text can evaluate differently per frame: say which one failed.
        for d in &mut e.items {
            d.notes.push(format!("while evaluating frame {frame}"));
        }
        e
    })?;
    overrides.apply(&mut scene);
    scene.apply_quality();
    // The scene's own values were checked where they are written; the command line's may
    // still ask for too much.
    scene::limits::check(&scene)
        .map_err(|message| Error::Usage(format!("with the command line's settings, {message}")))?;
    Ok(scene)
}

/// The hierarchy's layout for rendering `scene` on `backend`: the scene's own (`film { accel }`,
/// `--accel`), else the one the backend renders fastest (docs/performance.md: the wide BVH on
/// the GPU, the QBVH on the CPU).
pub fn layout_for(scene: &Scene, backend: &dyn render::Backend) -> accel::BvhLayout {
    scene
        .film
        .accel
        .unwrap_or_else(|| backend.preferred_layout())
}

/// The options for building `scene`'s hierarchy to render on `backends`: the scene's layout
/// ([`layout_for`] the first backend) and builder, with a GPU builder's trees left to the
/// backends when every one of them builds on its device.
pub fn prepare_options_for(scene: &Scene, backends: &[&dyn render::Backend]) -> PrepareOptions {
    let layout = match backends.first() {
        Some(backend) => layout_for(scene, *backend),
        None => scene.film.accel.unwrap_or_default(),
    };
    PrepareOptions {
        layout,
        builder: scene.film.builder.unwrap_or_default(),
        device_builds: !backends.is_empty() && backends.iter().all(|b| b.builds_on_device()),
        ..PrepareOptions::default()
    }
}

/// [`prepare_cached`] with `options`.
pub fn prepare_cached_as(
    scene: &Scene,
    cache: &accel::MeshBuildCache,
    options: PrepareOptions,
) -> Result<Prepared, Error> {
    Ok(Prepared::build_cached(scene, &options, cache)?)
}

/// [`prepare_cached_as`] for rendering on `backends`: with `--accel kdtree` and one GPU, its
/// device builds the kd-trees (to the CPU twin's words); with several devices, or none that
/// builds them, the CPU twin does, so that no device's build waits on another's frame.
pub fn prepare_for(
    scene: &Scene,
    cache: &accel::MeshBuildCache,
    backends: &[&dyn render::Backend],
) -> Result<Prepared, Error> {
    let options = prepare_options_for(scene, backends);
    let kdtree_device = match backends {
        [backend] if options.device_builds && options.builder == accel::BvhBuilder::Kdtree => {
            backend.kdtree_device()
        }
        _ => None,
    };
    Ok(Prepared::build_cached_on(
        scene,
        &options,
        cache,
        kdtree_device,
    )?)
}

/// Builds the hierarchy of a scene with default options (the scene's layout, else the QBVH).
pub fn prepare(scene: &Scene) -> Result<Prepared, Error> {
    Ok(Prepared::build(scene, &PrepareOptions::for_scene(scene))?)
}

/// [`prepare`] for one frame of several: meshes unchanged since the frame `cache` last saw
/// reuse their middle level.
pub fn prepare_cached(scene: &Scene, cache: &accel::MeshBuildCache) -> Result<Prepared, Error> {
    prepare_cached_as(scene, cache, PrepareOptions::for_scene(scene))
}

/// The most frames one `--frames` list may name (its frames are evaluated up front).
pub const MAX_LISTED_FRAMES: u64 = 1_000_000;

/// Parses a `--frames` list: items separated by commas, each a frame `A`, a range `A..B`
/// (inclusive) or a range with a step `A..B:S`, e.g. `1,5,10..20` or `1..48:2`. The frames come
/// out in increasing order, each once.
pub fn parse_frames(text: &str) -> Result<Vec<i64>, Error> {
    let mut frames = std::collections::BTreeSet::new();
    for item in text.split(',') {
        let item = item.trim();
        let bad = || {
            Error::Usage(format!(
                "bad frame range \"{item}\": expected a frame number, A..B or A..B:STEP \
                 (items separated by commas)"
            ))
        };
        let (range, step) = match item.split_once(':') {
            Some((range, step)) => {
                let step: i64 = step.trim().parse().map_err(|_| bad())?;
                if step < 1 {
                    return Err(Error::Usage(format!(
                        "bad frame range \"{item}\": the step must be at least 1"
                    )));
                }
                (range, step)
            }
            None => (item, 1),
        };
        let (a, b): (i64, i64) = match range.split_once("..") {
            Some((a, b)) => (
                a.trim().parse().map_err(|_| bad())?,
                b.trim().parse().map_err(|_| bad())?,
            ),
            None if step == 1 => {
                let a = range.trim().parse().map_err(|_| bad())?;
                (a, a)
            }
            None => return Err(bad()),
        };
        if b < a {
            return Err(Error::Usage(format!(
                "bad frame range \"{item}\": the last frame comes before the first"
            )));
        }
        let count = (b as i128 - a as i128) / step as i128 + 1;
        if count + frames.len() as i128 > MAX_LISTED_FRAMES as i128 {
            return Err(Error::Usage(format!(
                "--frames {text}: more than {MAX_LISTED_FRAMES} frames"
            )));
        }
        frames.extend((a..=b).step_by(step as usize));
    }
    Ok(frames.into_iter().collect())
}

/// Counts and bounds of what a scene holds, for `caustica info`.
pub fn describe_scene(scene: &Scene) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let mut lo = glam::Vec3::splat(f32::INFINITY);
    let mut hi = glam::Vec3::splat(f32::NEG_INFINITY);
    let (mut tris, mut quads, mut patches) = (0usize, 0usize, 0usize);
    let mut spheres = 0;
    for inst in &scene.instances {
        let mesh = &scene.meshes[inst.mesh as usize];
        match (&mesh.origin, mesh.displacement) {
            (MeshOrigin::AnalyticSphere { .. }, _) => spheres += 1,
            (_, Some(_)) => {
                tris += mesh.data.triangles.len();
                patches += mesh.data.quads.len();
            }
            (_, None) => {
                tris += mesh.data.triangles.len();
                quads += mesh.data.quads.len();
            }
        }
        if let Some((a, b)) = mesh.data.bounds() {
            for i in 0..8 {
                let corner = glam::Vec3::new(
                    if i & 1 == 0 { a.x } else { b.x },
                    if i & 2 == 0 { a.y } else { b.y },
                    if i & 4 == 0 { a.z } else { b.z },
                );
                let w = inst.transform.transform_point3(corner);
                lo = lo.min(w);
                hi = hi.max(w);
            }
        }
    }
    let _ = writeln!(
        s,
        "frame        {} (time {:.3} s), frames {}..{} at {} fps",
        scene.frame, scene.time, scene.frames.first, scene.frames.last, scene.frames.fps
    );
    let _ = writeln!(
        s,
        "film         {}x{}, {} spp, max depth {}, seed {}",
        scene.film.width, scene.film.height, scene.film.spp, scene.film.max_depth, scene.film.seed
    );
    let _ = writeln!(
        s,
        "camera       at {} looking at {}, fov {}°",
        scene.camera.position, scene.camera.look_at, scene.camera.fov_deg
    );
    let _ = writeln!(s, "materials    {}", scene.materials.len());
    let _ = writeln!(s, "textures     {}", scene.textures.len());
    let _ = writeln!(s, "vdmaps       {}", scene.vdmaps.len());
    let _ = writeln!(s, "meshes       {}", scene.meshes.len());
    for m in &scene.meshes {
        let disp = m
            .displacement
            .map(|d| format!(", displaced by {}", scene.vdmaps[d as usize].name))
            .unwrap_or_default();
        if let MeshOrigin::AnalyticSphere { radius } = m.origin {
            let _ = writeln!(s, "  {:<12} analytic sphere of radius {radius}", m.name);
            continue;
        }
        let _ = writeln!(
            s,
            "  {:<12} {} vertices, {} triangles, {} quads{}",
            m.name,
            m.data.positions.len(),
            m.data.triangles.len(),
            m.data.quads.len(),
            disp
        );
    }
    let _ = writeln!(
        s,
        "instances    {} ({} triangles, {} quads, {} VD patches, {} analytic spheres in the world)",
        scene.instances.len(),
        tris,
        quads,
        patches,
        spheres
    );
    let _ = writeln!(s, "lights       {}", scene.lights.len());
    if lo.x <= hi.x {
        let _ = writeln!(s, "bounds       {} .. {}", lo, hi);
    } else {
        let _ = writeln!(s, "bounds       empty");
    }
    let layers: Vec<&str> = scene.output.layers.iter().map(|l| l.name()).collect();
    let _ = writeln!(
        s,
        "output       {} (color{}{})",
        scene.output.path,
        if layers.is_empty() { "" } else { ", " },
        layers.join(", ")
    );
    let _ = writeln!(
        s,
        "photons      global {}, caustic {}, max bounces {}, knn {}, max radius {}",
        scene.photons.global,
        scene.photons.caustic,
        scene.photons.max_bounces,
        scene.photons.knn,
        scene.photons.max_radius
    );
    let _ = write!(
        s,
        "gather       seeds {}, rays {}, quadtree levels {}, min density {}",
        scene.gather.seeds,
        scene.gather.rays,
        scene.gather.quadtree_levels,
        scene.gather.min_density
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_lists_take_frames_ranges_and_steps_in_order_each_once() {
        assert_eq!(parse_frames("7").unwrap(), [7]);
        assert_eq!(parse_frames("1..4").unwrap(), [1, 2, 3, 4]);
        assert_eq!(parse_frames("1..10:3").unwrap(), [1, 4, 7, 10]);
        assert_eq!(parse_frames("1..48:24").unwrap(), [1, 25]);
        assert_eq!(parse_frames("10..12, 1,5,11").unwrap(), [1, 5, 10, 11, 12]);
        assert_eq!(parse_frames("-2..0").unwrap(), [-2, -1, 0]);
    }

    #[test]
    fn malformed_and_enormous_frame_lists_are_usage_errors() {
        for (text, needle) in [
            ("3..1", "before the first"),
            ("1..9:0", "at least 1"),
            ("1,,2", "expected a frame number"),
            ("5:2", "expected a frame number"),
            ("a..b", "expected a frame number"),
            ("1..100000000", "more than 1000000 frames"),
            ("-9223372036854775808..9223372036854775807", "more than"),
        ] {
            match parse_frames(text) {
                Err(Error::Usage(m)) => assert!(m.contains(needle), "{text}: {m}"),
                other => panic!("{text}: {other:?}"),
            }
        }
    }
}
