//! The GPU context opens (or the test says why it skips), reports its facts, and its random
//! numbers equal the CPU twin's bit for bit.

use caustica::gpu::kernel::{read_buffer, storage_buffer_sized, uniform_buffer, Checks, Kernel};
use caustica::gpu::test_context;
use caustica::render::sampling::SampleStream;

#[test]
fn the_context_reports_an_adapter_with_limits() {
    let Some(ctx) = test_context() else { return };
    let info = &ctx.info;
    eprintln!("{info}");
    assert!(!info.name.is_empty());
    assert!(info.max_storage_buffer_binding_size >= 128 << 20, "{info}");
    assert!(info.max_compute_invocations_per_workgroup >= 256);
}

#[test]
fn gpu_sample_streams_equal_the_cpu_twin_bit_for_bit() {
    let Some(ctx) = test_context() else { return };
    let (pixels, samples, seed) = (1000u32, 7u32, 0x1234_5678_9abc_def0u64);
    let kernel = Kernel::new(&ctx, "check/rng_streams.wgsl", &[], Checks::Checked).unwrap();
    let params = uniform_buffer(
        &ctx,
        "params",
        &[seed as u32, (seed >> 32) as u32, pixels, samples],
    );
    let numbers = storage_buffer_sized(&ctx, "numbers", (pixels * samples * 4 * 4) as u64).unwrap();
    let bind = kernel
        .bind(&ctx, &[("numbers", &numbers), ("params", &params)])
        .unwrap();
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    kernel.dispatch(
        &mut encoder,
        &bind,
        kernel.grid_for(&ctx, (pixels * samples) as u64),
    );
    ctx.queue.submit([encoder.finish()]);
    let gpu: Vec<f32> = read_buffer(&ctx, &numbers, (pixels * samples * 4) as usize).unwrap();
    for p in 0..pixels {
        for s in 0..samples {
            let mut stream = SampleStream::new(seed, p, s);
            for d in 0..4 {
                let i = ((p * samples + s) * 4 + d) as usize;
                assert_eq!(
                    gpu[i].to_bits(),
                    stream.next_f32().to_bits(),
                    "pixel {p} sample {s} dimension {d}"
                );
            }
        }
    }
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
