//! Helpers shared by the BVH builders' tests (`gpu_lbvh.rs`, `gpu_sah.rs`, `gpu_ploc.rs`): a
//! seeded generator, random boxes and triangles, the awkward box sets every builder is tried
//! on, random rays, the brute-force closest hit, the checks of a tree's shape and the
//! comparison of a GPU builder's records with its CPU twin's.
#![allow(dead_code)]

use std::time::Instant;

use caustica::accel::aabb::Aabb;
use caustica::accel::bvh::{BinaryBvh, BinaryNodeKind, BinaryNodeRecord, NO_NODE};
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

/// The awkward box sets every GPU builder is compared with its twin on, by name: equal boxes,
/// empty boxes mixed in (and one inverted box), only empty boxes, a flat set, a few distinct
/// boxes many times over, zeros of both signs, and subnormal coordinates (which a GPU may
/// flush).
pub fn odd_box_sets(rng: &mut Random) -> Vec<(&'static str, Vec<Aabb>)> {
    let unit = Aabb::new(Vec3::splat(-1.0), Vec3::splat(1.0));
    let mut mixed = random_boxes(rng, 3000);
    for i in (0..mixed.len()).step_by(3) {
        mixed[i] = Aabb::EMPTY;
    }
    mixed[1] = Aabb::new(Vec3::new(1.0, 0.0, 0.0), Vec3::new(0.0, 1.0, 1.0));
    let flat: Vec<Aabb> = (0..2000)
        .map(|_| {
            let (x, y) = (rng.range(0.0, 10.0), rng.range(0.0, 10.0));
            Aabb::new(Vec3::new(x, 2.0, y), Vec3::new(x + 0.1, 2.0, y + 0.1))
        })
        .collect();
    let distinct = random_boxes(rng, 5);
    let repeated: Vec<Aabb> = (0..4000)
        .map(|_| distinct[(rng.next_u32() % 5) as usize])
        .collect();
    let signed: Vec<Aabb> = (0..300)
        .map(|i| {
            let z = if rng.unit() < 0.5 { 0.0 } else { -0.0 };
            let x = (i % 7) as f32;
            Aabb::new(Vec3::new(x, z, z), Vec3::new(x + 1.0, -z, z))
        })
        .collect();
    let tiny: Vec<Aabb> = (0..500)
        .map(|i| {
            let x = f32::from_bits(1 + (i as u32 * 7919) % 0x0080_0000);
            Aabb::new(Vec3::new(x, -x, 0.0), Vec3::new(2.0 * x, x, x))
        })
        .collect();
    vec![
        ("equal boxes", vec![unit; 1000]),
        ("empty boxes mixed in", mixed),
        ("only empty boxes", vec![Aabb::EMPTY; 7]),
        ("a flat set", flat),
        ("repeated boxes", repeated),
        ("signed zeros", signed),
        ("subnormal coordinates", tiny),
    ]
}

fn box_bits(b: &Aabb) -> [u32; 6] {
    let [a, c] = [b.min.to_array(), b.max.to_array()];
    [a[0], a[1], a[2], c[0], c[1], c[2]].map(f32::to_bits)
}

/// The shape every builder's tree over `bounds` has: `2n − 1` nodes, `prim_order` holding
/// every primitive once, every node reached once from the root, inner nodes before the
/// leaves, every subtree's range its children's side by side (the left one first), the root's
/// range everything, parents linking back, every box holding its children's. Returns the depth
/// (the root is at 1; 0 without primitives).
pub fn assert_links_ranges_and_boxes(bvh: &BinaryBvh, bounds: &[Aabb]) -> usize {
    let n = bounds.len();
    if n == 0 {
        assert!(bvh.nodes.is_empty() && bvh.prim_order.is_empty());
        return 0;
    }
    assert_eq!(bvh.nodes.len(), 2 * n - 1);
    let mut seen = vec![false; n];
    for &p in &bvh.prim_order {
        assert!(!std::mem::replace(&mut seen[p as usize], true), "{p} twice");
    }
    assert!(seen.iter().all(|&s| s));
    let records = bvh.to_records();
    assert_eq!(records[0].parent, NO_NODE);
    assert_eq!((records[0].first, records[0].count), (0, n as u32));
    let mut reached = vec![0u32; records.len()];
    let mut stack = vec![(0u32, 1usize)];
    let mut depth = 0;
    while let Some((i, d)) = stack.pop() {
        reached[i as usize] += 1;
        depth = depth.max(d);
        let node = &bvh.nodes[i as usize];
        if let BinaryNodeKind::Inner { left, right } = node.kind {
            assert!((i as usize) < n - 1, "inner node {i} among the leaves");
            let (l, r) = (records[left as usize], records[right as usize]);
            assert_eq!((l.parent, r.parent), (i, i));
            assert_eq!(l.first + l.count, r.first, "node {i}: ranges side by side");
            assert_eq!(records[i as usize].first, l.first);
            assert_eq!(records[i as usize].count, l.count + r.count);
            for c in [left, right] {
                assert!(
                    node.bounds.contains_box(&bvh.nodes[c as usize].bounds),
                    "node {i} does not hold child {c}"
                );
            }
            stack.extend([(left, d + 1), (right, d + 1)]);
        }
    }
    assert!(
        reached.iter().all(|&r| r == 1),
        "every node once from the root"
    );
    depth
}

/// Leaf `k` (node `n − 1 + k`) is at place `k` of the order and holds `prim_order[k]`'s box,
/// bit for bit (the LBVH's and the binned SAH's numbering).
pub fn assert_leaves_in_order(bvh: &BinaryBvh, bounds: &[Aabb]) {
    let n = bounds.len();
    for (k, &p) in bvh.prim_order.iter().enumerate() {
        let leaf = &bvh.nodes[n - 1 + k];
        assert_eq!(
            leaf.kind,
            BinaryNodeKind::Leaf {
                first: k as u32,
                count: 1
            }
        );
        assert_eq!(box_bits(&leaf.bounds), box_bits(&bounds[p as usize]));
    }
}
