//! Helpers shared by the BVH builders' tests (`gpu_lbvh.rs`, `gpu_ploc.rs`): a seeded
//! generator, random boxes and triangles, random rays, the brute-force closest hit and the
//! comparison of a GPU builder's records with its CPU twin's.
#![allow(dead_code)]

use std::time::Instant;

use caustica::accel::aabb::Aabb;
use caustica::accel::bvh::{BinaryBvh, BinaryNodeRecord};
use glam::Vec3;

/// A small deterministic generator (PCG-style output of a 64-bit LCG).
pub struct Random(pub u64);

impl Random {
    pub fn next_u32(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let x = self.0;
        (((x >> 18) ^ x) >> 27) as u32 ^ (x >> 59 << 27) as u32 ^ (x >> 32) as u32
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f32 {
        (self.next_u32() >> 8) as f32 / (1u32 << 24) as f32
    }
    pub fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.unit()
    }
    pub fn point(&mut self, lo: f32, hi: f32) -> Vec3 {
        Vec3::new(self.range(lo, hi), self.range(lo, hi), self.range(lo, hi))
    }
}

/// Boxes of mixed sizes scattered over [-50, 50]³, some of them far larger than the rest.
pub fn random_boxes(rng: &mut Random, n: usize) -> Vec<Aabb> {
    (0..n)
        .map(|_| {
            let c = rng.point(-50.0, 50.0);
            let size = if rng.unit() < 0.05 { 20.0 } else { 1.0 };
            let h = Vec3::new(rng.unit(), rng.unit(), rng.unit()) * size;
            Aabb::new(c - h, c + h)
        })
        .collect()
}

pub type Triangle = [Vec3; 3];

pub fn random_triangles(rng: &mut Random, n: usize) -> Vec<Triangle> {
    (0..n)
        .map(|_| {
            let c = rng.point(0.0, 10.0);
            [
                c + rng.point(-0.6, 0.6),
                c + rng.point(-0.6, 0.6),
                c + rng.point(-0.6, 0.6),
            ]
        })
        .collect()
}

pub fn triangle_box(t: &Triangle) -> Aabb {
    Aabb::from_points(t.iter().copied())
}

pub fn closest_brute_force(
    count: usize,
    mut intersect: impl FnMut(u32, f32) -> Option<f32>,
) -> Option<(f32, u32)> {
    let mut best: Option<(f32, u32)> = None;
    for p in 0..count as u32 {
        if let Some(t) = intersect(p, f32::INFINITY) {
            if best.is_none_or(|(bt, _)| t < bt) {
                best = Some((t, p));
            }
        }
    }
    best
}

pub fn random_ray(rng: &mut Random, lo: f32, hi: f32) -> (Vec3, Vec3) {
    let origin = rng.point(lo, hi);
    let target = rng.point(lo, hi);
    (origin, (target - origin).normalize_or(Vec3::X))
}

/// The records as words, so that bounds compare bit for bit.
pub fn words(records: &[BinaryNodeRecord]) -> &[u32] {
    bytemuck::cast_slice(records)
}

/// A GPU builder's records and order (`gpu` of the boxes) equal its CPU twin's (`cpu` of the
/// same boxes), every word; returns the GPU's records.
pub fn assert_gpu_tree_equals_cpu(
    what: &str,
    bounds: &[Aabb],
    gpu: impl FnOnce(&[Aabb]) -> (Vec<BinaryNodeRecord>, Vec<u32>),
    cpu: impl FnOnce(&[Aabb]) -> BinaryBvh,
) -> Vec<BinaryNodeRecord> {
    let start = Instant::now();
    let (records, order) = gpu(bounds);
    let gpu_time = start.elapsed();
    let cpu = cpu(bounds);
    let expected = cpu.to_records();
    assert_eq!(order, cpu.prim_order, "{what}: primitive order");
    assert_eq!(records.len(), expected.len(), "{what}: node count");
    if let Some(i) = (0..records.len()).find(|&i| words(&records[i..=i]) != words(&expected[i..=i]))
    {
        panic!(
            "{what}: node {i} of {} differs\n  gpu {:?}\n  cpu {:?}",
            records.len(),
            records[i],
            expected[i]
        );
    }
    eprintln!(
        "{what}: {} primitives, GPU build and read-back {:.1} ms",
        bounds.len(),
        gpu_time.as_secs_f64() * 1e3
    );
    records
}
