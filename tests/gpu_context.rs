//! The GPU context opens (or the test says why it skips), reports its facts, and its random
//! numbers equal the CPU twin's bit for bit.

use caustica::gpu::kernel::{read_buffer, storage_buffer_sized, uniform_buffer, Checks, Kernel};
use caustica::gpu::test_context;
use caustica::gpu::upload::{SAMPLER_INDEPENDENT, SAMPLER_SOBOL};
use caustica::render::sampling::SampleStream;
use caustica::scene::Sampler;

#[test]
fn the_context_reports_an_adapter_with_limits() {
    let Some(ctx) = test_context() else { return };
    let info = &ctx.info;
    eprintln!("{info}");
    assert!(!info.name.is_empty());
    assert!(info.max_storage_buffer_binding_size >= 128 << 20, "{info}");
    assert!(info.max_compute_invocations_per_workgroup >= 256);
}

/// Which streams `check/rng_streams.wgsl` draws (its `sampler` parameter).
#[derive(Clone, Copy, Debug)]
enum Streams {
    /// `sample_stream` / `SampleStream::new` (photons, gather rays, seeding).
    Tagged,
    /// `camera_stream` / `SampleStream::camera`.
    Camera(Sampler),
}

/// The first `dimensions` numbers of every (pixel, sample) stream, samples from `first_sample`,
/// on the GPU and on the CPU, compared bit for bit.
fn assert_gpu_streams_equal_the_cpu(
    streams: Streams,
    (pixels, samples, first_sample): (u32, u32, u32),
    dimensions: u32,
) {
    let Some(ctx) = test_context() else { return };
    let seed = 0x1234_5678_9abc_def0u64;
    let kernel = Kernel::new(&ctx, "check/rng_streams.wgsl", &[], Checks::Checked).unwrap();
    let sampler = match streams {
        Streams::Tagged => 2,
        Streams::Camera(Sampler::Sobol) => SAMPLER_SOBOL,
        Streams::Camera(Sampler::Independent) => SAMPLER_INDEPENDENT,
    };
    let params = uniform_buffer(
        &ctx,
        "params",
        &[
            seed as u32,
            (seed >> 32) as u32,
            pixels,
            samples,
            sampler,
            first_sample,
            dimensions,
            0,
        ],
    );
    let count = (pixels * samples * dimensions) as usize;
    let numbers = storage_buffer_sized(&ctx, "numbers", (count * 4) as u64).unwrap();
    let bind = kernel
        .bind(&ctx, &[("numbers", &numbers), ("params", &params)])
        .unwrap();
    let mut encoder = caustica::gpu::encoder::Encoder::new(&ctx);
    kernel.dispatch(
        &mut encoder,
        &bind,
        kernel.grid_for(&ctx, (pixels * samples) as u64),
    );
    ctx.submit([encoder.finish()]);
    let gpu: Vec<f32> = read_buffer(&ctx, &numbers, count).unwrap();
    for p in 0..pixels {
        for s in 0..samples {
            let sample = first_sample + s;
            let mut stream = match streams {
                Streams::Tagged => SampleStream::new(seed, p, sample),
                Streams::Camera(sampler) => SampleStream::camera(seed, p, sample, sampler),
            };
            for d in 0..dimensions {
                let i = ((p * samples + s) * dimensions + d) as usize;
                assert_eq!(
                    gpu[i].to_bits(),
                    stream.next_f32().to_bits(),
                    "{streams:?}: pixel {p} sample {sample} dimension {d}"
                );
            }
        }
    }
}

#[test]
fn gpu_sample_streams_equal_the_cpu_twin_bit_for_bit() {
    assert_gpu_streams_equal_the_cpu(Streams::Tagged, (1000, 7, 0), 4);
    assert_gpu_streams_equal_the_cpu(Streams::Camera(Sampler::Independent), (300, 7, 0), 4);
}

#[test]
fn gpu_sobol_streams_equal_the_cpu_twin_bit_for_bit() {
    // Eight dimensions (four pairs), and sample indices from 0 and from far into the sequence,
    // as passes of progressive rendering will use (the highest index bits included).
    assert_gpu_streams_equal_the_cpu(Streams::Camera(Sampler::Sobol), (500, 16, 0), 8);
    assert_gpu_streams_equal_the_cpu(Streams::Camera(Sampler::Sobol), (50, 16, 1000), 8);
    assert_gpu_streams_equal_the_cpu(Streams::Camera(Sampler::Sobol), (20, 16, u32::MAX - 15), 8);
}

#[test]
fn a_binding_by_an_unknown_name_is_an_error_that_names_it() {
    let Some(ctx) = test_context() else { return };
    let kernel = Kernel::new(&ctx, "check/rng_streams.wgsl", &[], Checks::Checked).unwrap();
    let buffer = storage_buffer_sized(&ctx, "x", 16).unwrap();
    let err = kernel
        .bind(&ctx, &[("numbrs", &buffer)])
        .expect_err("unknown names are refused");
    assert!(err.to_string().contains("numbrs"), "{err}");
}

/// The random-stream kernel bound to write `pixels` × 4 numbers (one sample, four dimensions)
/// into a buffer of their own, and a dispatch grid over them.
fn bound_stream_kernel(
    ctx: &caustica::gpu::GpuContext,
    pixels: u32,
) -> (
    Kernel,
    wgpu::BindGroup,
    caustica::gpu::GpuBuffer,
    (u32, u32, u32),
) {
    let kernel = Kernel::new(ctx, "check/rng_streams.wgsl", &[], Checks::Checked).unwrap();
    let params = uniform_buffer(ctx, "params", &[1u32, 2, pixels, 1, 2, 0, 4, 0]);
    let numbers = storage_buffer_sized(ctx, "numbers", pixels as u64 * 4 * 4).unwrap();
    let bind = kernel
        .bind(ctx, &[("numbers", &numbers), ("params", &params)])
        .unwrap();
    let grid = kernel.grid_for(ctx, pixels as u64);
    (kernel, bind, numbers, grid)
}

#[test]
fn kernel_times_count_every_dispatch_of_a_kernel_and_time_it() {
    let Some(mut ctx) = test_context() else {
        return;
    };
    if !ctx.time_kernels() {
        // Lavapipe and the lent GPUs have timestamps inside encoders; an adapter without them
        // has no kernel times to test.
        assert!(
            !ctx.info.features.timestamps_inside_encoders,
            "kernel times are off on an adapter with timestamps inside encoders"
        );
        eprintln!("skipping: the adapter has no timestamps inside encoders");
        return;
    }
    let (kernel, bind, _, grid) = bound_stream_kernel(&ctx, 4096);
    let mut encoder = caustica::gpu::encoder::Encoder::new(&ctx);
    for _ in 0..3 {
        kernel.dispatch(&mut encoder, &bind, grid);
    }
    ctx.submit([encoder.finish()]);
    // Dispatches recorded after a stage is named count under it.
    ctx.set_stage("second");
    let mut encoder = caustica::gpu::encoder::Encoder::new(&ctx);
    kernel.dispatch(&mut encoder, &bind, grid);
    ctx.submit([encoder.finish()]);
    let mut times = ctx
        .read_kernel_times()
        .unwrap()
        .expect("kernel times are on");
    assert_eq!(times.len(), 2, "{times:?}");
    times.sort_by(|a, b| a.stage.cmp(&b.stage));
    assert_eq!(
        (times[1].stage.as_str(), times[1].dispatches),
        ("second", 1)
    );
    assert_eq!(times[0].kernel, kernel.name);
    assert_eq!(times[0].stage, "");
    assert_eq!(times[0].dispatches, 3);
    assert!(times[0].ms > 0.0, "{times:?}");
    // A reading starts the next afresh.
    let again = ctx
        .read_kernel_times()
        .unwrap()
        .expect("kernel times are on");
    assert!(again.is_empty(), "{again:?}");
}

#[test]
fn compiled_kernels_are_kept_on_disk_and_a_later_context_reads_them_back() {
    let Some(mut ctx) = test_context() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    if !ctx.use_pipeline_cache(Some(dir.path())) {
        // Vulkan adapters (lavapipe, the lent GPUs) keep pipeline caches; others have none.
        assert_ne!(
            ctx.info.backend, "Vulkan",
            "a Vulkan adapter without a pipeline cache"
        );
        eprintln!(
            "skipping: the {} backend keeps no pipeline cache",
            ctx.info.backend
        );
        return;
    }
    let path = ctx.pipeline_cache.as_ref().unwrap().path().to_path_buf();
    assert!(!path.exists(), "nothing is written before a kernel is made");
    let kernel = Kernel::new(&ctx, "check/rng_streams.wgsl", &[], Checks::Checked).unwrap();
    assert!(ctx.save_pipeline_cache(), "a new kernel is written");
    assert!(!ctx.save_pipeline_cache(), "nothing new, nothing written");
    let written = std::fs::metadata(&path).unwrap().len();
    assert!(written > 0);
    // A later context starts from the file.
    let Some(mut later) = test_context() else {
        return;
    };
    assert!(later.use_pipeline_cache(Some(dir.path())));
    assert!(later.pipeline_cache.as_ref().unwrap().data_len() > 0);
    drop(kernel);
    // A damaged file gives an empty cache, and kernels are made as without one.
    std::fs::write(&path, b"not a pipeline cache").unwrap();
    let Some(mut damaged) = test_context() else {
        return;
    };
    assert!(damaged.use_pipeline_cache(Some(dir.path())));
    let (kernel, bind, numbers, grid) = bound_stream_kernel(&damaged, 64);
    let mut encoder = caustica::gpu::encoder::Encoder::new(&damaged);
    kernel.dispatch(&mut encoder, &bind, grid);
    damaged.submit([encoder.finish()]);
    let got: Vec<f32> = read_buffer(&damaged, &numbers, 256).unwrap();
    assert!(got.iter().all(|x| (0.0..1.0).contains(x)), "the kernel ran");
    assert!(damaged.save_pipeline_cache());
    assert!(
        std::fs::metadata(&path).unwrap().len() > 20,
        "rewritten whole"
    );
}

/// The GGX functions of `shaders/shared/microfacet.wgsl` against their CPU twin
/// (`cpu::microfacet`), through `check/microfacet.wgsl`: sampled visible normals, f·cos, the
/// pdf, G2 and D for views from normal to grazing at roughness 0.1 to 1. The kernels' sine,
/// cosine and square roots are not glam's, so values agree to a relative 1e-4, not bit for bit.
#[test]
fn gpu_ggx_sampling_and_densities_equal_the_cpu_twin() {
    use caustica::cpu::microfacet::{reflect_about, Ggx};
    use glam::{Vec2, Vec3};
    let Some(ctx) = test_context() else { return };
    let kernel = Kernel::new(&ctx, "check/microfacet.wgsl", &[], Checks::Checked).unwrap();
    let mut cases: Vec<[f32; 8]> = Vec::new();
    for roughness in [0.1f32, 0.3, 0.6, 1.0] {
        for theta in [0.0f32, 20.0, 50.0, 80.0] {
            for k in 0..16 {
                let t = theta.to_radians();
                let phi = k as f32 * 0.4;
                let wo = Vec3::new(t.sin() * phi.cos(), t.sin() * phi.sin(), t.cos());
                let u = Vec2::new((k as f32 * 0.618_034).fract(), (k as f32 + 0.5) / 16.0);
                let alpha = Ggx::from_roughness(roughness).alpha;
                cases.push([wo.x, wo.y, wo.z, alpha, u.x, u.y, 0.0, 0.0]);
            }
        }
    }
    let input = caustica::gpu::kernel::storage_buffer(&ctx, "cases", &cases).unwrap();
    let results = storage_buffer_sized(&ctx, "results", (cases.len() * 32) as u64).unwrap();
    let bind = kernel
        .bind(&ctx, &[("cases", &input), ("results", &results)])
        .unwrap();
    let mut encoder = caustica::gpu::encoder::Encoder::new(&ctx);
    kernel.dispatch(
        &mut encoder,
        &bind,
        kernel.grid_for(&ctx, cases.len() as u64),
    );
    ctx.submit([encoder.finish()]);
    let gpu: Vec<[f32; 4]> = read_buffer(&ctx, &results, cases.len() * 2).unwrap();
    let close = |a: f32, b: f32| (a - b).abs() <= 1e-4 * a.abs().max(b.abs()).max(1e-3);
    for (i, c) in cases.iter().enumerate() {
        let ggx = Ggx { alpha: c[3] };
        let wo = Vec3::new(c[0], c[1], c[2]);
        let h = ggx.sample_visible_normal(wo, Vec2::new(c[4], c[5]));
        let wi = reflect_about(wo, h);
        let cpu = [
            h.x,
            h.y,
            h.z,
            ggx.reflection_cos(wo, wi),
            ggx.reflection_pdf(wo, wi),
            ggx.g2(wo, wi),
            ggx.d(h),
        ];
        let got = [
            gpu[2 * i][0],
            gpu[2 * i][1],
            gpu[2 * i][2],
            gpu[2 * i][3],
            gpu[2 * i + 1][0],
            gpu[2 * i + 1][1],
            gpu[2 * i + 1][2],
        ];
        for (k, (a, b)) in cpu.iter().zip(&got).enumerate() {
            assert!(
                close(*a, *b),
                "case {i} ({c:?}) value {k}: CPU {a}, GPU {b}"
            );
        }
    }
}
