//! Ray-throughput measurement of the GPU traversal: primary, shadow, reflection and diffuse rays
//! over a prepared scene, timed with GPU timestamps, and checked against the CPU traversal.
//!
//! The ray sets are made on the CPU from the scene's camera: primary rays through pixel centres
//! in 8×8 Morton tiles (the order the Whitted pipeline uses); and, for every primary hit, a shadow
//! ray to the first point-like light (any hit), a mirror reflection about the geometric normal,
//! and a cosine-distributed diffuse ray (closest hit). The same sets serve every configuration
//! (QBVH or binary BVH, checked or unchecked kernel), so the figures compare like with like.

use std::time::Instant;

use glam::{Vec2, Vec3};
use rayon::prelude::*;

use super::context::{GpuContext, GpuError};
use super::encoder::Encoder;
use super::kernel::{
    read_buffer, storage_buffer, storage_buffer_sized, uniform_buffer, Checks, Kernel,
};
use super::pool::GpuBuffer;
use super::upload::{frame_params, one_instance_loop, upload_scene, GpuBenchRay};
use crate::accel::{BvhLayout, Prepared, Ray};
use crate::render::sampling::SampleStream;
use crate::render::CameraModel;
use crate::scene::{LightKind, Scene};

/// The four kinds of rays measured.
pub const RAY_KINDS: [&str; 4] = ["primary", "shadow", "reflection", "diffuse"];

/// Rays of each kind, in the order they are traced.
#[derive(Clone, Debug, Default)]
pub struct RaySets {
    pub sets: Vec<(&'static str, Vec<GpuBenchRay>)>,
}

fn bench_ray(origin: Vec3, dir: Vec3, t_max: f32, any_hit: bool) -> GpuBenchRay {
    GpuBenchRay {
        origin: origin.to_array(),
        t_max,
        dir: dir.to_array(),
        any_hit: any_hit as u32,
    }
}

/// The ray sets `raybench --dump-rays DIR` writes for `scene` (`dragon` or `sponza`):
/// `DIR/{scene}_{primary,diffuse}.rays`, in the order raybench traces them.
pub fn read_raybench_sets(
    dir: &std::path::Path,
    scene: &str,
    width: u32,
    height: u32,
) -> std::io::Result<RaySets> {
    let mut sets = Vec::new();
    for kind in ["primary", "diffuse"] {
        let path = dir.join(format!("{scene}_{kind}.rays"));
        let bytes = std::fs::read(&path)?;
        let mut rays = raybench_rays(&bytes).map_err(|e| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{}: {e}", path.display()),
            )
        })?;
        if kind == "primary" && rays.len() == width as usize * height as usize {
            rays = raybench_tile_order(&rays, width, height);
        }
        sets.push((kind, rays));
    }
    Ok(RaySets { sets })
}

/// Raybench's primary rays in the order its primary kernel traces them: the file holds them
/// row-major, one per pixel, and each of the kernel's workgroups of 128 takes a tile 8 pixels
/// wide and 16 high, the tiles row-major (pixels past the image's edge are skipped).
pub fn raybench_tile_order(rays: &[GpuBenchRay], width: u32, height: u32) -> Vec<GpuBenchRay> {
    const TILE_W: u32 = 8;
    const TILE_H: u32 = 16;
    let mut out = Vec::with_capacity(rays.len());
    for ty in 0..height.div_ceil(TILE_H) {
        for tx in 0..width.div_ceil(TILE_W) {
            for li in 0..TILE_W * TILE_H {
                let (x, y) = (tx * TILE_W + li % TILE_W, ty * TILE_H + li / TILE_W);
                if x < width && y < height {
                    out.push(rays[(y * width + x) as usize]);
                }
            }
        }
    }
    out
}

/// Closest-hit rays from raybench's records: little-endian f32 `[ox, oy, oz, tmin, dx, dy, dz,
/// tmax]`, 32 bytes a ray. The benchmark kernel's rays start at t = 0, so a ray's `tmin` moves
/// its origin along its direction (and shortens its `tmax`): the same points are hit.
pub fn raybench_rays(bytes: &[u8]) -> Result<Vec<GpuBenchRay>, String> {
    if bytes.len() % 32 != 0 {
        return Err(format!(
            "{} bytes are not whole 32-byte ray records",
            bytes.len()
        ));
    }
    Ok(bytes
        .chunks_exact(32)
        .map(|record| {
            let f: [f32; 8] = std::array::from_fn(|i| {
                let w = &record[4 * i..];
                f32::from_le_bytes([w[0], w[1], w[2], w[3]])
            });
            let (origin, tmin, dir, tmax) = (
                Vec3::new(f[0], f[1], f[2]),
                f[3],
                Vec3::new(f[4], f[5], f[6]),
                f[7],
            );
            let tmin = if tmin.is_finite() { tmin.max(0.0) } else { 0.0 };
            bench_ray(origin + dir * tmin, dir, tmax - tmin, false)
        })
        .collect())
}

/// The pixel of thread `i` when threads walk the image in 8×8 Morton tiles.
fn morton_pixel(i: u32, tiles_x: u32) -> (u32, u32) {
    let tile = i / 64;
    let local = i % 64;
    let (mut x, mut y) = (0u32, 0u32);
    for bit in 0..3 {
        x |= ((local >> (2 * bit)) & 1) << bit;
        y |= ((local >> (2 * bit + 1)) & 1) << bit;
    }
    ((tile % tiles_x) * 8 + x, (tile / tiles_x) * 8 + y)
}

/// Builds the ray sets for `scene` at `width`×`height` (see the module docs).
pub fn make_ray_sets(scene: &Scene, prepared: &Prepared, width: u32, height: u32) -> RaySets {
    let mut film = scene.film.clone();
    film.width = width;
    film.height = height;
    let camera = CameraModel::new(&scene.camera, &film);
    let tiles_x = width.div_ceil(8);
    let slots = tiles_x * height.div_ceil(8) * 64;
    let primary: Vec<GpuBenchRay> = (0..slots)
        .map(|i| morton_pixel(i, tiles_x))
        .filter(|&(x, y)| x < width && y < height)
        .map(|(x, y)| {
            let (o, d) =
                camera.generate_ray(Vec2::new(x as f32 + 0.5, y as f32 + 0.5), Vec2::splat(0.5));
            bench_ray(o, d, f32::INFINITY, false)
        })
        .collect();
    let (lo, hi) = prepared.world_bounds();
    let light = scene
        .lights
        .iter()
        .find_map(|l| match l.kind {
            LightKind::Point { position, .. } | LightKind::Spot { position, .. } => Some(position),
            LightKind::Quad {
                corner,
                edge_u,
                edge_v,
                ..
            } => Some(corner + 0.5 * (edge_u + edge_v)),
            LightKind::Mesh { ref emitter, .. } => Some(emitter.sample(Vec2::splat(0.5)).0),
            LightKind::Sphere { sphere, .. } => Some(sphere.centre),
            LightKind::Directional { .. } | LightKind::Environment(_) => None,
        })
        .unwrap_or((lo + hi) * 0.5 + Vec3::Y * (hi - lo).length());
    let eps = 1e-4 * (hi - lo).length().max(1.0);
    let secondary: Vec<[GpuBenchRay; 3]> = primary
        .par_iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let ray = Ray {
                origin: Vec3::from(r.origin),
                dir: Vec3::from(r.dir),
                t_min: 0.0,
                t_max: f32::INFINITY,
            };
            let hit = prepared.intersect(&ray)?;
            let sp = prepared.surface_point(&ray, &hit);
            let n = if sp.geometric_normal.dot(ray.dir) > 0.0 {
                -sp.geometric_normal
            } else {
                sp.geometric_normal
            };
            let p = sp.position + n * eps;
            let to_light = light - p;
            let shadow = bench_ray(p, to_light, 1.0 - 1e-4, true);
            let reflection = bench_ray(p, ray.dir - 2.0 * ray.dir.dot(n) * n, f32::INFINITY, false);
            let mut rng = SampleStream::new(7, i as u32, 0);
            let (u, v) = (rng.next_f32(), rng.next_f32());
            let (r2, phi) = (u.sqrt(), std::f32::consts::TAU * v);
            let (t, b) = n.any_orthonormal_pair();
            let d = t * (r2 * phi.cos()) + b * (r2 * phi.sin()) + n * (1.0 - u).max(0.0).sqrt();
            let diffuse = bench_ray(p, d, f32::INFINITY, false);
            Some([shadow, reflection, diffuse])
        })
        .collect();
    let pick = |k: usize| secondary.iter().map(|s| s[k]).collect::<Vec<_>>();
    RaySets {
        sets: vec![
            ("primary", primary),
            ("shadow", pick(0)),
            ("reflection", pick(1)),
            ("diffuse", pick(2)),
        ],
    }
}

/// Throughput of one ray set in one configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct RayThroughput {
    pub kind: &'static str,
    pub rays: usize,
    /// Median GPU time of one traversal dispatch over the whole set (timestamps when the adapter
    /// has them, otherwise wall clock around a dispatch and a wait).
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub mrays_per_s: f64,
    /// Fraction of rays that hit something (closest hit) or are blocked (any hit).
    pub hit_fraction: f64,
    /// Fraction of checked rays whose GPU result equals the CPU traversal's (instance, and t to
    /// 1e-4 relative); every `check_every`-th ray is checked.
    pub agreement: f64,
}

/// How [`measure`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MeasureOptions {
    /// How the benchmark kernel's module is created.
    pub checks: Checks,
    /// Timed runs per set, after the warm-up.
    pub runs: usize,
    /// Compile the VD-patch branch of the traversal in although the scene has no patches (to
    /// measure what it costs; scenes with patches are refused).
    pub with_vd_code: bool,
    /// Check every `check_every`-th ray against the CPU traversal.
    pub check_every: usize,
    /// Defines of the benchmark kernel's experiments (`shaders/bench/trace_rays.wgsl`).
    pub defines: &'static [&'static str],
    /// Trace with the fused two-level loop where the render would trace with the one
    /// instance's (`ONE_INSTANCE`, [`one_instance_loop`]), to measure what that loop gains.
    pub fused: bool,
}

/// Traces every set `options.runs` times (after warm-up runs for at least a quarter of a second,
/// which bring an idle GPU up to its clocks) and returns the figures of each set. The kernel
/// holds the VD-patch branch only when asked to; scenes with VD patches are refused (their
/// bottom level runs in the render pipeline).
pub fn measure(
    ctx: &GpuContext,
    scene: &Scene,
    prepared: &Prepared,
    sets: &RaySets,
    options: MeasureOptions,
) -> Result<Vec<RayThroughput>, GpuError> {
    let MeasureOptions {
        checks,
        runs,
        with_vd_code,
        check_every,
        defines: experiments,
        fused,
    } = options;
    if !prepared.vd_patches.is_empty() {
        return Err(GpuError::Device(
            "the ray benchmark traces triangles and quads only; scenes with VD patches are \
             measured through the render pipeline, which runs their bottom level"
                .into(),
        ));
    }
    let mut defines: Vec<&str> = Vec::new();
    if with_vd_code {
        defines.push("VD_PATCHES");
    }
    if prepared.layout == BvhLayout::Wide {
        defines.push("WIDE_BVH");
    }
    if super::upload::grid_walk(prepared) {
        defines.push("GRID");
    }
    if one_instance_loop(prepared) && !fused {
        defines.push("ONE_INSTANCE");
    }
    defines.extend_from_slice(experiments);
    // With the VD code compiled in, the record queue is bound but holds nothing (capacity 0):
    // the scene has no patches, so no ray ever reaches the branch.
    let vd_queue = if with_vd_code {
        Some([
            storage_buffer_sized(ctx, "vd_rays", 48)?,
            storage_buffer_sized(ctx, "vd_record_patches", 4)?,
            storage_buffer_sized(ctx, "vd_record_rays", 4)?,
            storage_buffer_sized(ctx, "vd_record_count", 16)?,
        ])
    } else {
        None
    };
    let kernel = Kernel::new(ctx, "bench/trace_rays.wgsl", &defines, checks)?;
    let buffers = upload_scene(ctx, scene, prepared)?;
    let timestamps = ctx.info.features.timestamps;
    let query = timestamps.then(|| {
        ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("raybench"),
            ty: wgpu::QueryType::Timestamp,
            count: 2,
        })
    });
    let resolve = storage_buffer_sized(ctx, "raybench timestamps", 16)?;
    let resolve_query = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("raybench resolve"),
        size: 16,
        usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let mut out = Vec::new();
    for (kind, rays) in &sets.sets {
        if rays.is_empty() {
            continue;
        }
        let mut params = frame_params(scene, prepared);
        params.ray_count = rays.len() as u32;
        let params_buffer = uniform_buffer(ctx, "params", &params);
        let ray_buffer = storage_buffer(ctx, "bench_rays", rays)?;
        let hits = storage_buffer_sized(ctx, "bench_hits", rays.len() as u64 * 8)?;
        let mut resources: Vec<(&str, &GpuBuffer)> = buffers.all().to_vec();
        resources.extend([
            ("params", &params_buffer),
            ("bench_rays", &ray_buffer),
            ("bench_hits", &hits),
        ]);
        if let Some([a, b, c, d]) = &vd_queue {
            resources.extend([
                ("vd_rays", a),
                ("vd_record_patches", b),
                ("vd_record_rays", c),
                ("vd_record_count", d),
            ]);
        }
        let bind = kernel.bind(ctx, &resources)?;
        let grid = kernel.grid_for(ctx, rays.len() as u64);
        let mut times = Vec::new();
        let warm_up = Instant::now();
        let mut warm_runs = 0usize;
        for run in 0.. {
            let warming = warm_up.elapsed().as_secs_f64() < 0.25 || run < 3;
            if warming {
                warm_runs += 1;
            } else if run >= warm_runs + runs {
                break;
            }
            let mut encoder = Encoder::new(ctx);
            {
                let timestamp_writes = query.as_ref().map(|q| wgpu::ComputePassTimestampWrites {
                    query_set: q,
                    beginning_of_pass_write_index: Some(0),
                    end_of_pass_write_index: Some(1),
                });
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some(kind),
                    timestamp_writes,
                });
                pass.set_pipeline(&kernel.pipeline);
                pass.set_bind_group(0, &bind, &[]);
                pass.dispatch_workgroups(grid.0, grid.1, grid.2);
            }
            if let Some(q) = &query {
                encoder.resolve_query_set(q, 0..2, &resolve_query, 0);
                encoder.copy_buffer_to_buffer(&resolve_query, 0, &resolve, 0, 16);
            }
            let start = Instant::now();
            ctx.submit([encoder.finish()]);
            ctx.wait_idle()?;
            let wall_ms = start.elapsed().as_secs_f64() * 1e3;
            let ms = if query.is_some() {
                let ticks: Vec<u64> = read_buffer(ctx, &resolve, 2)?;
                ticks[1].saturating_sub(ticks[0]) as f64
                    * ctx.info.timestamp_period_ns as f64
                    * 1e-6
            } else {
                wall_ms
            };
            if !warming {
                times.push(ms);
            }
        }
        times.sort_by(f64::total_cmp);
        let median_ms = times.get(times.len() / 2).copied().unwrap_or(f64::NAN);
        let gpu_hits: Vec<[u32; 2]> = read_buffer(ctx, &hits, rays.len())?;
        let hit_count = gpu_hits.iter().filter(|h| h[1] != u32::MAX).count();
        let checked: Vec<usize> = (0..rays.len()).step_by(check_every.max(1)).collect();
        let agree = checked
            .par_iter()
            .filter(|&&i| {
                let r = &rays[i];
                let ray = Ray {
                    origin: Vec3::from(r.origin),
                    dir: Vec3::from(r.dir),
                    t_min: 0.0,
                    t_max: r.t_max,
                };
                let (gpu_instance, gpu_t) = (gpu_hits[i][1], f32::from_bits(gpu_hits[i][0]));
                if r.any_hit != 0 {
                    prepared.occluded(&ray) == (gpu_instance != u32::MAX)
                } else {
                    match prepared.intersect(&ray) {
                        None => gpu_instance == u32::MAX,
                        Some(h) => {
                            h.instance == gpu_instance
                                && (h.t - gpu_t).abs() <= 1e-4 * h.t.abs().max(1e-6)
                        }
                    }
                }
            })
            .count();
        out.push(RayThroughput {
            kind,
            rays: rays.len(),
            median_ms,
            min_ms: times.first().copied().unwrap_or(f64::NAN),
            max_ms: times.last().copied().unwrap_or(f64::NAN),
            mrays_per_s: rays.len() as f64 / (median_ms * 1e-3) / 1e6,
            hit_fraction: hit_count as f64 / rays.len() as f64,
            agreement: agree as f64 / checked.len().max(1) as f64,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raybench_records_become_rays_whose_tmin_moves_the_origin() {
        let records: [[f32; 8]; 2] = [
            [1.0, 2.0, 3.0, 0.0, 0.0, 0.0, -1.0, f32::INFINITY],
            [0.0, 0.0, 0.0, 0.5, 2.0, 0.0, 0.0, 10.0],
        ];
        let bytes: Vec<u8> = records
            .iter()
            .flatten()
            .flat_map(|f| f.to_le_bytes())
            .collect();
        let rays = raybench_rays(&bytes).unwrap();
        assert_eq!(rays[0].origin, [1.0, 2.0, 3.0]);
        assert_eq!(rays[0].dir, [0.0, 0.0, -1.0]);
        assert_eq!(rays[0].t_max, f32::INFINITY);
        assert_eq!(rays[0].any_hit, 0);
        // Origin + dir · tmin, and the same far end: t = 10 before is t = 9.5 now.
        assert_eq!(rays[1].origin, [1.0, 0.0, 0.0]);
        assert_eq!(rays[1].t_max, 9.5);
        assert!(raybench_rays(&bytes[..31])
            .unwrap_err()
            .contains("31 bytes"));
    }

    #[test]
    fn raybench_tile_order_takes_8_by_16_tiles_row_major_and_every_pixel_once() {
        let (w, h) = (20u32, 18u32);
        let rays: Vec<GpuBenchRay> = (0..w * h)
            .map(|i| bench_ray(Vec3::new(i as f32, 0.0, 0.0), Vec3::Z, 1.0, false))
            .collect();
        let ordered = raybench_tile_order(&rays, w, h);
        let index: Vec<u32> = ordered.iter().map(|r| r.origin[0] as u32).collect();
        // The first tile: x 0..8, y 0..16, row by row.
        assert_eq!(&index[..9], &[0, 1, 2, 3, 4, 5, 6, 7, w]);
        assert_eq!(index[127], 15 * w + 7);
        // The second tile starts at x = 8.
        assert_eq!(index[128], 8);
        let mut sorted = index.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..w * h).collect::<Vec<u32>>());
    }

    #[test]
    fn morton_tiles_cover_each_pixel_of_a_tile_once() {
        let mut seen = [[false; 8]; 8];
        for i in 0..64 {
            let (x, y) = morton_pixel(i, 1);
            assert!(!seen[y as usize][x as usize]);
            seen[y as usize][x as usize] = true;
        }
        assert_eq!(morton_pixel(2, 1), (0, 1));
        assert_eq!(morton_pixel(64 + 1, 2), (9, 0));
    }
}
