//! The GPU data-parallel primitives equal their CPU twins (`caustica::cpu::prims`) on random
//! inputs of awkward sizes (empty, one, block edges, 2^k ± 1, random, and one above 16 million),
//! in both the subgroup and the shared-memory variants, and refuse what they cannot hold.

use std::time::Instant;

use caustica::accel::knn::{morton_code, morton_scale};
use caustica::cpu::prims as cpu;
use caustica::gpu::encoder::Encoder;
use caustica::gpu::kernel::{read_buffer, storage_buffer, storage_buffer_sized};
use caustica::gpu::prims::{Primitives, SortedRun};
use caustica::gpu::{test_context, GpuContext, GpuError};

/// A small deterministic generator (PCG-style output of a 64-bit LCG).
struct Random(u64);

impl Random {
    fn next_u32(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let x = self.0;
        (((x >> 18) ^ x) >> 27) as u32 ^ (x >> 59 << 27) as u32 ^ (x >> 32) as u32
    }
    fn below(&mut self, bound: u32) -> u32 {
        ((self.next_u32() as u64 * bound as u64) >> 32) as u32
    }
    fn words(&mut self, n: usize) -> Vec<u32> {
        (0..n).map(|_| self.next_u32()).collect()
    }
    /// Flags that are nonzero (any nonzero value, not only 1) with probability `percent`%.
    fn flags(&mut self, n: usize, percent: u32) -> Vec<u32> {
        (0..n)
            .map(|_| {
                if self.below(100) < percent {
                    self.next_u32() | 1
                } else {
                    0
                }
            })
            .collect()
    }
}

/// Sizes around the block edges and powers of two up to 2^20, plus random sizes.
fn awkward_sizes(max_k: u32) -> Vec<usize> {
    let mut sizes = vec![0, 1, 2];
    for k in [3, 8, 10, 11, 14, max_k] {
        if k <= max_k {
            sizes.extend([(1 << k) - 1, 1 << k, (1 << k) + 1]);
        }
    }
    sizes.extend([3_333, 77_777, 123_457]);
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

/// Above 16 million elements: 68 MB per u32 array, within lavapipe's 128 MiB binding.
const LARGE: usize = 17_000_003;

/// The adapter's own variant (subgroups when it has them) and the shared-memory fallback.
fn variants(ctx: &GpuContext) -> Vec<Primitives> {
    let native = Primitives::new(ctx).expect("the primitive kernels build");
    assert_eq!(native.uses_subgroups, ctx.info.features.subgroups);
    let fallback = Primitives::new_without_subgroups(ctx).expect("the fallback kernels build");
    assert!(!fallback.uses_subgroups);
    vec![native, fallback]
}

fn variant_name(prims: &Primitives) -> &'static str {
    if prims.uses_subgroups {
        "subgroups"
    } else {
        "shared memory"
    }
}

fn report(what: &str, start: Instant) {
    eprintln!("{what}: {:.2} s", start.elapsed().as_secs_f64());
}

/// Compares without printing millions of numbers: the first index that differs.
fn assert_same<T: PartialEq + std::fmt::Debug>(gpu: &[T], cpu: &[T], what: &str) {
    assert_eq!(gpu.len(), cpu.len(), "{what}: lengths differ");
    if let Some(i) = (0..gpu.len()).find(|&i| gpu[i] != cpu[i]) {
        panic!(
            "{what}: first difference at {i} of {}: gpu {:?}, cpu {:?}",
            gpu.len(),
            gpu[i],
            cpu[i]
        );
    }
}

fn run_tuples(runs: &[SortedRun]) -> Vec<(u64, u32, u32)> {
    runs.iter().map(|r| (r.key, r.start, r.end)).collect()
}

#[test]
fn scans_equal_the_cpu_twin_at_awkward_sizes_in_both_variants() {
    let Some(ctx) = test_context() else { return };
    let start = Instant::now();
    let mut random = Random(1);
    for prims in variants(&ctx) {
        for n in awkward_sizes(20) {
            let data = random.words(n);
            let what = format!("{} n={n}", variant_name(&prims));
            let gpu = prims.exclusive_scan_vec(&ctx, &data).unwrap();
            assert_same(
                &gpu,
                &cpu::exclusive_scan(&data),
                &format!("exclusive {what}"),
            );
            let gpu = prims.inclusive_scan_vec(&ctx, &data).unwrap();
            assert_same(
                &gpu,
                &cpu::inclusive_scan(&data),
                &format!("inclusive {what}"),
            );
        }
    }
    report("scans, awkward sizes", start);
}

#[test]
fn scans_of_more_than_16_million_elements_equal_the_cpu_twin() {
    let Some(ctx) = test_context() else { return };
    let start = Instant::now();
    let data = Random(2).words(LARGE);
    for prims in variants(&ctx) {
        let gpu = prims.exclusive_scan_vec(&ctx, &data).unwrap();
        assert_same(&gpu, &cpu::exclusive_scan(&data), variant_name(&prims));
        let gpu = prims.inclusive_scan_vec(&ctx, &data).unwrap();
        assert_same(&gpu, &cpu::inclusive_scan(&data), variant_name(&prims));
    }
    report("scans, 17M", start);
}

#[test]
fn compaction_keeps_flagged_values_in_order_at_awkward_sizes() {
    let Some(ctx) = test_context() else { return };
    let start = Instant::now();
    let mut random = Random(3);
    for prims in variants(&ctx) {
        for n in awkward_sizes(20) {
            for percent in [0, 3, 50, 100] {
                let values = random.words(n);
                let flags = random.flags(n, percent);
                let gpu = prims.compact_vec(&ctx, &values, &flags).unwrap();
                let what = format!("{} n={n} kept {percent}%", variant_name(&prims));
                assert_same(&gpu, &cpu::compact(&values, &flags), &what);
            }
        }
    }
    report("compaction, awkward sizes", start);
}

#[test]
fn compaction_of_more_than_16_million_elements_equals_the_cpu_twin() {
    let Some(ctx) = test_context() else { return };
    let start = Instant::now();
    let prims = Primitives::new(&ctx).unwrap();
    let mut random = Random(4);
    let values = random.words(LARGE);
    let flags = random.flags(LARGE, 40);
    let gpu = prims.compact_vec(&ctx, &values, &flags).unwrap();
    assert_same(&gpu, &cpu::compact(&values, &flags), "17M");
    report("compaction, 17M", start);
}

/// The one-pass scan's walk back with every block's word unpublished when it is read: blocks
/// taken last to first (`Primitives::with_reversed_blocks`), so each block works out the sums
/// of the blocks before it from their inputs. Back to back, each scan leaving its words zeroed
/// for the next.
#[test]
fn scans_and_compaction_with_blocks_taken_last_to_first_equal_the_cpu_twin() {
    let Some(ctx) = test_context() else { return };
    let start = Instant::now();
    let mut random = Random(9);
    for subgroups in [ctx.info.features.subgroups, false] {
        let prims = Primitives::with_reversed_blocks(&ctx, subgroups).unwrap();
        for n in [1, 1024, 1025, 2049, 30_001, 100_000] {
            let data = random.words(n);
            let what = format!("{} n={n}, blocks reversed", variant_name(&prims));
            let gpu = prims.exclusive_scan_vec(&ctx, &data).unwrap();
            assert_same(&gpu, &cpu::exclusive_scan(&data), &what);
            let gpu = prims.inclusive_scan_vec(&ctx, &data).unwrap();
            assert_same(&gpu, &cpu::inclusive_scan(&data), &what);
            let flags = random.flags(n, 30);
            let gpu = prims.compact_vec(&ctx, &data, &flags).unwrap();
            assert_same(&gpu, &cpu::compact(&data, &flags), &what);
        }
    }
    report("scans and compaction, blocks reversed", start);
}

#[test]
fn the_compaction_count_stays_on_the_gpu_as_indirect_dispatch_arguments() {
    let Some(ctx) = test_context() else { return };
    let prims = Primitives::new(&ctx).unwrap();
    let mut random = Random(5);
    let n = 100_000u32;
    let flags = random.flags(n as usize, 30);
    let expected = flags.iter().filter(|&&f| f != 0).count() as u32;
    let values: Vec<u32> = (0..n).collect();
    let values_buffer = caustica::gpu::kernel::storage_buffer(&ctx, "values", &values).unwrap();
    let flags_buffer = caustica::gpu::kernel::storage_buffer(&ctx, "flags", &flags).unwrap();
    let kept = storage_buffer_sized(&ctx, "kept", n as u64 * 4).unwrap();
    let mut encoder = Encoder::new(&ctx);
    let count = prims
        .compact(&ctx, &mut encoder, &values_buffer, &flags_buffer, &kept, n)
        .unwrap();
    ctx.submit([encoder.finish()]);
    assert_eq!(
        count.read_indirect_args(&ctx).unwrap(),
        [expected, expected.div_ceil(256), 1, 1]
    );
}

/// The indirect-dispatch arguments the device writes from a count it holds equal the CPU
/// twin's, for counts at and around a workgroup's edges, above the cap, and past the adapter's
/// per-dimension limit.
#[test]
fn dispatch_args_written_on_the_gpu_equal_the_cpu_twin() {
    let Some(ctx) = test_context() else { return };
    let prims = Primitives::new(&ctx).unwrap();
    let kernel = caustica::gpu::kernel::Kernel::new(
        &ctx,
        "prims/run_heads.wgsl",
        &[],
        caustica::gpu::kernel::Checks::Checked,
    )
    .unwrap();
    let size = kernel.workgroup_size;
    let most = ctx.info.max_compute_workgroups_per_dimension;
    let beyond = (most as u64 * size as u64 + 1).min(u32::MAX as u64) as u32;
    let counts = vec![0, 1, size - 1, size, size + 1, 1_000_000, beyond, u32::MAX];
    let cap = u32::MAX as u64;
    let counts_buffer = storage_buffer(&ctx, "counts", &counts).unwrap();
    let mut encoder = Encoder::new(&ctx);
    let mut all = Vec::new();
    for word in 0..counts.len() as u64 {
        let live = (&counts_buffer, word * 4);
        let args = prims
            .dispatch_args(&ctx, &mut encoder, &kernel, live, cap)
            .unwrap();
        all.push(args);
    }
    // One count capped below itself.
    let capped = prims
        .dispatch_args(&ctx, &mut encoder, &kernel, (&counts_buffer, 5 * 4), 1000)
        .unwrap();
    ctx.submit([encoder.finish()]);
    for (args, &count) in all.iter().zip(&counts) {
        let gpu: Vec<u32> = read_buffer(&ctx, args, 3).unwrap();
        let cpu = caustica::gpu::prims::dispatch_args_of(count, u32::MAX, size, most);
        assert_eq!(gpu, cpu.to_vec(), "count {count}");
    }
    let gpu: Vec<u32> = read_buffer(&ctx, &capped, 3).unwrap();
    assert_eq!(
        gpu,
        caustica::gpu::prims::dispatch_args_of(1_000_000, 1000, size, most).to_vec()
    );
}

#[test]
fn segmented_scans_and_reductions_equal_the_cpu_twin_at_awkward_sizes() {
    let Some(ctx) = test_context() else { return };
    let start = Instant::now();
    let mut random = Random(6);
    for prims in variants(&ctx) {
        for n in awkward_sizes(20) {
            // Dense heads, sparse heads, a single segment, and element 0 without a flag.
            for percent in [60, 1, 0] {
                let values = random.words(n);
                let heads = random.flags(n, percent);
                let what = format!("{} n={n} heads {percent}%", variant_name(&prims));
                for inclusive in [false, true] {
                    let gpu = prims
                        .segmented_scan_vec(&ctx, &values, &heads, inclusive)
                        .unwrap();
                    let cpu = cpu::segmented_scan(&values, &heads, inclusive);
                    assert_same(&gpu, &cpu, &format!("{what} inclusive={inclusive}"));
                }
                let gpu = prims.segmented_reduce_vec(&ctx, &values, &heads).unwrap();
                assert_same(&gpu, &cpu::segmented_reduce(&values, &heads), &what);
            }
        }
    }
    report("segmented scan and reduce, awkward sizes", start);
}

#[test]
fn segmented_scan_and_reduce_of_more_than_16_million_elements_equal_the_cpu_twin() {
    let Some(ctx) = test_context() else { return };
    let start = Instant::now();
    let prims = Primitives::new(&ctx).unwrap();
    let mut random = Random(7);
    let values = random.words(LARGE);
    let heads = random.flags(LARGE, 2);
    let gpu = prims
        .segmented_scan_vec(&ctx, &values, &heads, true)
        .unwrap();
    assert_same(
        &gpu,
        &cpu::segmented_scan(&values, &heads, true),
        "scan 17M",
    );
    let gpu = prims.segmented_reduce_vec(&ctx, &values, &heads).unwrap();
    assert_same(&gpu, &cpu::segmented_reduce(&values, &heads), "reduce 17M");
    report("segmented scan and reduce, 17M", start);
}

/// Keys over the full range, and keys with few distinct values (where stability shows); the
/// values are the input positions.
fn sort_inputs(random: &mut Random, n: usize, few_distinct: bool) -> (Vec<u32>, Vec<u32>) {
    let keys = if few_distinct {
        (0..n)
            .map(|_| random.below(37).wrapping_mul(0x0101_0101))
            .collect()
    } else {
        random.words(n)
    };
    (keys, (0..n as u32).collect())
}

/// Points in and around a cube (some outside it, clamped to its faces; some repeated), read
/// with a stride: the GPU's Morton order equals the CPU twin's, code by code and index by index.
#[test]
fn morton_order_of_strided_points_equals_the_cpu_twin_at_awkward_sizes() {
    let Some(ctx) = test_context() else { return };
    let mut random = Random(31);
    let (lo, side) = (glam::Vec3::new(-1.0, 0.5, 2.0), 3.0f32);
    for prims in variants(&ctx) {
        for n in awkward_sizes(14) {
            for stride in [1usize, 2, 4] {
                let points: Vec<[f32; 4]> = (0..(n * stride).max(1))
                    .map(|i| {
                        if i % 97 == 5 {
                            // Repeated points tie on their code; the index decides.
                            return [0.25, 1.0, 3.0, 0.0];
                        }
                        let c = |r: &mut Random| r.below(1 << 20) as f32 / (1 << 20) as f32;
                        // Up to a fifth of the side outside the cube on each face.
                        let u = |r: &mut Random| c(r) * 1.4 - 0.2;
                        [
                            lo.x + side * u(&mut random),
                            lo.y + side * u(&mut random),
                            lo.z + side * u(&mut random),
                            0.0,
                        ]
                    })
                    .collect();
                let gpu = prims
                    .morton_order_vec(&ctx, &points, stride as u32, n as u32, (lo, side))
                    .unwrap();
                let cpu = cpu::morton_order(&points, stride, n, lo.to_array(), side);
                let what = format!("{} n={n} stride={stride}", variant_name(&prims));
                assert_same(&gpu, &cpu, &what);
                // The order is a permutation whose codes never decrease.
                let scale = morton_scale(side);
                let codes: Vec<u32> = cpu
                    .iter()
                    .map(|&i| morton_code(points[i as usize * stride], lo.to_array(), scale))
                    .collect();
                assert!(
                    codes.windows(2).all(|w| w[0] <= w[1]),
                    "{what}: codes decrease"
                );
                let mut sorted = gpu.clone();
                sorted.sort_unstable();
                assert!(
                    sorted.iter().enumerate().all(|(i, &v)| v == i as u32),
                    "{what}"
                );
            }
        }
    }
}

#[test]
fn radix_sort_u32_equals_a_stable_sort_at_awkward_sizes() {
    let Some(ctx) = test_context() else { return };
    let start = Instant::now();
    let mut random = Random(8);
    for prims in variants(&ctx) {
        for n in awkward_sizes(16) {
            for few_distinct in [false, true] {
                let (keys, values) = sort_inputs(&mut random, n, few_distinct);
                let what = format!("{} n={n} few distinct={few_distinct}", variant_name(&prims));
                let (gpu_keys, gpu_values) =
                    prims.radix_sort_u32_vec(&ctx, &keys, &values, 32).unwrap();
                let (cpu_keys, cpu_values) = cpu::sort_pairs_u32(&keys, &values, 32);
                assert_same(&gpu_keys, &cpu_keys, &format!("keys {what}"));
                assert_same(&gpu_values, &cpu_values, &format!("values {what}"));
            }
        }
    }
    report("radix sort u32, awkward sizes", start);
}

#[test]
fn radix_sort_by_low_key_bits_is_stable_on_the_rest_with_an_odd_number_of_passes() {
    let Some(ctx) = test_context() else { return };
    let prims = Primitives::new(&ctx).unwrap();
    let mut random = Random(9);
    for key_bits in [1, 4, 12, 31] {
        let (keys, values) = sort_inputs(&mut random, 50_001, false);
        let (gpu_keys, gpu_values) = prims
            .radix_sort_u32_vec(&ctx, &keys, &values, key_bits)
            .unwrap();
        let (cpu_keys, cpu_values) = cpu::sort_pairs_u32(&keys, &values, key_bits);
        assert_same(&gpu_keys, &cpu_keys, &format!("keys, {key_bits} bits"));
        assert_same(
            &gpu_values,
            &cpu_values,
            &format!("values, {key_bits} bits"),
        );
    }
    let keys: Vec<u64> = (0..40_000)
        .map(|_| random.next_u32() as u64 | (random.below(5) as u64) << 32)
        .collect();
    let values: Vec<u32> = (0..40_000).collect();
    for key_bits in [33, 36, 64] {
        let (gpu_keys, gpu_values) = prims
            .radix_sort_u64_vec(&ctx, &keys, &values, key_bits)
            .unwrap();
        let (cpu_keys, cpu_values) = cpu::sort_pairs_u64(&keys, &values, key_bits);
        assert_same(&gpu_keys, &cpu_keys, &format!("u64 keys, {key_bits} bits"));
        assert_same(
            &gpu_values,
            &cpu_values,
            &format!("u64 values, {key_bits} bits"),
        );
    }
}

#[test]
fn radix_sort_u64_equals_a_stable_sort_at_awkward_sizes() {
    let Some(ctx) = test_context() else { return };
    let start = Instant::now();
    let mut random = Random(10);
    for prims in variants(&ctx) {
        for n in awkward_sizes(14) {
            for few_distinct in [false, true] {
                let keys: Vec<u64> = (0..n)
                    .map(|_| {
                        if few_distinct {
                            (random.below(13) as u64) << 40 | random.below(3) as u64
                        } else {
                            random.next_u32() as u64 | (random.next_u32() as u64) << 32
                        }
                    })
                    .collect();
                let values: Vec<u32> = (0..n as u32).collect();
                let what = format!("{} n={n} few distinct={few_distinct}", variant_name(&prims));
                let (gpu_keys, gpu_values) =
                    prims.radix_sort_u64_vec(&ctx, &keys, &values, 64).unwrap();
                let (cpu_keys, cpu_values) = cpu::sort_pairs_u64(&keys, &values, 64);
                assert_same(&gpu_keys, &cpu_keys, &format!("keys {what}"));
                assert_same(&gpu_values, &cpu_values, &format!("values {what}"));
            }
        }
    }
    report("radix sort u64, awkward sizes", start);
}

#[test]
fn radix_sorts_of_more_than_16_million_pairs_equal_a_stable_sort() {
    let Some(ctx) = test_context() else { return };
    let prims = Primitives::new(&ctx).unwrap();
    let mut random = Random(11);
    let start = Instant::now();
    let (keys, values) = sort_inputs(&mut random, LARGE, false);
    let (gpu_keys, gpu_values) = prims.radix_sort_u32_vec(&ctx, &keys, &values, 32).unwrap();
    let (cpu_keys, cpu_values) = cpu::sort_pairs_u32(&keys, &values, 32);
    assert_same(&gpu_keys, &cpu_keys, "u32 keys 17M");
    assert_same(&gpu_values, &cpu_values, "u32 values 17M");
    report("radix sort u32, 17M", start);
    // 64-bit keys travel as two u32 arrays (68 MB each) because 17M x 8 bytes is over 128 MiB.
    let start = Instant::now();
    let keys: Vec<u64> = (0..LARGE)
        .map(|_| random.next_u32() as u64 | (random.below(1 << 20) as u64) << 32)
        .collect();
    let (gpu_keys, gpu_values) = prims.radix_sort_u64_vec(&ctx, &keys, &values, 52).unwrap();
    let (cpu_keys, cpu_values) = cpu::sort_pairs_u64(&keys, &values, 52);
    assert_same(&gpu_keys, &cpu_keys, "u64 keys 17M");
    assert_same(&gpu_values, &cpu_values, "u64 values 17M");
    report("radix sort u64 (52 key bits), 17M", start);
}

#[test]
fn sorted_bounds_equal_the_cpu_twin_at_awkward_sizes() {
    let Some(ctx) = test_context() else { return };
    let start = Instant::now();
    let mut random = Random(12);
    for prims in variants(&ctx) {
        for n in awkward_sizes(20) {
            for distinct in [1, 7, 1000, u32::MAX] {
                let mut keys: Vec<u32> = (0..n).map(|_| random.below(distinct)).collect();
                keys.sort_unstable();
                let what = format!("{} n={n} distinct<{distinct}", variant_name(&prims));
                let gpu = prims.find_sorted_bounds_u32_vec(&ctx, &keys).unwrap();
                assert_same(&run_tuples(&gpu), &cpu::find_sorted_bounds(&keys), &what);
                let mut wide: Vec<u64> = keys
                    .iter()
                    .map(|&k| (k as u64 % 5) << 32 | (k / 5) as u64)
                    .collect();
                wide.sort_unstable();
                let gpu = prims.find_sorted_bounds_u64_vec(&ctx, &wide).unwrap();
                assert_same(
                    &run_tuples(&gpu),
                    &cpu::find_sorted_bounds(&wide),
                    &format!("u64 {what}"),
                );
            }
        }
    }
    report("sorted bounds, awkward sizes", start);
}

/// A search over a live count the device holds (as the seeding's quadtree levels take the level
/// below's run count) finds the runs of that many keys, whatever lies past them in the buffer.
#[test]
fn sorted_bounds_over_a_count_on_the_device_ignore_the_keys_past_it() {
    let Some(ctx) = test_context() else { return };
    let mut random = Random(14);
    for prims in variants(&ctx) {
        for capacity in [1usize, 255, 256, 1025, 5000] {
            for live in [0, 1, capacity / 2, capacity] {
                let mut keys: Vec<u32> = (0..live).map(|_| random.below(40)).collect();
                keys.sort_unstable();
                // Past the live keys: unsorted values that would make runs of their own.
                keys.extend((live..capacity).map(|_| random.next_u32()));
                let what = format!("{} capacity={capacity} live={live}", variant_name(&prims));
                let key_buffer = storage_buffer(&ctx, "keys", &keys).unwrap();
                let live_buffer = storage_buffer(&ctx, "live", &[live as u32]).unwrap();
                let mut encoder = Encoder::new(&ctx);
                let runs = prims
                    .find_sorted_bounds_live(
                        &ctx,
                        &mut encoder,
                        &key_buffer,
                        capacity as u32,
                        &live_buffer,
                    )
                    .unwrap();
                ctx.submit([encoder.finish()]);
                let count = runs.count.read(&ctx).unwrap() as usize;
                let read = |b| read_buffer::<u32>(&ctx, b, count).unwrap();
                let (lo, starts, ends) =
                    (read(&runs.keys_lo), read(&runs.starts), read(&runs.ends));
                let gpu: Vec<(u64, u32, u32)> = (0..count)
                    .map(|r| (lo[r] as u64, starts[r], ends[r]))
                    .collect();
                assert_same(&gpu, &cpu::find_sorted_bounds(&keys[..live]), &what);
            }
        }
    }
}

#[test]
fn sorted_bounds_of_more_than_16_million_keys_equal_the_cpu_twin() {
    let Some(ctx) = test_context() else { return };
    let start = Instant::now();
    let prims = Primitives::new(&ctx).unwrap();
    let mut random = Random(13);
    let mut keys: Vec<u32> = (0..LARGE).map(|_| random.below(3_000_000)).collect();
    keys.sort_unstable();
    let gpu = prims.find_sorted_bounds_u32_vec(&ctx, &keys).unwrap();
    assert_same(&run_tuples(&gpu), &cpu::find_sorted_bounds(&keys), "17M");
    report("sorted bounds, 17M", start);
}

#[test]
fn inputs_over_the_binding_limit_are_refused_with_a_clear_error() {
    let Some(ctx) = test_context() else { return };
    let prims = Primitives::new(&ctx).unwrap();
    let limit = ctx
        .info
        .max_storage_buffer_binding_size
        .min(ctx.info.max_buffer_size);
    let too_many = u32::try_from(limit / 4 + 1).unwrap_or(u32::MAX);
    let small = storage_buffer_sized(&ctx, "small", 16).unwrap();
    let other = storage_buffer_sized(&ctx, "other", 16).unwrap();
    let mut encoder = Encoder::new(&ctx);
    let err = prims
        .exclusive_scan(&ctx, &mut encoder, &small, &other, too_many)
        .expect_err("a scan over the binding limit is refused");
    assert!(
        matches!(err, GpuError::BufferTooLarge { .. }) || err.to_string().contains("at most"),
        "{err}"
    );
    let err = prims
        .radix_sort_u32(&ctx, &mut encoder, &small, &other, too_many, 32)
        .expect_err("a sort over the binding limit is refused");
    assert!(err.to_string().contains("radix sort keys"), "{err}");
    // A buffer smaller than the count says so instead of reading past its end.
    let err = prims
        .exclusive_scan(&ctx, &mut encoder, &small, &other, 5)
        .expect_err("a count larger than the buffer is refused");
    assert!(err.to_string().contains("16"), "{err}");
    let err = prims
        .compact_vec(&ctx, &[1, 2, 3], &[1])
        .expect_err("lengths must agree");
    assert!(err.to_string().contains("3 values but 1 flags"), "{err}");
}
