//! Frame times of an animation rendered by one process, as `caustica render` renders it: the
//! backend is opened once (frame 1 pays for compiling the kernels), then each frame is
//! evaluated, built and rendered. Per frame it prints the total, the build, the render, the
//! device's busy time (the device clock: a timestamp before and after every submission), the
//! time the device stood idle (the total less that), the host's waits for the device, the host
//! time of the photon-mapping stages (their read-backs included), the passes, and the bytes
//! uploaded and allocated; then the median of the warm frames (2..) with the device's time per
//! stage (the device clock counts each submission under the stage the driver named last) and
//! the host's bind groups, submissions and waits with its time in each, and
//! with `--cpu-frames K` the CPU twin's median on this machine's cores and the ratio. With
//! `CAUSTICA_KERNEL_TIMES=1` in the environment it also prints the device's time per kernel
//! (`gpu::kernel_times`; every dispatch then has a timed pass of its own, which slows the frame
//! a little).
//!
//! `cargo bench --bench frames -- [--scene scenes/cornell_spheres.csc] [--resolution 1024x1024]
//!  [--spp 1] [--integrator photon_map] [--frames 6] [--cpu-frames 0] [--animation]
//!  [--accel LAYOUT:BUILDER]`
//!
//! `--animation` renders the scene's whole frame range (the first frame is the scene's) and
//! prints the total for all frames; otherwise frames 1..=N cycle through the scene's range.
//!
//! `--reference IMAGE.exr [--passes 32]` prints instead the progressive mode's curve for the
//! scene's first frame (`render::progressive`: its passes one after the other, averaged): after
//! each pass the seconds since the first began (which compiles the kernels), the pass's own
//! milliseconds, and the relative MSE and mean colour of the average against the reference,
//! whose size must be the resolution's. For example, against the committed Mitsuba reference:
//! `cargo bench --bench frames -- --scene $PWD/scenes/cornell_spheres.csc --resolution 256x256
//! --spp 4 --reference $PWD/tests/data/reference/cornell_spheres_256.exr --passes 32`.

mod support;

use std::path::{Path, PathBuf};
use std::time::Instant;

use glam::Vec3;

use caustica::render::compare::compare;
use caustica::render::progressive::pass_scene;
use caustica::render::stats::KernelFigure;
use caustica::render::{Backend, Frame, RenderOptions};
use caustica::scene::Integrator;
use caustica::{Device, Overrides};
use support::{arg, median};

fn stat(frame: &Frame, name: &str) -> f64 {
    frame.metadata.stat(name).unwrap_or(0.0)
}

/// The GPU frame's figures (none on the CPU).
fn gpu_stats(frame: &Frame) -> Option<&caustica::render::stats::GpuFrameStats> {
    frame.metadata.stats.gpu.as_ref()
}

/// With `CAUSTICA_KERNEL_TIMES`, a figure of each stage's kernels, named `stage:kernel`, the
/// longest first.
fn kernels(frame: &Frame, figure: fn(&KernelFigure) -> f64) -> Vec<(String, f64)> {
    gpu_stats(frame).map_or(Vec::new(), |g| {
        g.kernels
            .iter()
            .map(|k| (format!("{}:{}", k.stage, k.kernel), figure(k)))
            .collect()
    })
}

/// One rendered frame's times in milliseconds.
struct FrameTimes {
    total: f64,
    build: f64,
    render: f64,
    /// The device's busy time (`gpu/device_ms`: the device clock's spans of the submissions).
    device: f64,
    /// The host's time waiting for the device (`host/wait_ms`).
    wait: f64,
    photon_stages: f64,
    passes: f64,
    /// Whether the frame was rendered again, its shade trees having outgrown the room the last
    /// frame's gave them (`shade_tree/retries`).
    retries: f64,
    upload_mb: f64,
    alloc_mb: f64,
    /// The device's busy time per stage (`device/<stage>_ms`), in the frame's order.
    device_stages: Vec<(String, f64)>,
    /// The host's own time per stage, its waits left out (`host/busy/<stage>_ms`).
    host_stages: Vec<(String, f64)>,
    /// The device's idle time before each stage's submissions (`device_idle/<stage>_ms`).
    idle_stages: Vec<(String, f64)>,
    /// With `CAUSTICA_KERNEL_TIMES=1`: the device's time per kernel, the longest first.
    kernel_stages: Vec<(String, f64)>,
    kernel_dispatches: Vec<(String, f64)>,
    /// The host's work with the device: `(counter, count, ms)` for bind groups, submissions
    /// and waits (`gpu/bind_groups`, `host/bind_ms`, ...).
    host: Vec<(&'static str, f64, f64)>,
}

/// The host-side counters the benchmark prints: (label, count stat, time stat).
const HOST_COUNTERS: [(&str, &str, &str); 3] = [
    ("bind groups", "gpu/bind_groups", "host/bind_ms"),
    ("submissions", "gpu/submissions", "host/submit_ms"),
    ("waits", "host/waits", "host/wait_ms"),
];

impl FrameTimes {
    /// The frame's time that the device did not work: it waited for the host.
    fn idle(&self) -> f64 {
        self.total - self.device
    }
}

fn print_row(label: &str, t: &FrameTimes) {
    println!(
        "{label:<10} {:>9.1} {:>8.1} {:>9.1} {:>10.1} {:>9.1} {:>9.1} {:>11.1} {:>6} {:>9.2} {:>9.1}",
        t.total,
        t.build,
        t.render,
        t.device,
        t.idle(),
        t.wait,
        t.photon_stages,
        t.passes,
        t.upload_mb,
        t.alloc_mb
    );
}

fn main() {
    // `RUST_LOG=info` names, among others, the frames rendered again.
    let _ = env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"))
        .try_init();
    let args: Vec<String> = std::env::args().collect();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let scene_path =
        root.join(arg(&args, "--scene").unwrap_or("scenes/cornell_spheres.csc".into()));
    let resolution = arg(&args, "--resolution").unwrap_or("1024x1024".into());
    let (w, h) = resolution
        .split_once('x')
        .and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)))
        .expect("--resolution WxH");
    let spp: u32 = arg(&args, "--spp").map_or(1, |s| s.parse().expect("--spp N"));
    let frames: i64 = arg(&args, "--frames").map_or(6, |s| s.parse().expect("--frames N"));
    let cpu_frames: usize = arg(&args, "--cpu-frames").map_or(0, |s| s.parse().expect("N"));
    let integrator = match arg(&args, "--integrator").as_deref() {
        Some("whitted") => Integrator::Whitted,
        _ => Integrator::PhotonMap,
    };
    let animation = args.iter().any(|a| a == "--animation");
    let accel = arg(&args, "--accel").map(|a| caustica::parse_accel(&a).expect("--accel"));
    let overrides = Overrides {
        resolution: Some((w, h)),
        spp: Some(spp),
        integrator: Some(integrator),
        layers: Some(Vec::new()),
        accel,
        ..Default::default()
    };
    let file = caustica::load_scene(&scene_path).expect("the scene loads");
    let range = file.frame_range().expect("the scene has frames");
    let frame_numbers: Vec<i64> = if animation {
        (range.first..=range.last).collect()
    } else {
        let count = range.last - range.first + 1;
        (0..frames).map(|i| range.first + i % count).collect()
    };
    let assets = caustica::io::AssetCache::default();
    let open = Instant::now();
    let backend = caustica::select_backend(Device::Gpu).expect("a GPU backend");
    let open_ms = open.elapsed().as_secs_f64() * 1e3;
    println!(
        "{} at {w}x{h}, {spp} spp, {integrator:?}, device {} (opened in {open_ms:.0} ms)",
        scene_path.display(),
        backend.name()
    );
    if let Some(reference) = arg(&args, "--reference") {
        let passes: u32 = arg(&args, "--passes").map_or(32, |s| s.parse().expect("--passes N"));
        let scene = caustica::evaluate_frame(&file, frame_numbers[0], &assets, &overrides)
            .expect("the frame evaluates");
        progressive_curve(backend.as_ref(), &scene, Path::new(&reference), passes);
        return;
    }
    println!(
        "{:<10} {:>9} {:>8} {:>9} {:>10} {:>9} {:>9} {:>11} {:>6} {:>9} {:>9}",
        "frame",
        "total ms",
        "build",
        "render",
        "device ms",
        "idle ms",
        "wait ms",
        "pm stages",
        "passes",
        "upload MB",
        "alloc MB"
    );
    // Meshes unchanged from one frame to the next keep their middle level, as in
    // `caustica render`.
    let meshes = caustica::accel::MeshBuildCache::default();
    let render = |backend: &dyn caustica::render::Backend, number: i64| -> FrameTimes {
        let start = Instant::now();
        let scene = caustica::evaluate_frame(&file, number, &assets, &overrides).unwrap();
        let build = Instant::now();
        // The layout `caustica render` takes: the scene's (or `--accel`), else the backend's.
        let options = caustica::prepare_options_for(&scene, &[backend]);
        let prepared = caustica::prepare_cached_as(&scene, &meshes, options).unwrap();
        let build_ms = build.elapsed().as_secs_f64() * 1e3;
        let frame = backend
            .render_frame(&scene, &prepared, &RenderOptions::default())
            .unwrap();
        let total = start.elapsed().as_secs_f64() * 1e3;
        let photon_stages: f64 = [
            "photons/global_trace_ms",
            "photons/caustic_trace_ms",
            "kdtree/global_build_ms",
            "kdtree/caustic_build_ms",
            "gather/seeding_ms",
            "gather/precompute_ms",
            "gather/final_gather_ms",
            "gather/irradiance_tree_ms",
            "gather/interpolate_ms",
            "gather/collect_points_ms",
            "gather/caustics_ms",
            "gather/compose_ms",
        ]
        .iter()
        .map(|n| stat(&frame, n))
        .sum();
        FrameTimes {
            total,
            build: build_ms,
            render: frame.metadata.render_seconds * 1e3,
            device: stat(&frame, "gpu/device_ms"),
            wait: stat(&frame, "host/wait_ms"),
            photon_stages,
            passes: stat(&frame, "frame/passes"),
            retries: stat(&frame, "shade_tree/retries"),
            upload_mb: stat(&frame, "gpu/uploaded_bytes") / 1e6,
            alloc_mb: stat(&frame, "gpu/allocated_bytes") / 1e6,
            device_stages: gpu_stats(&frame).map_or(Vec::new(), |g| g.device_busy.0.clone()),
            host_stages: gpu_stats(&frame).map_or(Vec::new(), |g| g.host_busy.0.clone()),
            idle_stages: gpu_stats(&frame).map_or(Vec::new(), |g| g.device_idle.0.clone()),
            kernel_stages: kernels(&frame, |k| k.ms),
            kernel_dispatches: kernels(&frame, |k| k.dispatches as f64),
            host: HOST_COUNTERS
                .iter()
                .map(|(label, count, ms)| (*label, stat(&frame, count), stat(&frame, ms)))
                .collect(),
        }
    };
    let all = Instant::now();
    let mut warm = Vec::new();
    let mut retries = 0.0;
    for (i, &number) in frame_numbers.iter().enumerate() {
        let t = render(backend.as_ref(), number);
        retries += t.retries;
        print_row(&format!("{} ({number})", i + 1), &t);
        if i > 0 {
            warm.push(t);
        }
    }
    let all_s = all.elapsed().as_secs_f64();
    if animation {
        println!(
            "all {} frames in one process: {all_s:.2} s (backend opened before: {open_ms:.0} ms; \
             {retries} rendered again, their shade trees outgrowing the last frame's room)",
            frame_numbers.len()
        );
    }
    if warm.is_empty() {
        return;
    }
    let med = |f: fn(&FrameTimes) -> f64| median(warm.iter().map(f).collect());
    let warm_median = FrameTimes {
        total: med(|t| t.total),
        build: med(|t| t.build),
        render: med(|t| t.render),
        device: med(|t| t.device),
        wait: med(|t| t.wait),
        photon_stages: med(|t| t.photon_stages),
        passes: med(|t| t.passes),
        retries: med(|t| t.retries),
        upload_mb: med(|t| t.upload_mb),
        alloc_mb: med(|t| t.alloc_mb),
        device_stages: Vec::new(),
        host_stages: Vec::new(),
        idle_stages: Vec::new(),
        kernel_stages: Vec::new(),
        kernel_dispatches: Vec::new(),
        host: Vec::new(),
    };
    print_row("warm med.", &warm_median);
    let host: Vec<String> = (0..HOST_COUNTERS.len())
        .map(|i| {
            let count = median(warm.iter().map(|t| t.host[i].1).collect());
            let ms = median(warm.iter().map(|t| t.host[i].2).collect());
            format!("{count:.0} {} in {ms:.2} ms", HOST_COUNTERS[i].0)
        })
        .collect();
    println!("host per warm frame (medians): {}", host.join(", "));
    // The device's and the host's time per stage, the medians over the warm frames.
    for (what, of) in [
        (
            "device",
            (|t: &FrameTimes| &t.device_stages) as fn(&FrameTimes) -> &Vec<(String, f64)>,
        ),
        ("host (waits left out)", |t: &FrameTimes| &t.host_stages),
        ("device idle before", |t: &FrameTimes| &t.idle_stages),
        (
            "device (CAUSTICA_KERNEL_TIMES: stage:kernel)",
            |t: &FrameTimes| &t.kernel_stages,
        ),
        ("dispatches (CAUSTICA_KERNEL_TIMES)", |t: &FrameTimes| {
            &t.kernel_dispatches
        }),
    ] {
        let stages: Vec<String> = of(&warm[0]).iter().map(|(s, _)| s.clone()).collect();
        if stages.is_empty() {
            continue;
        }
        let per_stage: Vec<String> = stages
            .iter()
            .map(|stage| {
                let ms = median(
                    warm.iter()
                        .map(|t| {
                            of(t)
                                .iter()
                                .find(|(s, _)| s == stage)
                                .map_or(0.0, |(_, v)| *v)
                        })
                        .collect(),
                );
                format!("{stage} {ms:.2}")
            })
            .collect();
        println!(
            "{what} ms per stage (warm median): {}",
            per_stage.join(", ")
        );
    }
    if cpu_frames > 0 {
        let cpu = caustica::select_backend(Device::Cpu).unwrap();
        let times: Vec<f64> = (0..cpu_frames)
            .map(|i| render(cpu.as_ref(), frame_numbers[i % frame_numbers.len()]).total)
            .collect();
        let cpu_median = median(times);
        println!(
            "CPU twin on {} threads: median {cpu_median:.1} ms per frame over {cpu_frames}; GPU warm frame {:.1}x faster",
            rayon::current_num_threads(),
            cpu_median / warm_median.total
        );
    }
}

/// The progressive mode's curve (see the module docs): `passes` passes of `scene` on
/// `backend`, averaged, each row comparing the average so far with the reference image.
fn progressive_curve(
    backend: &dyn Backend,
    scene: &caustica::scene::Scene,
    reference: &Path,
    passes: u32,
) {
    let options = caustica::prepare_options_for(scene, &[backend]);
    let prepared =
        caustica::prepare_cached_as(scene, &Default::default(), options).expect("the scene builds");
    let reference = caustica::io::read_frame(reference).expect("the reference EXR reads");
    let (w, h) = (scene.film.width, scene.film.height);
    assert_eq!(
        (reference.width, reference.height),
        (w, h),
        "the reference's size must be the --resolution"
    );
    println!(
        "{:>6} {:>9} {:>9} {:>10} {:>26}",
        "passes", "seconds", "pass ms", "relMSE", "mean / reference − 1 (RGB)"
    );
    let start = Instant::now();
    let mut sum = vec![Vec3::ZERO; (w * h) as usize];
    for i in 0..passes {
        let pass_start = Instant::now();
        let frame = backend
            .render_frame(&pass_scene(scene, i), &prepared, &RenderOptions::default())
            .expect("the pass renders");
        let pass_ms = pass_start.elapsed().as_secs_f64() * 1e3;
        for (s, c) in sum.iter_mut().zip(&frame.color) {
            *s += *c;
        }
        let n = (i + 1) as f32;
        let mean: Vec<Vec3> = sum.iter().map(|c| *c / n).collect();
        let c = compare(&mean, &reference.color, w, &[]).expect("the images compare");
        let bias = (c.mean / c.reference_mean - Vec3::ONE) * 100.0;
        println!(
            "{:>6} {:>9.2} {:>9.1} {:>10.5} {:>+8.2}% {:>+7.2}% {:>+7.2}%",
            i + 1,
            start.elapsed().as_secs_f64(),
            pass_ms,
            c.relmse,
            bias.x,
            bias.y,
            bias.z
        );
    }
}
