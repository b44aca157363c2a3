//! The middle-level structures side by side (issue 18): for each scene (Sponza, the dragon and a
//! teapot in a stadium, `benches/scenes/*.csc`, meshes from `../shared/assets`) and each
//! structure (`qbvh`, `wide`: the binned-SAH BVHs; `grid`: the two-level grid of paper 001;
//! `kdtree`: paper 002's SAH kd-tree over triangles; both under the wide layout's top level),
//! one row:
//! - the middle level's build on the CPU (median of `--builds`, wall clock, this machine's
//!   threads; the vertices' boxes included) and, for the grid and the kd-tree, on the GPU
//!   (`gpu::grid`, `gpu::tri_kdtree`: device clock, and the host's wall clock of the same
//!   builds with their uploads and read-backs; every mesh's structure from its boxes, checked
//!   word for word against the CPU twin's);
//! - the middle level's memory on the device (nodes or grid words, references, and the leaf
//!   triangles a BVH's leaf test reads);
//! - primary and diffuse Mrays/s (`gpu::raybench`, the same rays for every structure, the
//!   median of `--runs` dispatches, then the median over `--rounds` rounds);
//! - one photon-mapped frame (`GpuBackend::render_frame`, wall clock: in each round one frame
//!   that may compile kernels, then `--frames` timed ones; the median of all the timed frames;
//!   the build not included).
//!
//! The rounds take the structures in turn (rays, then frames), so that a GPU whose clocks ramp
//! up favours none of them.
//!
//! `--kd-small-logs none` builds the kd-trees on the GPU without the small stage's logs (every
//! small root measured twice, as before the replay), and `--kd-subgroups off` reduces the small
//! stage's candidates in workgroup memory alone. With `CAUSTICA_KERNEL_TIMES=1`, each
//! structure's GPU builds also print the device's time per kernel (summed over the builds,
//! `gpu::kernel_times`); `--rounds 0` leaves out the rays and the frames.
//!
//! `cargo bench --bench accels -- [--scenes sponza,dragon,stadium]
//!  [--structures qbvh,wide,grid,kdtree] [--kd-small-logs pooled|none]
//!  [--kd-subgroups on|off] [--resolution 1920x1080]
//!  [--frame-resolution 1024x1024] [--runs 5] [--builds 3] [--frames 3] [--rounds 3]`

mod support;

use support::{arg, median};

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use caustica::accel::aabb::Aabb;
use caustica::accel::prepared::{MESH_GRID, MESH_KDTREE};
use caustica::accel::{BvhBuilder, BvhLayout, PrepareOptions, Prepared};
use caustica::gpu::grid::GridBuilder;
use caustica::gpu::kernel::Checks;
use caustica::gpu::prims::Primitives;
use caustica::gpu::raybench::{make_ray_sets, measure, MeasureOptions};
use caustica::gpu::tri_kdtree::{KdTreeBuilder, SmallLogs};
use caustica::gpu::{GpuBackend, GpuContext};
use caustica::io::AssetCache;
use caustica::render::Backend;
use caustica::scene::Integrator;
use caustica::Overrides;
use glam::Vec3;

fn size(args: &[String], name: &str, default: (u32, u32)) -> (u32, u32) {
    arg(args, name)
        .and_then(|r| {
            r.split_once('x')
                .and_then(|(w, h)| Some((w.parse().ok()?, h.parse().ok()?)))
        })
        .unwrap_or(default)
}

/// Bytes of the middle level on the device.
fn middle_bytes(p: &Prepared) -> usize {
    let memory = p.memory_by_array();
    let of = |name: &str| {
        memory
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(0, |(_, b)| *b)
    };
    of("mesh_nodes") + of("prim_refs") + of("grid_cells") + 48 * p.prim_refs.len()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let number = |name: &str, default: usize| {
        arg(&args, name)
            .and_then(|r| r.parse().ok())
            .unwrap_or(default)
    };
    let (runs, builds, frames, rounds) = (
        number("--runs", 5),
        number("--builds", 3),
        number("--frames", 3),
        number("--rounds", 3),
    );
    let (width, height) = size(&args, "--resolution", (1920, 1080));
    let frame_size = size(&args, "--frame-resolution", (1024, 1024));
    let scenes = arg(&args, "--scenes").unwrap_or_else(|| "sponza,dragon,stadium".into());
    let small_logs = match arg(&args, "--kd-small-logs").as_deref() {
        Some("none") => SmallLogs::Words(0),
        _ => SmallLogs::Pooled,
    };
    let chosen = arg(&args, "--structures").unwrap_or_else(|| "qbvh,wide,grid,kdtree".into());
    let ctx = match GpuContext::open(caustica::gpu_required()) {
        Ok(ctx) => Arc::new(ctx),
        Err(e) => {
            eprintln!("skipping: {e}");
            return;
        }
    };
    let backend = GpuBackend::new(ctx.clone()).expect("the kernels compile");
    let builders = (
        GridBuilder::new(&ctx).expect("the grid kernels compile"),
        KdTreeBuilder::with_subgroups(
            &ctx,
            ctx.info.features.subgroups && arg(&args, "--kd-subgroups").as_deref() != Some("off"),
        )
        .expect("the kd-tree kernels compile"),
    );
    let prims = Primitives::new(&ctx).expect("the primitives compile");
    println!(
        "device: {} ({}, {}); rays at {width}x{height}, frames at {}x{}, photon_map; \
         {} CPU threads",
        ctx.info.name,
        ctx.info.backend,
        ctx.info.driver,
        frame_size.0,
        frame_size.1,
        rayon::current_num_threads()
    );
    println!(
        "{:<8} {:<9} {:>12} {:>12} {:>12} {:>10} {:>10} {:>10} {:>10} {:>9}",
        "scene",
        "structure",
        "CPU build ms",
        "GPU build ms",
        "GPU wall ms",
        "memory MB",
        "references",
        "primary",
        "diffuse",
        "frame ms"
    );
    let structures = [
        ("qbvh", BvhLayout::Qbvh, BvhBuilder::CpuSah),
        ("wide", BvhLayout::Wide, BvhBuilder::CpuSah),
        ("grid", BvhLayout::Wide, BvhBuilder::Grid),
        ("kdtree", BvhLayout::Wide, BvhBuilder::Kdtree),
    ];
    let structures: Vec<_> = structures
        .into_iter()
        .filter(|(label, _, _)| chosen.split(',').any(|c| c == *label))
        .collect();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for name in scenes.split(',') {
        let path = root.join("benches/scenes").join(format!("{name}.csc"));
        let assets = AssetCache::default();
        let mut scene = match caustica::load_scene(&path)
            .and_then(|f| caustica::evaluate_frame(&f, 1, &assets, &Overrides::default()))
        {
            Ok(s) => s,
            Err(e) => {
                eprintln!(
                    "{name}: skipping: {}",
                    e.to_string().lines().next().unwrap_or_default()
                );
                continue;
            }
        };
        scene.film.integrator = Integrator::PhotonMap;
        let mut frame_scene = scene.clone();
        (frame_scene.film.width, frame_scene.film.height) = frame_size;
        let reference = Prepared::build(&scene, &PrepareOptions::default()).expect("builds");
        let sets = make_ray_sets(&scene, &reference, width, height);
        // Each structure built, then its rays and frames measured in rounds that take the
        // structures in turn, so that a GPU's clocks ramping up favour none of them.
        struct Row {
            label: &'static str,
            prepared: Prepared,
            frame_prepared: Prepared,
            build_ms: f64,
            gpu_build: Option<(f64, f64)>,
            primary: Vec<f64>,
            diffuse: Vec<f64>,
            frame_ms: Vec<f64>,
        }
        let mut rows: Vec<Row> = structures
            .iter()
            .map(|&(label, layout, builder)| {
                let options = PrepareOptions {
                    layout,
                    builder,
                    device_builds: false,
                    ..PrepareOptions::default()
                };
                let mut build_ms = Vec::new();
                let mut prepared = None;
                for _ in 0..builds.max(1) {
                    let start = Instant::now();
                    let p = Prepared::build(&scene, &options).expect("the benchmark scenes build");
                    build_ms.push(
                        start.elapsed().as_secs_f64() * 1e3 - p.vd_levels_ms - p.top_build_ms,
                    );
                    prepared = Some(p);
                }
                let prepared = prepared.expect("built");
                let gpu_build = gpu_build_ms(&ctx, &builders, &prims, &prepared, small_logs);
                print_kernel_times(&ctx, name, label);
                Row {
                    label,
                    gpu_build,
                    frame_prepared: Prepared::build(&frame_scene, &options).expect("builds"),
                    prepared,
                    build_ms: median(build_ms),
                    primary: Vec::new(),
                    diffuse: Vec::new(),
                    frame_ms: Vec::new(),
                }
            })
            .collect();
        for _ in 0..rounds {
            for row in rows.iter_mut() {
                match measure(
                    &ctx,
                    &scene,
                    &row.prepared,
                    &sets,
                    MeasureOptions {
                        checks: Checks::Unchecked,
                        runs,
                        with_vd_code: false,
                        check_every: 97,
                        defines: &[],
                        fused: false,
                    },
                ) {
                    Ok(measured) => {
                        let rate = |kind: &str| {
                            measured
                                .iter()
                                .find(|r| r.kind == kind)
                                .map_or(f64::NAN, |r| r.mrays_per_s)
                        };
                        let agreement = measured.iter().map(|r| r.agreement).fold(1.0, f64::min);
                        if agreement < 0.99 {
                            eprintln!(
                                "{name} {}: GPU and CPU agree on only {agreement}",
                                row.label
                            );
                        }
                        row.primary.push(rate("primary"));
                        row.diffuse.push(rate("diffuse"));
                    }
                    Err(e) => eprintln!("{name} {}: {e}", row.label),
                }
                // One frame that may compile kernels or grow buffers, then the timed ones.
                for k in 0..=frames {
                    let start = Instant::now();
                    if let Err(e) =
                        backend.render_frame(&frame_scene, &row.frame_prepared, &Default::default())
                    {
                        eprintln!("{name} {}: {e}", row.label);
                        break;
                    }
                    if k > 0 {
                        row.frame_ms.push(start.elapsed().as_secs_f64() * 1e3);
                    }
                }
            }
        }
        for row in rows {
            println!(
                "{name:<8} {:<9} {:>12.1} {:>12} {:>12} {:>10.1} {:>10} {:>10.1} {:>10.1} {:>9.1}",
                row.label,
                row.build_ms,
                row.gpu_build
                    .map_or("-".to_string(), |(ms, _)| format!("{ms:.2}")),
                row.gpu_build
                    .map_or("-".to_string(), |(_, wall)| format!("{wall:.2}")),
                middle_bytes(&row.prepared) as f64 / 1e6,
                row.prepared.prim_refs.len() + grid_references(&row.prepared),
                median(row.primary),
                median(row.diffuse),
                median(row.frame_ms)
            );
        }
    }
}

/// With kernel times on, the device's time per kernel since the last reading (the GPU builds of
/// one structure), the longest first.
fn print_kernel_times(ctx: &GpuContext, scene: &str, structure: &str) {
    match ctx.read_kernel_times() {
        Ok(Some(kernels)) if !kernels.is_empty() => {
            let total: f64 = kernels.iter().map(|k| k.ms).sum();
            println!("{scene} {structure}: GPU builds' kernels, {total:.2} ms in all");
            for k in kernels {
                println!(
                    "  {:<28} {:>6} dispatches {:>9.3} ms",
                    k.kernel, k.dispatches, k.ms
                );
            }
        }
        Ok(_) => {}
        Err(e) => eprintln!("{scene} {structure}: {e}"),
    }
}

/// The references the grids and kd-trees of `p` hold.
fn grid_references(p: &Prepared) -> usize {
    let stats = p.stats();
    (stats.grid_references + stats.kdtree_references) as usize
}

/// The device time of building every grid or kd-tree of `p` on the GPU (`gpu::grid`,
/// `gpu::tri_kdtree`; the median of three builds of each, summed) and the host's wall time of
/// the same builds (uploads, read-backs and the final read of the words included), checked word
/// for word against the words `p` holds; `None` for the BVHs (their GPU builders are
/// `benches/bvh_builders.rs`'s) and on adapters without timestamps.
fn gpu_build_ms(
    ctx: &GpuContext,
    builders: &(GridBuilder, KdTreeBuilder),
    prims: &Primitives,
    p: &Prepared,
    small_logs: SmallLogs,
) -> Option<(f64, f64)> {
    let (mut device, mut wall) = (0.0, 0.0);
    let mut any = false;
    for m in p
        .meshes
        .iter()
        .filter(|m| m.flags & (MESH_GRID | MESH_KDTREE) != 0)
    {
        let position = |v: u32| Vec3::from_slice(&p.positions[v as usize][..3]);
        let tris = &p.triangles[m.triangle_offset as usize..][..m.triangle_count as usize];
        let quads = &p.quads[m.quad_offset as usize..][..m.quad_count as usize];
        let boxes: Vec<Aabb> = tris
            .iter()
            .map(|t| Aabb::from_points(t[..3].iter().map(|&v| position(v))))
            .chain(
                quads
                    .iter()
                    .map(|q| Aabb::from_points(q.iter().map(|&v| position(v)))),
            )
            .collect();
        let words = &p.grid_cells[m.node_offset as usize..][..m.node_count as usize];
        let (mut times, mut walls) = (Vec::new(), Vec::new());
        for _ in 0..3 {
            let start = Instant::now();
            let built = if m.flags & MESH_KDTREE != 0 {
                builders
                    .1
                    .build_vec_with(ctx, prims, &boxes, small_logs)
                    .map(|r| {
                        r.map(|b| (b.words, b.device_ms))
                            .map_err(|e| format!("{e:?}"))
                    })
            } else {
                builders.0.build_vec(ctx, prims, &boxes).map(|r| {
                    r.map(|b| (b.words, b.device_ms))
                        .map_err(|e| format!("{e:?}"))
                })
            };
            walls.push(start.elapsed().as_secs_f64() * 1e3);
            match built {
                Ok(Ok((built_words, device_ms))) => {
                    if built_words != words {
                        eprintln!("the GPU build differs from the CPU twin's");
                    }
                    times.push(device_ms?);
                }
                Ok(Err(e)) => {
                    eprintln!("GPU build: {e}");
                    return None;
                }
                Err(e) => {
                    eprintln!("GPU build: {e}");
                    return None;
                }
            }
        }
        device += median(times);
        wall += median(walls);
        any = true;
    }
    any.then_some((device, wall))
}
