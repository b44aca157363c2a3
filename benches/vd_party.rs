//! The "Party" scene (13,104 VD patches, `scenes/party/party.csc`) through the VD bottom level:
//! the frame's levels (the CPU twin's choice, the same rule the GPU's camera batch applies), the
//! memory the scene takes next to the memory of pre-tessellating every patch at its level
//! (paper 000, Table 1.1), and, on a GPU, whole GPU frames with the breakdown of paper 000's
//! Figure 1.9: top+middle traversal, sort, bottom-level build+trace.
//!
//! `cargo bench --bench vd_party -- [--resolution W H] [--spp N] [--runs N] [--cpu]`
//! (defaults 1920×1080, 1 spp, 5 runs; `--cpu` renders one frame with the CPU backend too).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use caustica::accel::{PrepareOptions, Prepared};
use caustica::cpu::Tracer;
use caustica::gpu::context::GpuContext;
use caustica::gpu::GpuBackend;
use caustica::io::AssetCache;
use caustica::render::{Backend, RenderOptions};
use caustica::scene::{Instance, Mesh, MeshData, MeshOrigin, Scene, Span};
use caustica::Overrides;
use glam::Affine3A;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn stat(frame: &caustica::render::Frame, name: &str) -> f64 {
    frame.metadata.stat(name).unwrap_or(f64::NAN)
}

/// Bytes the hierarchy and the GPU's leaf triangles take for patch `patch` tessellated at
/// `level` as a plain triangle mesh (`(2^L+1)²` vertices, `2·4^L` triangles), measured by
/// building it.
fn pretessellated_bytes(prepared: &Prepared, patch: u32, level: u32) -> usize {
    let (corners, uvs, map) = prepared.vd_patch_geometry(patch);
    let tree = caustica::accel::vd_bottom::PatchBvh::build(&corners, &uvs, map, level);
    let n = 1u32 << level;
    let row = n + 1;
    let mut triangles = Vec::new();
    for y in 0..n {
        for x in 0..n {
            let v = |i: u32, j: u32| j * row + i;
            triangles.push([v(x, y), v(x + 1, y), v(x + 1, y + 1)]);
            triangles.push([v(x, y), v(x + 1, y + 1), v(x, y + 1)]);
        }
    }
    let data = MeshData {
        positions: tree.points.clone(),
        triangles,
        ..Default::default()
    };
    let scene = Scene {
        meshes: vec![Mesh {
            name: "patch".into(),
            origin: MeshOrigin::Inline,
            data: Arc::new(data),
            displacement: None,
            span: Span::NONE,
        }],
        instances: vec![Instance {
            mesh: 0,
            material: 0,
            transform: Affine3A::IDENTITY,
            span: Span::NONE,
        }],
        ..Default::default()
    };
    let p = Prepared::build(&scene, &PrepareOptions::default()).expect("a grid builds");
    let arrays: usize = p.memory_by_array().iter().map(|(_, b)| b).sum();
    // The GPU gathers each leaf's triangle vertices (3 × vec4) in reference order.
    arrays + p.prim_refs.len() * 48
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str, k: usize| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + k))
            .and_then(|v| v.parse::<u32>().ok())
    };
    let (width, height) = (
        value("--resolution", 1).unwrap_or(1920),
        value("--resolution", 2).unwrap_or(1080),
    );
    let spp = value("--spp", 1).unwrap_or(1);
    let runs = value("--runs", 1).unwrap_or(5).max(1) as usize;
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenes/party/party.csc");
    let file = caustica::load_scene(&path).expect("scenes/party/party.csc loads");
    let overrides = Overrides {
        resolution: Some((width, height)),
        spp: Some(spp),
        integrator: Some(caustica::scene::Integrator::Whitted),
        ..Default::default()
    };
    let scene = caustica::evaluate_frame(&file, 1, &AssetCache::default(), &overrides)
        .expect("the party scene evaluates");
    let t = Instant::now();
    let prepared = caustica::prepare(&scene).expect("the party scene builds");
    let build_ms = t.elapsed().as_secs_f64() * 1e3;
    let patches = prepared.vd_patches.len();
    println!("Party at {width}×{height}, {spp} spp: {patches} VD patches, hierarchy built in {build_ms:.0} ms");

    // The frame's levels, chosen by the camera rays (the CPU twin of the GPU's camera batch).
    let t = Instant::now();
    let tracer = Tracer::new(&scene, &prepared);
    let levels_ms = t.elapsed().as_secs_f64() * 1e3;
    let levels = tracer.vd.levels.clone();
    let mut histogram = [0usize; 9];
    for &l in &levels {
        histogram[l as usize] += 1;
    }
    println!("levels (CPU twin, {levels_ms:.0} ms): patches per level {histogram:?}");

    // Memory: ours (the hierarchy with conservative patch bounds, the maps, and the GPU's VD
    // buffers, reported by the GPU frame below) against every patch pre-tessellated at its level.
    let ours: usize = prepared.memory_by_array().iter().map(|(_, b)| b).sum();
    let maps =
        caustica::gpu::vd_pipeline::unique_texels(&prepared.vd_maps.iter().collect::<Vec<_>>())
            * 16;
    let per_level: Vec<usize> = (0..9u32)
        .map(|l| {
            if histogram[l as usize] > 0 {
                pretessellated_bytes(&prepared, 0, l)
            } else {
                0
            }
        })
        .collect();
    let pre: usize = (0..9).map(|l| per_level[l] * histogram[l]).sum();
    let max_level = levels.iter().copied().max().unwrap_or(0);
    let pre_max = pretessellated_bytes(&prepared, 0, max_level) * patches;
    let mib = |b: f64| b / (1 << 20) as f64;
    println!(
        "memory: hierarchy {:.1} MiB + VD maps {:.1} MiB (vec4<f32> texels, as uploaded); pre-tessellated at the frame's levels {:.1} MiB \
         (every patch at level {max_level}: {:.1} MiB)",
        mib(ours as f64),
        mib(maps as f64),
        mib(pre as f64),
        mib(pre_max as f64)
    );

    if args.iter().any(|a| a == "--cpu") {
        let t = Instant::now();
        let frame = caustica::cpu::CpuBackend
            .render_frame(&scene, &prepared, &RenderOptions::default())
            .expect("the CPU backend renders");
        println!(
            "CPU frame: {:.0} ms ({} trees built, {:.1} MiB)",
            t.elapsed().as_secs_f64() * 1e3,
            stat(&frame, "vd/trees_built"),
            mib(stat(&frame, "vd/tree_bytes"))
        );
    }

    let ctx = match GpuContext::open(std::env::var_os("CAUSTICA_REQUIRE_GPU").is_some()) {
        Ok(ctx) => Arc::new(ctx),
        Err(e) => {
            println!("no GPU frames: {e}");
            return;
        }
    };
    let backend = GpuBackend::new(ctx.clone()).expect("the pipeline compiles");
    println!("GPU: {}", ctx.info.name);
    // One warm-up frame (kernel compilation, clocks), then the timed ones.
    let options = RenderOptions {
        phase_times: true,
        ..Default::default()
    };
    backend
        .render(&scene, &prepared, &options)
        .expect("the GPU renders");
    let names = [
        "time/whitted_ms",
        "gpu/primary_trace_ms",
        "gpu/trace_ms",
        "gpu/shadow_ms",
        "gpu/shade_ms",
        "vd/sort_ms",
        "vd/build_trace_ms",
        "vd/records",
        "vd/jobs",
        "vd/batches",
        "vd/retraces",
        "vd/mean_level",
        "vd/max_level",
        "vd/record_queue_bytes",
        "vd/scratch_bytes",
        "vd/scene_bytes",
        "vd/scene_uploaded_bytes",
        "gpu/scene_bytes",
        "gpu/uploaded_bytes",
        "rays/primary",
        "rays/specular",
        "rays/shadow",
    ];
    let mut figures: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
    for _ in 0..runs {
        let frame = backend
            .render(&scene, &prepared, &options)
            .expect("the GPU renders");
        for (k, name) in names.iter().enumerate() {
            figures[k].push(stat(&frame, name));
        }
    }
    println!("median of {runs} GPU frames:");
    for (name, values) in names.iter().zip(figures) {
        println!("  {name:24} {:.3}", median(values));
    }
}
