//! The `caustica` command line: arguments, logging and progress; the work is done by the library.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

use caustica::{Device, Error, Overrides, RenderJob};

#[derive(Parser)]
#[command(
    name = "caustica",
    version,
    about = "An offline photon-mapping renderer: scene files in, OpenEXR frames out."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
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
        /// Output path pattern; `####` becomes the frame number [default: the scene's output path].
        #[arg(short, long, value_name = "PATTERN")]
        output: Option<String>,
        /// Frames to render, within the scene's range: a frame, `A..B` (inclusive), `A..B:STEP`,
        /// or a comma-separated list of these, e.g. `1,5,10..20` [default: the scene's range].
        #[arg(long, value_name = "LIST")]
        frames: Option<String>,
        /// Image size, e.g. 1024x768 [default: the scene's film resolution].
        #[arg(long, value_name = "WxH", value_parser = parse_resolution)]
        resolution: Option<(u32, u32)>,
        /// Camera samples per pixel [default: the scene's film spp].
        #[arg(long, value_name = "N")]
        spp: Option<u32>,
        /// Random seed [default: the scene's film seed].
        #[arg(long, value_name = "N")]
        seed: Option<u64>,
        /// Extra EXR layers, comma-separated, instead of the scene's: albedo, normal, depth, id,
        /// photons_global, photons_caustic [default: the scene's output layers].
        #[arg(long, value_name = "LIST", value_delimiter = ',')]
        layers: Option<Vec<String>>,
        /// How the frame is lit: whitted, or photon_map (caustics and final-gathered indirect
        /// light) [default: the scene's film integrator].
        #[arg(long, value_enum)]
        integrator: Option<IntegratorArg>,
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
        /// Claim each frame with an empty EXR before rendering it and skip frames whose EXR
        /// exists, so that several machines can share one output folder (Blender's
        /// placeholders). The finished frame replaces its placeholder whole.
        #[arg(long)]
        placeholders: bool,
        /// Also write a tone-mapped PNG (`####` becomes the frame number).
        #[arg(long, value_name = "PNG")]
        preview: Option<String>,
        /// Print the named counters and timings of every frame.
        #[arg(long)]
        stats: bool,
        /// Print only errors.
        #[arg(short, long)]
        quiet: bool,
    },
    /// Check a scene for errors without rendering it.
    Check { scene: PathBuf },
    /// Compare a rendered EXR with a reference EXR: relative MSE (ε = 0.01) and means.
    Compare {
        image: PathBuf,
        reference: PathBuf,
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
    let quiet = matches!(cli.command, Command::Render { quiet: true, .. });
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(if quiet {
        "error"
    } else {
        "warn"
    }))
    .format_timestamp(None)
    .init();
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{}", e.to_string().trim_end());
            // Usage mistakes exit with 2, like the argument parser's own.
            if matches!(e, Error::Usage(_)) {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

fn run(command: Command) -> Result<(), Error> {
    match command {
        Command::Render {
            scene,
            output,
            frames,
            resolution,
            spp,
            seed,
            layers,
            integrator,
            quick,
            passes,
            time,
            device,
            devices,
            shard,
            skip_existing,
            placeholders,
            preview,
            stats,
            quiet,
        } => {
            if let Some(t) = time.filter(|t| !(t.is_finite() && *t > 0.0)) {
                return Err(Error::Usage(format!(
                    "--time {t}: expected a positive number of seconds"
                )));
            }
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
                },
                device: match device {
                    DeviceArg::Auto => Device::Auto,
                    DeviceArg::Cpu => Device::Cpu,
                    DeviceArg::Gpu => Device::Gpu,
                },
                devices,
                preview,
                time_limit: time,
                shard,
                skip_existing,
                placeholders,
                progress: !quiet,
            };
            let start = std::time::Instant::now();
            let reports = caustica::render_animation(&job, |report| {
                if report.skipped {
                    if !quiet {
                        println!(
                            "frame {}: skipped ({} exists)",
                            report.frame,
                            report.exr.display()
                        );
                    }
                    return;
                }
                if !quiet {
                    println!(
                        "frame {}: {} (build {:.3} s, render {:.3} s)",
                        report.frame,
                        report.exr.display(),
                        report.build_seconds,
                        report.render_seconds
                    );
                    if let Some(p) = &report.preview {
                        println!("  preview: {}", p.display());
                    }
                }
                if stats {
                    println!("  {:<28} {}", "device", report.device);
                    for (name, value) in &report.stats.entries() {
                        println!("  {name:<28} {}", format_value(*value));
                    }
                }
            })?;
            if !quiet && reports.is_empty() {
                println!("nothing to render: this shard has no frame of the range");
            }
            let rendered: Vec<_> = reports.iter().filter(|r| !r.skipped).collect();
            if !quiet && rendered.len() > 1 {
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
            let c = caustica::compare_files(&image, &reference, &excluded)?;
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
        Command::Check { scene } => {
            let file = caustica::load_scene(&scene)?;
            let range = file.frame_range()?;
            let assets = caustica::io::AssetCache::default();
            let mut errors: Option<caustica::Diagnostics> = None;
            for frame in range.first..=range.last {
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
                    println!(
                        "{}: ok ({} frame{})",
                        scene.display(),
                        range.last - range.first + 1,
                        if range.last == range.first { "" } else { "s" }
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
        } => {
            if gpu {
                println!("{}", caustica::describe_adapters());
            }
            if device {
                println!("{}", caustica::describe_device()?);
            }
            let Some(scene) = scene else { return Ok(()) };
            let file = caustica::load_scene(&scene)?;
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

fn format_value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.3}")
    }
}
