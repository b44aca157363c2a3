//! The `caustica` command line: arguments, logging and progress; the work is done by the library.

mod progress;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{ArgAction, Parser, Subcommand, ValueEnum};

use caustica::render::progress::ProgressSink;
use caustica::{Device, Error, Overrides, RenderJob};

/// How many frames of a long animation `check` evaluates: its first, its last and evenly
/// spaced ones between.
const CHECKED_FRAMES: u64 = 1000;

#[derive(Parser)]
#[command(
    name = "caustica",
    version,
    about = "An offline photon-mapping renderer: scene files in, OpenEXR frames out."
)]
struct Cli {
    /// More log output: -v for info, -vv for debug, -vvv for trace.
    #[arg(short, long, action = ArgAction::Count, global = true)]
    verbose: u8,
    /// Less output: -q hides progress; -qq also the line per finished frame and the warnings,
    /// leaving errors.
    #[arg(short, long, action = ArgAction::Count, global = true)]
    quiet: u8,
    /// The log level, instead of what -v and -q give [default: warn]. RUST_LOG's directives
    /// (e.g. RUST_LOG=wgpu=warn for the GPU driver's own reports) go on top.
    #[arg(long, value_enum, value_name = "LEVEL", global = true)]
    log_level: Option<LogLevel>,
    /// Worker threads of the CPU backend and of the host's parallel work, 1 to 1024
    /// [default: one per core].
    #[arg(long, value_name = "N", global = true, value_parser = clap::value_parser!(u16).range(1..=1024))]
    threads: Option<u16>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum LogLevel {
    Error,
    Warn,
    Info,
    Debug,
    Trace,
}

#[derive(Clone, Copy, ValueEnum)]
enum IntegratorArg {
    Whitted,
    #[value(name = "photon_map")]
    PhotonMap,
}

#[derive(Subcommand)]
enum Command {
    /// Render a scene's frames to EXR files.
    Render {
        /// The scene file (.csc).
        scene: PathBuf,
        /// Output path pattern; `####` becomes the frame number, and a pattern without `#` gets
        /// `_####` before its extension when several frames are rendered. A path ending in
        /// `.png` writes a tone-mapped PNG of the colour instead of an EXR
        /// [default: the scene's output path].
        #[arg(short, long, value_name = "PATTERN")]
        output: Option<String>,
        /// Override a top-level `let` of the scene (repeatable): a number, a vector `[x,y,z]`
        /// or a string, e.g. `-D spp=64 -D root=/data/assets/`.
        #[arg(short = 'D', long = "define", value_name = "NAME=VALUE")]
        defines: Vec<String>,
        /// Frames to render, within the scene's range: a frame, `A..B` (inclusive), `A..B:STEP`,
        /// or a comma-separated list of these, e.g. `1,5,10..20` [default: the scene's range].
        #[arg(long, value_name = "LIST")]
        frames: Option<String>,
        /// Image size, e.g. 1024x768 [default: the scene's film resolution].
        #[arg(long, value_name = "WxH", value_parser = parse_resolution)]
        resolution: Option<(u32, u32)>,
        /// Render only a window of the image, as fractions X0,X1,Y0,Y1 (x from the left, y
        /// from the top), like pbrt's --cropwindow: the EXR keeps the full size as its display
        /// window, with the crop as its data window.
        #[arg(long, value_name = "X0,X1,Y0,Y1")]
        crop: Option<String>,
        /// Camera samples per pixel, from 1 to 16777216 [default: the scene's film spp].
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=caustica::scene::limits::MAX_SPP as i64))]
        spp: Option<u32>,
        /// Random seed [default: the scene's film seed].
        #[arg(long, value_name = "N")]
        seed: Option<u64>,
        /// Extra EXR layers, comma-separated, instead of the scene's: albedo, normal, depth,
        /// position, id, direct, indirect, caustic, seeds, photons_global, photons_caustic
        /// (written with pbrt's G-buffer names: Albedo, N and Ns, Z, P)
        /// [default: the scene's output layers].
        #[arg(long, value_name = "LIST", value_delimiter = ',')]
        layers: Option<Vec<String>>,
        /// How the frame is lit: photon_map (caustics and final-gathered indirect light), or
        /// whitted (direct light and specular paths) [default: the scene's film integrator,
        /// photon_map unless it says].
        #[arg(long, value_enum)]
        integrator: Option<IntegratorArg>,
        /// The hierarchy's node layout and builder, LAYOUT[:BUILDER]: qbvh, wide (8-wide
        /// compressed) or binary, built by cpu_sah, or wide:gpu_lbvh, gpu_sah, gpu_hybrid or
        /// gpu_ploc (built on the GPU), or grid (two-level grids under the wide top level);
        /// `caustica info --accels` lists them [default: the scene's film accel, else the
        /// backend's layout, built by cpu_sah].
        #[arg(long, value_name = "LAYOUT:BUILDER")]
        accel: Option<String>,
        /// A preview: an eighth of the photons, a quarter of the irradiance seeds and gather rays.
        #[arg(long)]
        quick: bool,
        /// Progressive passes for a converging still: each pass has fresh samples, photon
        /// maps and seeds and smaller photon estimates; the frame is their mean
        /// [default: the scene's film passes].
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
        passes: Option<u32>,
        /// Stop starting progressive passes after this many seconds per frame; without
        /// --passes (or film passes), as many passes as fit.
        #[arg(long, value_name = "SECONDS")]
        time: Option<f64>,
        /// Which backend renders.
        #[arg(long, value_enum, default_value_t = DeviceArg::Auto)]
        device: DeviceArg,
        /// The GPUs that render: auto (every discrete GPU), all, or indices and name fragments
        /// from `caustica info --gpu`, comma-separated. Each device takes the next frame (or,
        /// for one progressive still, the next pass) when it finishes one
        /// [default: the scene's film devices, else auto].
        #[arg(long, value_name = "LIST", value_parser = parse_devices)]
        devices: Option<caustica::scene::DeviceList>,
        /// Render only shard I of N (0 <= I < N): frames number I, I+N, I+2N, … of the range,
        /// counted from 0, so that N independent jobs (a Slurm array, a Kubernetes indexed
        /// job) render every frame exactly once.
        #[arg(long, value_name = "I/N", value_parser = caustica::Shard::parse)]
        shard: Option<caustica::Shard>,
        /// Leave frames whose EXR already exists alone (Blender's no-overwrite).
        #[arg(long)]
        skip_existing: bool,
        /// Let `include` read files outside the scene's folder and the folders below it.
        #[arg(long)]
        allow_includes_outside: bool,
        /// Claim each frame with an empty EXR before rendering it and skip frames whose EXR
        /// exists, so that several machines can share one output folder (Blender's
        /// placeholders). The finished frame replaces its placeholder whole.
        #[arg(long)]
        placeholders: bool,
        /// Also write a tone-mapped PNG (`####` becomes the frame number).
        #[arg(long, value_name = "PNG")]
        preview: Option<String>,
        /// Exposure of the PNGs (the preview, or an `-o` ending in `.png`), in stops.
        #[arg(
            long,
            value_name = "STOPS",
            default_value_t = 0.0,
            allow_negative_numbers = true
        )]
        exposure: f32,
        /// Print the named counters and timings of every frame (on the GPU this also times
        /// the Whitted phases, which costs a frame about a millisecond)
        #[arg(long)]
        stats: bool,
    },
    /// Check a scene for errors without rendering it.
    Check {
        scene: PathBuf,
        /// Override a top-level `let`, as for `render` (repeatable).
        #[arg(short = 'D', long = "define", value_name = "NAME=VALUE")]
        defines: Vec<String>,
        /// Let `include` read files outside the scene's folder and the folders below it.
        #[arg(long)]
        allow_includes_outside: bool,
    },
    /// Compare a rendered image with a reference: relative MSE (ε = 0.01) and means. Each is an
    /// EXR (its RGB) or a PNG/JPEG (decoded from sRGB).
    Compare {
        image: PathBuf,
        reference: PathBuf,
        /// Write each pixel's relative squared error as a false-colour PNG: black at 1e-5 and
        /// below, then blue, cyan, green, yellow, red at 1 and above, a colour a decade.
        #[arg(long, value_name = "PNG")]
        diff: Option<PathBuf>,
        /// Pixel rectangles to leave out, `x0,y0,x1,y1` (repeatable).
        #[arg(long, value_name = "X0,Y0,X1,Y1")]
        exclude: Vec<String>,
        /// Exit with 1 when the relative MSE is above this (or is not a number).
        #[arg(long, value_name = "X")]
        tolerance: Option<f64>,
    },
    /// Print counts and bounds of what a scene holds, and/or what the GPU offers.
    #[command(arg_required_else_help = true)]
    Info {
        scene: Option<PathBuf>,
        /// Describe this frame [default: the first of the scene's range].
        #[arg(long)]
        frame: Option<i64>,
        /// Describe the GPU adapter: name, backend, optional features and limits.
        #[arg(long)]
        device: bool,
        /// List the GPU adapters with the indices `--devices` takes.
        #[arg(long)]
        gpu: bool,
        /// List the `--accel` choices: the hierarchy's layouts and builders.
        #[arg(long)]
        accels: bool,
        /// Let `include` read files outside the scene's folder and the folders below it.
        #[arg(long)]
        allow_includes_outside: bool,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum DeviceArg {
    Auto,
    Cpu,
    Gpu,
}

fn parse_resolution(text: &str) -> Result<(u32, u32), String> {
    let (w, h) = text
        .split_once(['x', 'X'])
        .ok_or_else(|| format!("expected WxH, got \"{text}\""))?;
    let w: u32 = w
        .trim()
        .parse()
        .map_err(|_| format!("bad width in \"{text}\""))?;
    let h: u32 = h
        .trim()
        .parse()
        .map_err(|_| format!("bad height in \"{text}\""))?;
    if w == 0 || h == 0 || w > 65536 || h > 65536 {
        return Err(format!("resolution {w}x{h} is out of range (1..65536)"));
    }
    Ok((w, h))
}

fn parse_devices(text: &str) -> Result<caustica::scene::DeviceList, String> {
    caustica::scene::DeviceList::parse(text)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(&cli);
    if let Some(n) = cli.threads {
        if let Err(e) = rayon::ThreadPoolBuilder::new()
            .num_threads(n.into())
            .build_global()
        {
            eprintln!("error: --threads {n}: {e}");
            return ExitCode::FAILURE;
        }
    }
    // A file-size limit (`ulimit -f`) would kill the process mid-write with SIGXFSZ, leaving its
    // temporary file: ignored, the write fails with EFBIG instead, and the error path removes it.
    #[cfg(unix)]
    // SAFETY: setting a signal's disposition to SIG_IGN before any thread is started.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    // Ctrl-C, SIGTERM (a farm's kill) and SIGHUP: remove the temporary files, output locks and
    // empty placeholders this process has made, then stop as a shell expects (128 + SIGINT).
    // SIGKILL cannot be caught: the next write of the same file removes what it left.
    let stopped = ctrlc::set_handler(|| {
        let removed = caustica::io::remove_pending_files();
        eprintln!("stopped: removed {removed} unfinished file(s)");
        std::process::exit(130);
    });
    if let Err(e) = stopped {
        log::warn!(
            "cannot catch Ctrl-C and SIGTERM ({e}): a stopped render may leave temporary files"
        );
    }
    match run(cli.command, cli.quiet) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let text = e.to_string();
            let text = text.trim_end();
            // Scene diagnostics carry their own `file:line:col: error:`.
            if matches!(e, Error::Scene(_)) || text.starts_with("error:") {
                eprintln!("{text}");
            } else {
                eprintln!("error: {text}");
            }
            // Usage mistakes exit with 2, like the argument parser's own.
            if matches!(e, Error::Usage(_)) {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// env_logger at the level -v, -q or --log-level give, with `warning:`/`error:` prefixes. The
/// GPU stack's own crates report errors only, unless RUST_LOG (parsed on top) says otherwise.
/// A warning is printed once per run: every frame is evaluated on its own, and a scene's
/// warning (an unused variable, say) would otherwise repeat once a frame.
fn init_logging(cli: &Cli) {
    use log::LevelFilter;
    let level = match (cli.log_level, cli.verbose, cli.quiet) {
        (Some(LogLevel::Error), ..) => LevelFilter::Error,
        (Some(LogLevel::Warn), ..) => LevelFilter::Warn,
        (Some(LogLevel::Info), ..) => LevelFilter::Info,
        (Some(LogLevel::Debug), ..) => LevelFilter::Debug,
        (Some(LogLevel::Trace), ..) => LevelFilter::Trace,
        (None, 0, q) if q >= 2 => LevelFilter::Error,
        (None, 0, _) => LevelFilter::Warn,
        (None, 1, _) => LevelFilter::Info,
        (None, 2, _) => LevelFilter::Debug,
        (None, _, _) => LevelFilter::Trace,
    };
    let mut builder = env_logger::Builder::new();
    builder.filter_level(level);
    for gpu_stack in ["wgpu", "wgpu_core", "wgpu_hal", "naga"] {
        builder.filter_module(gpu_stack, LevelFilter::Error);
    }
    if let Ok(directives) = std::env::var("RUST_LOG") {
        builder.parse_filters(&directives);
    }
    let warned = std::sync::Mutex::new(std::collections::HashSet::<String>::new());
    builder.format(move |out, record| match record.level() {
        log::Level::Error => writeln!(out, "error: {}", record.args()),
        log::Level::Warn => {
            let text = record.args().to_string();
            // Only poisoned if a thread panicked while logging; the set is still usable.
            let mut warned = warned.lock().unwrap_or_else(|e| e.into_inner());
            if warned.insert(text.clone()) {
                writeln!(out, "warning: {text}")
            } else {
                Ok(())
            }
        }
        other => writeln!(
            out,
            "{}: {}: {}",
            other.as_str().to_lowercase(),
            record.target(),
            record.args()
        ),
    });
    builder.init();
}

fn run(command: Command, quiet: u8) -> Result<(), Error> {
    match command {
        Command::Render {
            scene,
            output,
            defines,
            frames,
            resolution,
            crop,
            spp,
            seed,
            layers,
            integrator,
            accel,
            quick,
            passes,
            time,
            device,
            devices,
            shard,
            skip_existing,
            allow_includes_outside,
            placeholders,
            preview,
            exposure,
            stats,
        } => {
            if let Some(t) = time.filter(|t| !(t.is_finite() && *t > 0.0)) {
                return Err(Error::Usage(format!(
                    "--time {t}: expected a positive number of seconds"
                )));
            }
            // -q hides the progress; -qq the frame lines too.
            let bars = (quiet == 0).then(|| Arc::new(progress::Bars::new()));
            let job = RenderJob {
                scene_path: scene,
                frames: frames.as_deref().map(caustica::parse_frames).transpose()?,
                overrides: Overrides {
                    resolution,
                    spp,
                    seed,
                    output,
                    layers: layers.as_deref().map(caustica::parse_layers).transpose()?,
                    integrator: integrator.map(|i| match i {
                        IntegratorArg::Whitted => caustica::scene::Integrator::Whitted,
                        IntegratorArg::PhotonMap => caustica::scene::Integrator::PhotonMap,
                    }),
                    quality: quick.then_some(caustica::scene::Quality::Quick),
                    passes,
                    crop: crop.as_deref().map(caustica::parse_crop).transpose()?,
                    accel: accel.as_deref().map(caustica::parse_accel).transpose()?,
                },
                defines,
                device: match device {
                    DeviceArg::Auto => Device::Auto,
                    DeviceArg::Cpu => Device::Cpu,
                    DeviceArg::Gpu => Device::Gpu,
                },
                devices,
                preview,
                exposure,
                time_limit: time,
                shard,
                skip_existing,
                placeholders,
                phase_times: stats,
                includes: scope(allow_includes_outside),
                progress: bars
                    .clone()
                    .map(|b| ProgressSink(b as Arc<dyn caustica::render::progress::Progress>)),
            };
            let say = |line: String| match &bars {
                Some(bars) => bars.println(&line),
                None => println!("{line}"),
            };
            let start = std::time::Instant::now();
            let reports = caustica::render_animation(&job, |report| {
                if report.skipped {
                    if quiet < 2 {
                        say(format!(
                            "frame {}: skipped ({} exists)",
                            report.frame,
                            report.exr.display()
                        ));
                    }
                    return;
                }
                if quiet < 2 {
                    say(format!(
                        "frame {}: {} (build {:.3} s, render {:.3} s)",
                        report.frame,
                        report.exr.display(),
                        report.build_seconds,
                        report.render_seconds
                    ));
                    if let Some(p) = &report.preview {
                        say(format!("  preview: {}", p.display()));
                    }
                }
                if stats {
                    say(format!("  {:<28} {}", "device", report.device));
                    say(format!(
                        "  {:<28} {}",
                        "host threads",
                        rayon::current_num_threads()
                    ));
                    for (name, value) in &report.stats.entries() {
                        say(format!("  {name:<28} {}", format_value(*value)));
                    }
                }
            })?;
            // The bars are cleared before the summary (the job holds the last other handle).
            drop(job);
            drop(bars);
            if quiet < 2 && reports.is_empty() {
                println!("nothing to render: this shard has no frame of the range");
            }
            let rendered: Vec<_> = reports.iter().filter(|r| !r.skipped).collect();
            if quiet < 2 && rendered.len() > 1 {
                let mut devices: Vec<&str> = rendered.iter().map(|r| r.device.as_str()).collect();
                devices.sort();
                devices.dedup();
                println!(
                    "{} frames in {:.2} s on {}",
                    rendered.len(),
                    start.elapsed().as_secs_f64(),
                    devices.join(", ")
                );
            }
            Ok(())
        }
        Command::Compare {
            image,
            reference,
            diff,
            exclude,
            tolerance,
        } => {
            if let Some(t) = tolerance.filter(|t| !(t.is_finite() && *t >= 0.0)) {
                return Err(Error::Usage(format!(
                    "--tolerance {t}: expected a relative MSE of 0 or more"
                )));
            }
            let excluded = exclude
                .iter()
                .map(|e| caustica::parse_rect(e))
                .collect::<Result<Vec<_>, _>>()?;
            let c = caustica::compare_files(&image, &reference, &excluded, diff.as_deref())?;
            println!(
                "relmse {:.6} over {} pixels; mean {:.5} {:.5} {:.5}, reference {:.5} {:.5} {:.5}",
                c.relmse,
                c.pixels,
                c.mean.x,
                c.mean.y,
                c.mean.z,
                c.reference_mean.x,
                c.reference_mean.y,
                c.reference_mean.z
            );
            match tolerance {
                Some(t) if c.relmse.is_nan() || c.relmse > t => Err(Error::OutOfTolerance(
                    format!("error: relmse {:.6} is above the tolerance {t}", c.relmse),
                )),
                _ => Ok(()),
            }
        }
        Command::Check {
            scene,
            defines,
            allow_includes_outside,
        } => {
            let file =
                caustica::load_scene_scoped(&scene, &defines, scope(allow_includes_outside))?;
            let range = file.frame_range()?;
            let assets = caustica::io::AssetCache::default();
            let mut errors: Option<caustica::Diagnostics> = None;
            // A long animation is checked at its first and last frames and evenly between.
            let checked = range.sample(CHECKED_FRAMES);
            for &frame in &checked {
                if let Err(Error::Scene(e)) =
                    caustica::evaluate_frame(&file, frame, &assets, &Overrides::default())
                {
                    // The same mistake usually repeats in every frame: report the first failing frame.
                    errors = Some(e);
                    break;
                }
            }
            match errors {
                Some(e) => Err(e.into()),
                None => {
                    let sampled = if (checked.len() as u64) < range.len() {
                        format!(
                            "; {} of them checked: the first, the last and evenly spaced ones",
                            checked.len()
                        )
                    } else {
                        String::new()
                    };
                    println!(
                        "{}: ok ({} frame{}{sampled})",
                        scene.display(),
                        range.len(),
                        if range.len() == 1 { "" } else { "s" }
                    );
                    Ok(())
                }
            }
        }
        Command::Info {
            scene,
            frame,
            device,
            gpu,
            accels,
            allow_includes_outside,
        } => {
            if accels {
                print!("{}", caustica::describe_accels());
            }
            if gpu {
                println!("{}", caustica::describe_adapters());
            }
            if device {
                println!("{}", caustica::describe_device()?);
            }
            let Some(scene) = scene else { return Ok(()) };
            let file = caustica::load_scene_scoped(&scene, &[], scope(allow_includes_outside))?;
            let frame = match frame {
                Some(f) => f,
                None => file.frame_range()?.first,
            };
            let assets = caustica::io::AssetCache::default();
            let evaluated = caustica::evaluate_frame(&file, frame, &assets, &Overrides::default())?;
            println!("{}", scene.display());
            println!("{}", caustica::describe_scene(&evaluated));
            Ok(())
        }
    }
}

/// Where includes may come from: the scene's folder tree, or anywhere with
/// `--allow-includes-outside`.
fn scope(allow_outside: bool) -> caustica::IncludeScope {
    if allow_outside {
        caustica::IncludeScope::Anywhere
    } else {
        caustica::IncludeScope::SceneFolder
    }
}

fn format_value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.3}")
    }
}
