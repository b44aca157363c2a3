//! Paper 002's SAH kd-tree over triangles as a middle level (`--accel kdtree`): closest and any
//! hits equal brute force on random, camera and far-away rays under every layout's top level,
//! on the CPU and on the GPU (lavapipe in CI), also for rays along its split planes and walks
//! whose short stack overflows; a frame renders the bits of the default structure; meshes of
//! VD patches and spheres keep a tree; `--accel kdtree` and `film { accel kdtree }` name it.

mod accel_support;

use std::sync::Arc;

use accel_support::*;
use caustica::accel::prepared::{MESH_KDTREE, MESH_MERGED};
use caustica::accel::tri_kdtree::{build_kdtree, walk, HEADER_WORDS, INDEX_MASK, SHORT_STACK};
use caustica::accel::{Aabb, BvhBuilder, BvhLayout, PrepareOptions, Prepared, Ray};
use caustica::gpu::{test_context, GpuBackend};
use glam::Vec3;

fn kdtree_options(layout: BvhLayout) -> PrepareOptions {
    PrepareOptions {
        layout,
        builder: BvhBuilder::Kdtree,
        ..PrepareOptions::default()
    }
}

#[test]
fn triangle_kdtree_closest_and_any_hits_equal_brute_force_under_every_layouts_top_level() {
    let scene = stadium_scene();
    for layout in [BvhLayout::Qbvh, BvhLayout::Wide, BvhLayout::Binary] {
        for merge_instances in [true, false] {
            let options = PrepareOptions {
                merge_instances,
                ..kdtree_options(layout)
            };
            let prepared = Prepared::build(&scene, &options).unwrap();
            let trees = (prepared.meshes.iter())
                .filter(|m| m.flags & MESH_KDTREE != 0)
                .count();
            let merged = (prepared.meshes.iter())
                .any(|m| m.flags & MESH_MERGED != 0 && m.flags & MESH_KDTREE != 0);
            assert_eq!(
                merged, merge_instances,
                "the pole and the lid share one tree"
            );
            assert!(trees >= 4, "{trees} kd-trees");
            assert!(
                prepared.prim_refs.is_empty(),
                "kd-trees hold their own references"
            );
            let stats = prepared.stats();
            assert_eq!(stats.kdtrees, trees as u64);
            assert!(stats.kdtree_references >= prepared.triangles.len() as u64);
            let mut hits = 0;
            for ray in structure_rays(&prepared) {
                let slow = prepared.intersect_brute_force(&ray);
                hits += assert_same_hit(&ray, prepared.intersect(&ray), slow) as usize;
                assert_eq!(prepared.occluded(&ray), slow.is_some(), "ray {ray:?}");
            }
            assert!(hits > 1200, "{}: {hits} hits", layout.name());
        }
    }
}

#[test]
fn triangle_kdtree_of_the_bunny_equals_brute_force_on_camera_rays() {
    assert_bunny_camera_rays_match_brute_force(&kdtree_options(BvhLayout::Wide));
}

/// The split planes of a tree's internal nodes, with their axes (object space).
fn split_planes(words: &[u32]) -> Vec<(usize, f32)> {
    (0..words[6] as usize)
        .filter_map(|n| {
            let w0 = words[HEADER_WORDS + 2 * n];
            (w0 >> 30 != 3).then(|| {
                (
                    (w0 >> 30) as usize,
                    f32::from_bits(words[HEADER_WORDS + 2 * n + 1]),
                )
            })
        })
        .collect()
}

/// Rays that start on split planes, run inside them, or cross them where two planes meet:
/// where the walk chooses a child by a rounding.
#[test]
fn triangle_kdtree_rays_along_and_across_split_planes_equal_brute_force() {
    let scene = stadium_scene();
    let prepared = Prepared::build(&scene, &kdtree_options(BvhLayout::Wide)).unwrap();
    let mut rng = Rng::new(9);
    let mut rays = Vec::new();
    for (i, record) in prepared.instances[..prepared.scene_instances as usize]
        .iter()
        .enumerate()
    {
        let mesh = &prepared.meshes[record.mesh as usize];
        if mesh.flags & MESH_KDTREE == 0 {
            continue;
        }
        let words = &prepared.grid_cells[mesh.node_offset as usize..];
        let f = |k: usize| f32::from_bits(words[k]);
        let (lo, hi) = (Vec3::new(f(0), f(1), f(2)), Vec3::new(f(3), f(4), f(5)));
        let planes = split_planes(words);
        if planes.is_empty() {
            // A small mesh the SAH leaves one leaf.
            continue;
        }
        let to_world = scene.instances[i].transform;
        for _ in 0..80 {
            let (a, s) = planes[rng.range(0.0, planes.len() as f32 - 0.001) as usize];
            let (b, t) = planes[rng.range(0.0, planes.len() as f32 - 0.001) as usize];
            let mut p = rng.in_box(lo, hi);
            p[a] = s;
            if b != a {
                p[b] = t;
            }
            let mut along = rng.unit_vector();
            along[a] = 0.0;
            let axis = [Vec3::X, Vec3::Y, Vec3::Z][a];
            for dir in [along, -along, axis, -axis, rng.unit_vector()] {
                if dir.length_squared() == 0.0 {
                    continue;
                }
                let (p, dir) = (
                    to_world.transform_point3(p),
                    to_world.transform_vector3(dir),
                );
                rays.push(Ray::new(p - dir * 2.0, dir));
                rays.push(Ray::new(p, dir));
            }
        }
    }
    assert!(rays.len() > 1000, "{} rays", rays.len());
    let mut hits = 0;
    for ray in &rays {
        hits += assert_matches_brute_force(&prepared, ray) as usize;
        assert_eq!(
            prepared.occluded(ray),
            prepared.intersect_brute_force(ray).is_some(),
            "ray {ray:?}"
        );
    }
    assert!(hits > rays.len() / 4, "{hits} of {} rays hit", rays.len());
}

/// A walk's references in order, and the hit it settles on, over small cubes' boxes: the test
/// takes a box's hit at its entry distance.
fn walk_boxes(
    words: &[u32],
    boxes: &[Aabb],
    origin: Vec3,
    dir: Vec3,
) -> (Option<(f32, u32)>, usize) {
    let mut best: Option<(f32, u32)> = None;
    let mut tests = 0;
    let mut limit = f32::INFINITY;
    walk(words, origin, dir, 0.0, &mut limit, &mut |prim, limit| {
        tests += 1;
        let b = boxes[prim as usize];
        let inv = dir.recip();
        let t0 = (b.min - origin) * inv;
        let t1 = (b.max - origin) * inv;
        let (near, far) = (t0.min(t1).max_element().max(0.0), t0.max(t1).min_element());
        if near <= far && near <= *limit && best.is_none_or(|(t, p)| (near, prim) < (t, p)) {
            *limit = near;
            best = Some((near, prim));
        }
        false
    });
    (best, tests)
}

/// A deep tree (thousands of cubes along a diagonal line, in clusters) whose walks push far
/// more than the short stack's entries: the closest box a walk finds is brute force's.
#[test]
fn triangle_kdtree_walks_that_overflow_the_short_stack_restart_and_find_the_closest_hit() {
    let mut rng = Rng::new(3);
    let mut boxes = Vec::new();
    for cluster in 0..200 {
        let centre = Vec3::splat(cluster as f32) + rng.unit_vector() * 0.3;
        for _ in 0..24 {
            let c = centre + rng.unit_vector() * rng.range(0.0, 0.4);
            let r = rng.range(0.005, 0.03);
            boxes.push(Aabb {
                min: c - Vec3::splat(r),
                max: c + Vec3::splat(r),
            });
        }
    }
    let build = build_kdtree(&boxes).unwrap();
    assert!(
        build.depth as usize > 2 * SHORT_STACK,
        "depth {}",
        build.depth
    );
    let mut deep_walks = 0;
    for _ in 0..300 {
        let origin = Vec3::splat(-5.0) + rng.unit_vector() * 2.0;
        let target = Vec3::splat(rng.range(0.0, 200.0)) + rng.unit_vector() * 0.6;
        let dir = target - origin;
        let (found, tests) = walk_boxes(&build.words, &boxes, origin, dir);
        let inv = dir.recip();
        let brute = boxes
            .iter()
            .enumerate()
            .filter_map(|(k, b)| {
                let t0 = (b.min - origin) * inv;
                let t1 = (b.max - origin) * inv;
                let (near, far) = (t0.min(t1).max_element().max(0.0), t0.max(t1).min_element());
                (near <= far).then_some((near, k as u32))
            })
            .min_by(|a, b| a.partial_cmp(b).unwrap());
        assert_eq!(found, brute, "ray from {origin} along {dir}");
        deep_walks += (found.is_some() && tests > 0) as usize;
    }
    assert!(deep_walks > 100, "{deep_walks} walks hit a box");
    // Every internal node names children inside the node array.
    for (n, pair) in build.words[HEADER_WORDS..HEADER_WORDS + 2 * build.nodes]
        .chunks(2)
        .enumerate()
    {
        if pair[0] >> 30 != 3 {
            let left = (pair[0] & INDEX_MASK) as usize;
            assert!(
                left > n && left + 1 < build.nodes,
                "node {n}: children {left}"
            );
        }
    }
}

#[test]
fn triangle_kdtree_leaves_vd_and_sphere_meshes_their_trees_and_names_the_choice() {
    assert_structure_choice("kdtree", BvhBuilder::Kdtree, MESH_KDTREE);
}

#[test]
fn triangle_kdtree_frames_render_the_bits_of_the_default_structure_on_the_cpu() {
    let cpu = caustica::cpu::CpuBackend;
    assert_frames_match_default(&cpu, PrepareOptions::default(), BvhBuilder::Kdtree);
}

#[test]
fn triangle_kdtree_gpu_frames_render_the_bits_of_the_default_structure() {
    let Some(ctx) = test_context() else { return };
    let backend = GpuBackend::new(Arc::new(ctx)).unwrap();
    let default = PrepareOptions::layout(BvhLayout::Wide);
    assert_frames_match_default(&backend, default, BvhBuilder::Kdtree);
}

#[test]
fn triangle_kdtree_gpu_traversal_of_every_ray_kind_equals_the_cpu() {
    let Some(ctx) = test_context() else { return };
    assert_gpu_traversal_matches_cpu(&ctx, BvhBuilder::Kdtree, MESH_KDTREE);
}
