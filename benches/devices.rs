//! A render spread over several devices (`render::schedule`): an animation's frames and a
//! progressive still's passes handed out to the devices of `--devices`, each taking the next
//! frame or pass when it finishes one, against the same work on the list's first device alone.
//! Each configuration opens fresh devices (frame 1 on each compiles its kernels, from the disk
//! cache once it is warm, as in `caustica render`), and is timed from the moment they are open,
//! as the `frames` bench times an animation. Nothing is written to disk.
//!
//! `cargo bench --bench devices -- --devices 0,1 [--scene scenes/animated.csc] [--resolution
//!  1920x1080] [--still scenes/cornell_spheres.csc] [--still-resolution 1024x1024] [--passes 16]
//!  [--still-quality reference] [--runs 2] [--only animation|still] [--one-first]
//!  [--pass-detail P [--max-gather-rays N]] [--frame-detail]`
//!
//! `--frame-detail` prints each frame of the animation as it ends: its device, when it began and
//! ended, its device time, the bytes it allocated and the host's busiest stages.
//!
//! `--still-quality reference` renders the still as `film { quality reference }` does (its own
//! passes, four times the photons, twice the seeds and gather rays) unless `--passes` is given.
//!
//! Prints, per run and configuration: the seconds including opening the devices, the seconds
//! after opening, the items each device took, and the warm rate (items finished per second
//! once every device has finished its first, whose kernels compile); then the medians of each
//! on one device against all, and their ratios. The runs alternate (all devices first unless
//! `--one-first`).

mod support;

use std::path::{Path, PathBuf};
use std::time::Instant;

use caustica::render::progressive::{pass_scene, render_progressive, Progression};
use caustica::render::schedule::{hand_out, WorkError};
use caustica::render::{Backend, RenderError, RenderOptions};
use caustica::scene::{DeviceList, Integrator, Quality};
use caustica::{Device, Overrides};
use support::{arg, median};

fn open(list: &DeviceList) -> (Vec<Box<dyn Backend>>, f64) {
    let start = Instant::now();
    let backends = caustica::select_backends(Device::Gpu, list).expect("the devices open");
    (backends, start.elapsed().as_secs_f64())
}

fn overrides(resolution: (u32, u32)) -> Overrides {
    Overrides {
        resolution: Some(resolution),
        integrator: Some(Integrator::PhotonMap),
        layers: Some(Vec::new()),
        ..Default::default()
    }
}

fn resolution(text: &str) -> (u32, u32) {
    let (w, h) = text.split_once('x').expect("WxH");
    (w.parse().expect("width"), h.parse().expect("height"))
}

/// What one configuration did: seconds from the devices' opening to the end, the items
/// each device took, and the steady rate: items per second finished after every device has
/// finished its first (whose kernels compile), NaN with too few items.
struct Run {
    seconds: f64,
    taken: Vec<usize>,
    warm_rate: f64,
}

/// The steady rate of items finishing at `done` (seconds since the start, with the device of
/// each) once every one of `devices` devices has finished one.
fn warm_rate(done: &[(f64, usize)], devices: usize) -> f64 {
    let mut first = vec![f64::NAN; devices];
    for &(t, d) in done {
        if first[d].is_nan() {
            first[d] = t;
        }
    }
    let from = first.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let after: Vec<f64> = done.iter().map(|d| d.0).filter(|&t| t > from).collect();
    match after.iter().copied().reduce(f64::max) {
        Some(last) if after.len() >= 2 && last > from => after.len() as f64 / (last - from),
        _ => f64::NAN,
    }
}

/// The scene's whole frame range on `devices`; with `detail`, each frame's start and end, wall
/// and device time, bytes allocated and the host's busiest stages are printed as it ends.
fn animation(
    scene: &Path,
    res: (u32, u32),
    devices: &[&dyn Backend],
    opened: Instant,
    detail: bool,
) -> Run {
    let file = caustica::load_scene(scene).expect("the scene loads");
    let range = file.frame_range().expect("frames");
    let assets = caustica::io::AssetCache::default();
    let overrides = overrides(res);
    let scenes: Vec<_> = (range.first..=range.last)
        .map(|f| caustica::evaluate_frame(&file, f, &assets, &overrides).expect("evaluates"))
        .collect();
    if detail {
        println!(
            "  {} frames evaluated {:.3} s after opening",
            scenes.len(),
            opened.elapsed().as_secs_f64()
        );
    }
    let meshes = caustica::accel::MeshBuildCache::default();
    let done = std::sync::Mutex::new(Vec::new());
    let work = |device: &dyn Backend, i: usize| -> Result<(), WorkError<RenderError>> {
        let began = opened.elapsed().as_secs_f64();
        let options = caustica::prepare_options_for(&scenes[i], &[device]);
        let prepared = caustica::prepare_cached_as(&scenes[i], &meshes, options).expect("builds");
        let frame = device
            .render_frame(&scenes[i], &prepared, &RenderOptions::default())
            .map_err(WorkError::Device)?;
        let d = devices
            .iter()
            .position(|x| std::ptr::addr_eq(*x, device))
            .expect("one of the devices");
        if detail {
            let entries = frame.metadata.stats.entries();
            let stat = |n: &str| entries.iter().find(|e| e.0 == n).map_or(f64::NAN, |e| e.1);
            let mut busy: Vec<&(String, f64)> = entries
                .iter()
                .filter(|e| e.0.starts_with("host/busy/"))
                .collect();
            busy.sort_by(|a, b| b.1.total_cmp(&a.1));
            let busy: Vec<String> = busy
                .iter()
                .take(6)
                .map(|(n, ms)| format!("{} {ms:.1}", &n["host/busy/".len()..]))
                .collect();
            println!(
                "  frame {i} on {d}: {began:.3}-{:.3} s, {:.1} ms device, {:.0} MB allocated; host busy ms: {}",
                opened.elapsed().as_secs_f64(),
                stat("gpu/device_ms"),
                stat("gpu/allocated_bytes") / 1e6,
                busy.join(", ")
            );
        }
        done.lock()
            .unwrap()
            .push((opened.elapsed().as_secs_f64(), d));
        Ok(())
    };
    hand_out(
        devices,
        scenes.len(),
        &|_| true,
        &work,
        &mut |f| panic!("{f:?}"),
        &mut |_, ()| Ok(()),
    )
    .expect("the frames render");
    let done = done.into_inner().unwrap();
    Run {
        seconds: opened.elapsed().as_secs_f64(),
        taken: (0..devices.len())
            .map(|d| done.iter().filter(|x| x.1 == d).count())
            .collect(),
        warm_rate: warm_rate(&done, devices.len()),
    }
}

/// The progressive passes of the scene's first frame on `devices` (`passes`, or with a
/// quality preset its own).
fn still(
    scene: &Path,
    res: (u32, u32),
    passes: Option<u32>,
    quality: Option<Quality>,
    devices: &[&dyn Backend],
    opened: Instant,
) -> Run {
    let file = caustica::load_scene(scene).expect("the scene loads");
    let first = file.frame_range().expect("frames").first;
    let assets = caustica::io::AssetCache::default();
    let overrides = Overrides {
        passes,
        quality,
        ..overrides(res)
    };
    let s = caustica::evaluate_frame(&file, first, &assets, &overrides).expect("evaluates");
    let prepared = caustica::prepare(&s).expect("builds");
    let progression = Progression::of(&s, None);
    let mut done = Vec::new();
    let frame = render_progressive(
        devices,
        &s,
        &prepared,
        &RenderOptions::default(),
        progression,
        |_, _| done.push((opened.elapsed().as_secs_f64(), 0)),
        |f| panic!("{f:?}"),
    )
    .expect("the still renders");
    assert_eq!(
        frame.metadata.stats.progressive_passes,
        Some(progression.passes)
    );
    Run {
        seconds: opened.elapsed().as_secs_f64(),
        taken: vec![progression.passes as usize],
        // Passes are added in order, so their times say when the next in line was ready.
        warm_rate: warm_rate(&done, 1),
    }
}

/// `--pass-detail P`: the first `P` progressive passes of the still one after the other on the
/// list's first device, each with its wall and device milliseconds, the host's waits, the bytes
/// it allocated and the bind groups it made (what the first pass pays that the next do not).
fn pass_detail(
    scene: &Path,
    res: (u32, u32),
    quality: Option<Quality>,
    passes: u32,
    list: &DeviceList,
    options: &RenderOptions,
) {
    let file = caustica::load_scene(scene).expect("the scene loads");
    let first = file.frame_range().expect("frames").first;
    let assets = caustica::io::AssetCache::default();
    let overrides = Overrides {
        quality,
        ..overrides(res)
    };
    let s = caustica::evaluate_frame(&file, first, &assets, &overrides).expect("evaluates");
    let prepared = caustica::prepare(&s).expect("builds");
    let start = Instant::now();
    let (backends, _) = open(list);
    println!(
        "pass detail: opened in {:.3} s",
        start.elapsed().as_secs_f64()
    );
    for pass in 0..passes {
        let t = Instant::now();
        let frame = backends[0]
            .render_frame(&pass_scene(&s, pass), &prepared, options)
            .expect("the pass renders");
        let stat = |n: &str| frame.metadata.stat(n).unwrap_or(f64::NAN);
        println!(
            "pass {pass}: {:.1} ms wall, {:.1} ms device, {:.1} ms waits ({} waits), {:.0} MB allocated, {} bind groups made",
            t.elapsed().as_secs_f64() * 1e3,
            stat("gpu/device_ms"),
            stat("host/wait_ms"),
            stat("host/waits"),
            stat("gpu/allocated_bytes") / 1e6,
            stat("gpu/bind_groups"),
        );
    }
}

fn main() {
    // `RUST_LOG=caustica=debug` times the devices' opening and every kernel's compilation.
    let _ = env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"))
        .format_timestamp_millis()
        .try_init();
    let args: Vec<String> = std::env::args().collect();
    let list = DeviceList::parse(&arg(&args, "--devices").unwrap_or_else(|| "all".into()))
        .expect("--devices LIST");
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let scene = arg(&args, "--scene").map_or(repo.join("scenes/animated.csc"), PathBuf::from);
    let res = resolution(&arg(&args, "--resolution").unwrap_or_else(|| "1920x1080".into()));
    let still_scene =
        arg(&args, "--still").map_or(repo.join("scenes/cornell_spheres.csc"), PathBuf::from);
    let still_res =
        resolution(&arg(&args, "--still-resolution").unwrap_or_else(|| "1024x1024".into()));
    let passes: Option<u32> = arg(&args, "--passes").map(|p| p.parse().expect("--passes N"));
    let quality = match arg(&args, "--still-quality").as_deref() {
        None | Some("default") => None,
        Some("reference") => Some(Quality::Reference),
        Some(other) => panic!("--still-quality {other}: expected default or reference"),
    };
    let runs: usize = arg(&args, "--runs").map_or(2, |r| r.parse().expect("--runs N"));
    let only = arg(&args, "--only");
    let one_first = args.iter().any(|a| a == "--one-first");
    let detail = args.iter().any(|a| a == "--frame-detail");
    // The list's first device alone.
    let first_only = match &list {
        DeviceList::List(entries) => DeviceList::List(vec![entries[0].clone()]),
        _ => DeviceList::parse("0").unwrap(),
    };
    if let Some(p) = arg(&args, "--pass-detail") {
        let p: u32 = p.parse().expect("--pass-detail P");
        // `--max-gather-rays N`: the final gather's chunks (RenderOptions::max_gather_rays).
        let options = RenderOptions {
            max_gather_rays: arg(&args, "--max-gather-rays").map(|n| n.parse().expect("N")),
            ..Default::default()
        };
        pass_detail(&still_scene, still_res, quality, p, &first_only, &options);
        return;
    }
    let (probe, _) = open(&list);
    let names: Vec<String> = probe.iter().map(|b| b.name()).collect();
    drop(probe);
    let k = names.len();
    println!("devices: {}", names.join(" | "));
    let mut order = vec![(list.clone(), k), (first_only, 1)];
    if one_first {
        order.reverse();
    }
    for what in ["animation", "still"] {
        if only.as_deref().is_some_and(|o| o != what) {
            continue;
        }
        // [all devices, the first alone]: (seconds with opening, from opening, warm rate)
        let mut figures: [Vec<(f64, f64, f64)>; 2] = [Vec::new(), Vec::new()];
        for run in 0..runs {
            for (config, count) in &order {
                let start = Instant::now();
                let (backends, open_s) = open(config);
                let opened = Instant::now();
                let devices: Vec<&dyn Backend> = backends.iter().map(|b| b.as_ref()).collect();
                let r = if what == "animation" {
                    animation(&scene, res, &devices, opened, detail)
                } else {
                    still(&still_scene, still_res, passes, quality, &devices, opened)
                };
                let with_open = start.elapsed().as_secs_f64();
                let unit = if what == "animation" {
                    "frames"
                } else {
                    "passes"
                };
                println!(
                    "{what} run {run}: {count} device(s): {with_open:.3} s with opening ({open_s:.2} s), {:.3} s after; {unit} per device {:?}; warm {:.1} {unit}/s",
                    r.seconds, r.taken, r.warm_rate
                );
                figures[usize::from(*count == 1)].push((with_open, r.seconds, r.warm_rate));
            }
        }
        let med =
            |c: usize, f: fn(&(f64, f64, f64)) -> f64| median(figures[c].iter().map(f).collect());
        let (one_w, all_w) = (med(1, |f| f.0), med(0, |f| f.0));
        let (one_a, all_a) = (med(1, |f| f.1), med(0, |f| f.1));
        let (one_r, all_r) = (med(1, |f| f.2), med(0, |f| f.2));
        println!(
            "{what}, medians, 1 device against {k}: with opening {one_w:.3} / {all_w:.3} s ({:.2}x); after opening {one_a:.3} / {all_a:.3} s ({:.2}x); warm rate {one_r:.1} / {all_r:.1} per s ({:.2}x)",
            one_w / all_w,
            one_a / all_a,
            all_r / one_r
        );
    }
}
