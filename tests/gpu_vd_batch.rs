//! The batched VD bottom level on the GPU (src/gpu/vd_batch.rs) against its CPU twin
//! (accel::vd_bottom): for a few dozen displaced patches and thousands of rays that each reach
//! several patches' bounds, the closest hit per ray (patch, t, cell) and the level chosen per
//! patch equal the CPU's `PatchBvh::build` + `intersect` (min over patches) and
//! `patch_lod_level`, with 64-bit atomics and with the two-pass 32-bit fallback.

mod support;

use support::{vd_map, LcgRng as Rng};

use std::path::PathBuf;
use std::time::Instant;

use caustica::accel::aabb::SlabRay;
use caustica::accel::vd_bottom::{patch_lod_level, PatchBvh, PatchHit};
use caustica::accel::Aabb;
use caustica::gpu::prims::Primitives;
use caustica::gpu::vd_batch::{
    slice_bytes, VdBatch, VdBatchOptions, VdBatchPatch, VdBatchRay, VdBatchResult, VdBatchScene,
    VdTexelLayout,
};
use caustica::io::{load_mesh, load_vd_image, vdgen};
use caustica::scene::{VdImage, VdMap, VdSpace};
use glam::{Mat3, Vec2, Vec3};

const MAX_LEVEL: u32 = 6;

struct Patch {
    corners: [Vec3; 4],
    uvs: [Vec2; 4],
    map: usize,
    /// Conservative bounds: the corners' box grown by the map's largest displacement there
    /// and its padding (the middle level's bounds).
    bounds: Aabb,
}

fn patch(corners: [Vec3; 4], uvs: [Vec2; 4], map: usize, maps: &[VdMap]) -> Patch {
    let m = &maps[map];
    let grow = m.whole().max_displacement(&uvs) + m.padding.max(0.0);
    Patch {
        corners,
        uvs,
        map,
        bounds: Aabb::from_points(corners).expanded(grow * 1.001 + 1e-5),
    }
}

fn teapot_asset(name: &str) -> Option<PathBuf> {
    support::shared_asset(&format!("displacement/bezier_teaset_vdm/{name}"))
}

/// Several layers of tilted, warped unit quads with the procedural maps, and the teapot's 32
/// patches with its object-space map beside them when the asset is present. Also returns the
/// regions rays are aimed at, each with the spread of its "camera".
fn scene() -> (Vec<VdMap>, Vec<Patch>, Vec<(Aabb, f32)>) {
    let mut maps = vec![
        vd_map(vdgen::overhang(64), VdSpace::Tangent, 0.0),
        vd_map(vdgen::ripples(64), VdSpace::Tangent, 0.01),
        vd_map(
            {
                let mut rng = Rng(99);
                VdImage {
                    width: 16,
                    height: 16,
                    texels: (0..256)
                        .map(|_| rng.in_box(Vec3::splat(-0.15), Vec3::splat(0.15)))
                        .collect(),
                }
            },
            VdSpace::Object,
            0.0,
        ),
    ];
    let unit_uvs = [Vec2::ZERO, Vec2::X, Vec2::ONE, Vec2::Y];
    let mut rng = Rng(7);
    let mut patches = Vec::new();
    // 4 columns × 3 rows × 3 layers, overlapping along the rows and layers, each turned and tilted differently.
    for layer in 0..3 {
        for row in 0..3 {
            for column in 0..4 {
                let centre = Vec3::new(column as f32 * 2.0, row as f32, layer as f32 * 0.7)
                    + rng.in_box(Vec3::splat(-0.15), Vec3::splat(0.15));
                let turn = Mat3::from_rotation_z(rng.range(0.0, std::f32::consts::TAU))
                    * Mat3::from_rotation_x(rng.range(-0.5, 0.5))
                    * Mat3::from_rotation_y(rng.range(-0.5, 0.5));
                let size = rng.range(0.8, 1.2);
                let corners = [(-0.5, -0.5), (0.5, -0.5), (0.5, 0.5), (-0.5, 0.5)].map(|(x, y)| {
                    let warp = rng.range(-0.08, 0.08);
                    centre + turn * Vec3::new(x * size, y * size, warp)
                });
                let map = (layer * 12 + row * 4 + column) % 3;
                patches.push(patch(corners, unit_uvs, map, &maps));
            }
        }
    }
    let field = patches.iter().fold(Aabb::EMPTY, |b, p| b.union(p.bounds));
    // Each column seen by a camera of its own spread, so the levels differ by column.
    let mut regions: Vec<(Aabb, f32)> = [0.3f32, 0.06, 0.015, 0.002]
        .iter()
        .enumerate()
        .map(|(c, &spread)| {
            let x = c as f32 * 2.0;
            (
                Aabb::new(
                    Vec3::new(x - 0.3, field.min.y + 0.2, field.min.z),
                    Vec3::new(x + 0.3, field.max.y - 0.2, field.max.z),
                ),
                spread,
            )
        })
        .collect();

    if let (Some(base), Some(image)) = (
        teapot_asset("teapot_base_quads.obj"),
        teapot_asset("teapot_vdm_object.exr"),
    ) {
        let base = load_mesh(&base).unwrap();
        maps.push(vd_map(load_vd_image(&image).unwrap(), VdSpace::Object, 0.0));
        let map = maps.len() - 1;
        let teapot: Vec<[Vec3; 4]> = base
            .quads
            .iter()
            .map(|q| q.map(|i| base.positions[i as usize]))
            .collect();
        let raw = teapot
            .iter()
            .fold(Aabb::EMPTY, |b, c| b.union(Aabb::from_points(*c)));
        // Scaled to the quads' size and set beside them.
        let scale = 2.5 / (raw.max - raw.min).max_element();
        let shift = Vec3::new(field.max.x + 0.5, 0.0, 0.0) - raw.min * scale;
        let first = patches.len();
        for (q, corners) in base.quads.iter().zip(&teapot) {
            let uvs = q.map(|i| base.uvs[i as usize]);
            patches.push(patch(corners.map(|c| c * scale + shift), uvs, map, &maps));
        }
        // The map's displacements are in the model's units: scale them too, and the bounds.
        maps[map].scale = scale;
        for p in &mut patches[first..] {
            *p = patch(p.corners, p.uvs, p.map, &maps);
        }
        let pot = patches[first..]
            .iter()
            .fold(Aabb::EMPTY, |b, p| b.union(p.bounds));
        regions.push((pot, 0.004));
    } else {
        eprintln!("teapot patches skipped: shared/assets/displacement/bezier_teaset_vdm is absent");
    }
    (maps, patches, regions)
}

/// `count` rays from around each region, aimed at random points of it, one hit slot each; then
/// for every third ray a copy as seen from a second instance of the scene (its object space
/// shifted), competing for the same slot. The records are every (patch, ray) whose patch bounds
/// the ray reaches.
fn rays_and_records(
    patches: &[Patch],
    regions: &[(Aabb, f32)],
    count: usize,
) -> (Vec<VdBatchRay>, Vec<(u32, u32)>) {
    let mut rng = Rng(2024);
    let mut rays = Vec::new();
    let mut records = Vec::new();
    while rays.len() < count {
        let (region, spread) = regions[rays.len() % regions.len()];
        let target = rng.in_box(region.min, region.max);
        // From above (through the layers) or below, along the rows, little across the columns
        // (so that each column keeps the level its camera's spread asks for).
        let up = if rng.f32() < 0.75 { 1.0 } else { -1.0 };
        let from = Vec3::new(rng.range(-0.08, 0.08), rng.range(-0.8, 0.8), up);
        let origin = target + from.normalize() * rng.range(3.0, 6.0);
        let dir = (target - origin) * rng.range(0.5, 2.0);
        let index = rays.len() as u32;
        let slab = SlabRay::new(origin, dir);
        let mut reached = 0;
        for (p, patch) in patches.iter().enumerate() {
            if slab.entry_box(&patch.bounds, 0.0, f32::INFINITY).is_some() {
                records.push((p as u32, index));
                reached += 1;
            }
        }
        if reached == 0 {
            continue;
        }
        rays.push(VdBatchRay {
            origin: origin.to_array(),
            t_max: f32::INFINITY,
            dir: dir.to_array(),
            // Footprint per unit of t (the ray's t is in units of its unnormalised dir).
            spread: spread * dir.length(),
            hit: index,
            ..Default::default()
        });
    }
    for slot in (0..count).step_by(3) {
        let mut copy = rays[slot];
        let origin = Vec3::from(copy.origin) + Vec3::new(0.37, -0.21, 0.05);
        copy.origin = origin.to_array();
        let index = rays.len() as u32;
        let slab = SlabRay::new(origin, Vec3::from(copy.dir));
        for (p, patch) in patches.iter().enumerate() {
            if slab.entry_box(&patch.bounds, 0.0, f32::INFINITY).is_some() {
                records.push((p as u32, index));
            }
        }
        rays.push(copy);
    }
    (rays, records)
}

/// A slot's closest hit on the CPU: the patch and its hit.
type SlotHit = (u32, PatchHit);

/// The CPU twin: per patch the level from its rays, the tree at that level, and the closest
/// hit per ray over the patches in ascending order (ties to the lowest patch).
fn cpu_reference(
    maps: &[VdMap],
    patches: &[Patch],
    rays: &[VdBatchRay],
    records: &[(u32, u32)],
    slots: usize,
) -> (Vec<Option<SlotHit>>, Vec<(u32, u32)>) {
    let mut by_patch = vec![Vec::new(); patches.len()];
    for &(p, r) in records {
        by_patch[p as usize].push(r);
    }
    let mut best: Vec<Option<SlotHit>> = vec![None; slots];
    let mut levels = Vec::new();
    for (p, patch) in patches.iter().enumerate() {
        let rs = &by_patch[p];
        if rs.is_empty() {
            continue;
        }
        let level = patch_lod_level(
            &patch.bounds,
            rs.iter().filter_map(|&r| {
                let ray = &rays[r as usize];
                SlabRay::new(Vec3::from(ray.origin), Vec3::from(ray.dir))
                    .entry_box(&patch.bounds, 0.0, ray.t_max)
                    .map(|d| (d, ray.spread))
            }),
            MAX_LEVEL,
        );
        levels.push((p as u32, level));
        let bvh = PatchBvh::build(&patch.corners, &patch.uvs, &maps[patch.map], level);
        for &r in rs {
            let ray = &rays[r as usize];
            let slot = ray.hit as usize;
            let limit = best[slot].map_or(ray.t_max, |(_, h)| h.t);
            if let Some(hit) =
                bvh.intersect(Vec3::from(ray.origin), Vec3::from(ray.dir), 0.0, limit)
            {
                best[slot] = Some((p as u32, hit));
            }
        }
    }
    (best, levels)
}

#[test]
fn batched_gpu_build_and_trace_equals_the_cpu_twin_with_and_without_64_bit_atomics() {
    let Some(ctx) = caustica::gpu::test_context() else {
        return;
    };
    let (maps, patches, regions) = scene();
    let slots = 4000;
    let (rays, records) = rays_and_records(&patches, &regions, slots);
    let clock = Instant::now();
    let (expected, expected_levels) = cpu_reference(&maps, &patches, &rays, &records, slots);
    let cpu_ms = clock.elapsed().as_secs_f64() * 1e3;
    let hits = expected.iter().filter(|h| h.is_some()).count();
    let distinct: std::collections::BTreeSet<u32> =
        expected_levels.iter().map(|&(_, l)| l).collect();
    eprintln!(
        "{} patches, {} rays ({slots} hit slots), {} records ({:.1} per ray), {} hits; levels used {:?}; CPU twin {:.0} ms",
        patches.len(),
        rays.len(),
        records.len(),
        records.len() as f64 / rays.len() as f64,
        hits,
        distinct,
        cpu_ms
    );
    assert!(
        records.len() >= 2 * rays.len(),
        "rays reach several patches"
    );
    assert!(distinct.len() >= 3, "levels differ between patches");
    assert!(hits > slots / 3);

    let prims = Primitives::new(&ctx).unwrap();
    let map_refs: Vec<&VdMap> = maps.iter().collect();
    let texels = VdTexelLayout::of(&map_refs).unwrap();
    let gpu_patches: Vec<VdBatchPatch> = patches
        .iter()
        .map(|p| {
            let tile = texels.tile(&maps[p.map].whole().window).unwrap();
            VdBatchPatch::new(&p.corners, &p.uvs, p.map as u32, tile, &p.bounds)
        })
        .collect();
    let scene = VdBatchScene::upload(&ctx, &gpu_patches, &map_refs, None).unwrap();

    // (64-bit atomics, persistent workgroups): the fallback, the 64-bit path, and few workgroups
    // that each take many jobs.
    let int64 = ctx.info.features.int64_atomic_min_max;
    if !int64 {
        eprintln!("the adapter has no 64-bit atomic min/max: only the 32-bit fallback runs");
    }
    let mut variants = vec![(false, 32), (false, 3)];
    if int64 {
        variants.extend([(true, 32), (true, 3)]);
    }
    let mut results: Vec<VdBatchResult> = Vec::new();
    for (int64_atomics, workgroups) in variants {
        let batch = VdBatch::new(
            &ctx,
            VdBatchOptions {
                max_level: MAX_LEVEL,
                workgroups,
                int64_atomics,
            },
        )
        .unwrap();
        // The first run also compiles the pipelines (lazily, on lavapipe): time the second.
        let first = batch
            .trace_vec(&ctx, &prims, &scene, &rays, &records, slots as u32, None)
            .unwrap();
        let result = batch
            .trace_vec(&ctx, &prims, &scene, &rays, &records, slots as u32, None)
            .unwrap();
        assert_eq!(first.hits, result.hits, "the same hits every run");
        let t = result.timings;
        eprintln!(
            "int64 atomics {int64_atomics}: {} workgroups × {} KiB scratch; wall clock: jobs \
             (sort + runs) {:.1} ms, levels+builds only {:.1} ms, levels+builds+trace {:.1} ms, \
             resolve pass {:.1} ms; GPU timestamps: builds only {:?} ms, builds+trace {:?} ms",
            batch.workgroups,
            slice_bytes(MAX_LEVEL) / 1024,
            t.jobs_ms,
            t.build_only_ms,
            t.build_trace_ms,
            t.resolve_ms,
            t.gpu_build_only_ms.map(|v| (v * 10.0).round() / 10.0),
            t.gpu_build_trace_ms.map(|v| (v * 10.0).round() / 10.0),
        );
        assert_eq!(
            result.levels, expected_levels,
            "per-patch level = max of lod_level over its rays"
        );
        let mut same = 0;
        let mut same_cell = 0;
        let mut mismatches = Vec::new();
        for (r, (gpu, cpu)) in result.hits.iter().zip(&expected).enumerate() {
            match (gpu, cpu) {
                (None, None) => same += 1,
                (Some(g), Some((p, c)))
                    if g.patch == *p && (g.t - c.t).abs() <= 1e-5 * c.t.abs() =>
                {
                    same += 1;
                    if g.cell == c.cell {
                        same_cell += 1;
                        assert!(
                            (g.st - c.st).length() < 1e-4,
                            "ray {r}: st {} vs {}",
                            g.st,
                            c.st
                        );
                        assert!(
                            (g.normal - c.normal).length() < 1e-3,
                            "ray {r}: normal {} vs {}",
                            g.normal,
                            c.normal
                        );
                    }
                }
                _ => mismatches.push((r, gpu.map(|g| (g.patch, g.t)), cpu.map(|(p, c)| (p, c.t)))),
            }
        }
        eprintln!(
            "  {same}/{} rays agree (patch and t), {same_cell} of the hits in the same cell; \
             first mismatches {:?}",
            slots,
            &mismatches[..mismatches.len().min(5)]
        );
        assert!(
            same as f64 >= 0.999 * slots as f64,
            "{} of {} rays disagree: {:?}",
            mismatches.len(),
            slots,
            &mismatches[..mismatches.len().min(10)]
        );
        results.push(result);
    }
    // Both closest-hit paths and any workgroup count pick the same record (smallest t, then
    // lowest record) bit for bit.
    for other in &results[1..] {
        assert_eq!(other.hits, results[0].hits);
    }
}
