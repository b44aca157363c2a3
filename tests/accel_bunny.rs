//! BVH, QBVH and wide-BVH closest hits against brute force on the Stanford bunny, alone and
//! instanced.

mod accel_support;

use accel_support::*;
use caustica::accel::aabb::{Aabb, SlabRay};
use caustica::accel::bvh::{build_binary_bvh, BuildSettings};
use caustica::accel::primitives::intersect_triangle;
use caustica::accel::{BvhLayout, PrepareOptions, Prepared, Ray};
use glam::{Affine3A, Quat, Vec3};

#[test]
fn binary_bvh_closest_hits_equal_brute_force_on_the_bunny() {
    let Some(bunny) = bunny() else { return };
    let tri = |i: u32| bunny.triangles[i as usize].map(|v| bunny.positions[v as usize]);
    let bounds: Vec<Aabb> = (0..bunny.triangles.len() as u32)
        .map(|i| Aabb::from_points(tri(i)))
        .collect();
    let bvh = build_binary_bvh(&bounds, &BuildSettings::default());
    let (lo, hi) = bunny.bounds().unwrap();
    let mut rng = Rng::new(1);
    let mut hits = 0;
    for _ in 0..2000 {
        let ray = ray_from_outside(&mut rng, lo, hi);
        let test = |i: u32, t_max: f32| {
            let [a, b, c] = tri(i);
            intersect_triangle(ray.origin, ray.dir, a, b, c, 0.0, t_max).map(|h| h.0)
        };
        let fast = bvh.closest_hit(
            &SlabRay::new(ray.origin, ray.dir),
            0.0,
            f32::INFINITY,
            |i, t| test(i, t * 1.0000001),
        );
        let mut slow: Option<(f32, u32)> = None;
        for i in 0..bunny.triangles.len() as u32 {
            if let Some(t) = test(i, slow.map_or(f32::INFINITY, |s| s.0)) {
                slow = Some((t, i));
            }
        }
        match (fast, slow) {
            (Some(a), Some(b)) => {
                assert_eq!(a.1, b.1);
                assert!((a.0 - b.0).abs() <= 1e-4 * b.0);
                hits += 1;
            }
            (a, b) => assert_eq!(a.is_some(), b.is_some(), "{a:?} vs {b:?}"),
        }
    }
    assert!(hits > 500, "only {hits} of 2000 rays hit the bunny");
}

#[test]
fn qbvh_closest_hits_equal_brute_force_on_the_bunny() {
    let Some(bunny) = bunny() else { return };
    let (lo, hi) = bunny.bounds().unwrap();
    let scene = scene(
        vec![mesh("bunny", bunny, None)],
        vec![instance(0, 7, Affine3A::IDENTITY)],
        vec![],
    );
    let prepared = Prepared::build(&scene, &PrepareOptions::default()).unwrap();
    let mut rng = Rng::new(2);
    let mut hits = 0;
    for i in 0..3000 {
        let ray = if i % 3 == 2 {
            ray_from_inside(&mut rng, lo, hi)
        } else {
            ray_from_outside(&mut rng, lo, hi)
        };
        hits += assert_matches_brute_force(&prepared, &ray) as usize;
    }
    assert!(hits > 1000, "only {hits} of 3000 rays hit the bunny");
    let sp = {
        let ray = Ray::new(Vec3::new(0.0, 0.1, 1.0), Vec3::NEG_Z);
        let hit = prepared
            .intersect(&ray)
            .expect("a ray into the bunny's middle hits it");
        prepared.surface_point(&ray, &hit)
    };
    assert_eq!(sp.material, 7);
    assert!((sp.geometric_normal.length() - 1.0).abs() < 1e-5);
    assert_eq!(
        sp.shading_normal, sp.geometric_normal,
        "the OBJ has no normals"
    );
}

fn instanced_bunnies(layout: BvhLayout) -> Option<(Prepared, Vec3, Vec3)> {
    let bunny = load_obj_asset("meshes/stanford/bunny/bun_zipper_res3.obj")?;
    let transforms = [
        Affine3A::IDENTITY,
        Affine3A::from_scale_rotation_translation(
            Vec3::new(2.0, 0.5, 1.0),
            Quat::from_rotation_y(0.8),
            Vec3::new(0.3, 0.0, 0.0),
        ),
        Affine3A::from_scale_rotation_translation(
            Vec3::new(0.7, 1.5, 3.0),
            Quat::from_euler(glam::EulerRot::XYZ, 0.4, -1.1, 2.0),
            Vec3::new(-0.2, 0.15, 0.1),
        ),
        Affine3A::from_scale_rotation_translation(
            Vec3::splat(0.5),
            Quat::from_rotation_x(3.0),
            Vec3::new(0.0, 0.3, -0.2),
        ),
        // A shear: not expressible as scale + rotation.
        Affine3A::from_cols_array(&[1.0, 0.0, 0.0, 0.8, 1.0, 0.0, 0.0, 0.3, 1.2, 0.1, -0.2, 0.05]),
    ];
    let instances = transforms
        .iter()
        .enumerate()
        .map(|(i, t)| instance(0, i as u32, *t))
        .collect();
    let scene = scene(vec![mesh("bunny", bunny, None)], instances, vec![]);
    let prepared = Prepared::build(&scene, &PrepareOptions::layout(layout)).unwrap();
    let (lo, hi) = prepared.world_bounds();
    Some((prepared, lo, hi))
}

#[test]
fn instanced_bunnies_under_rotation_and_non_uniform_scale_match_brute_force_in_qbvh_and_wide_layouts(
) {
    for layout in [BvhLayout::Qbvh, BvhLayout::Wide] {
        let Some((prepared, lo, hi)) = instanced_bunnies(layout) else {
            return;
        };
        assert_eq!(prepared.stats().top_nodes, prepared.top_node_count() as u64);
        let mut rng = Rng::new(3);
        let mut hit_instances = [0usize; 5];
        for i in 0..3000 {
            let ray = if i % 2 == 0 {
                ray_from_outside(&mut rng, lo, hi)
            } else {
                ray_from_inside(&mut rng, lo, hi)
            };
            if assert_matches_brute_force(&prepared, &ray) {
                hit_instances[prepared.intersect(&ray).unwrap().instance as usize] += 1;
            }
        }
        assert!(
            hit_instances.iter().all(|&n| n > 5),
            "{layout:?}: every instance gets hit: {hit_instances:?}"
        );
    }
}

#[test]
fn any_hit_agrees_with_closest_hit_existence_in_qbvh_and_wide_layouts() {
    for layout in [BvhLayout::Qbvh, BvhLayout::Wide] {
        let Some((prepared, lo, hi)) = instanced_bunnies(layout) else {
            return;
        };
        let mut rng = Rng::new(4);
        for i in 0..3000 {
            let mut ray = if i % 2 == 0 {
                ray_from_outside(&mut rng, lo, hi)
            } else {
                ray_from_inside(&mut rng, lo, hi)
            };
            if i % 3 == 0 {
                // A shadow-ray-like segment that may end before the first surface.
                ray.t_max = rng.range(0.0, 2.0);
            }
            let closest = prepared.intersect(&ray);
            assert_eq!(
                prepared.occluded(&ray),
                closest.is_some(),
                "{layout:?} ray {ray:?}"
            );
            if let Some(hit) = closest {
                assert!(hit.t > ray.t_min && hit.t < ray.t_max);
                let shorter = Ray {
                    t_max: hit.t * 0.999,
                    ..ray
                };
                assert_eq!(
                    prepared.occluded(&shorter),
                    prepared.intersect(&shorter).is_some()
                );
            }
        }
    }
}

#[test]
fn wide_layout_closest_hits_equal_brute_force_and_the_qbvh_bit_for_bit_on_the_bunny() {
    let Some(bunny) = bunny() else { return };
    let (lo, hi) = bunny.bounds().unwrap();
    let scene = scene(
        vec![mesh("bunny", bunny, None)],
        vec![instance(0, 0, Affine3A::IDENTITY)],
        vec![],
    );
    let qbvh = Prepared::build(&scene, &PrepareOptions::default()).unwrap();
    let wide = Prepared::build(&scene, &PrepareOptions::layout(BvhLayout::Wide)).unwrap();
    assert!(wide.mesh_nodes.is_empty() && !wide.mesh_wide.is_empty());
    // An 8-wide tree has far fewer nodes than the 4-wide one, and is shallower.
    assert!(wide.mesh_wide.len() * 2 < qbvh.mesh_nodes.len());
    assert!(wide.meshes[0].depth < qbvh.meshes[0].depth);
    let mut rng = Rng::new(6);
    let mut hits = 0;
    for i in 0..3000 {
        let ray = if i % 3 == 2 {
            ray_from_inside(&mut rng, lo, hi)
        } else {
            ray_from_outside(&mut rng, lo, hi)
        };
        hits += assert_matches_brute_force(&wide, &ray) as usize;
        assert_eq!(wide.intersect(&ray), qbvh.intersect(&ray), "ray {ray:?}");
    }
    assert!(hits > 1000, "only {hits} of 3000 rays hit the bunny");
}

#[test]
fn binary_layout_of_the_middle_level_gives_the_same_hits_as_the_qbvh() {
    let Some(bunny) = bunny() else { return };
    let (lo, hi) = bunny.bounds().unwrap();
    let scene = scene(
        vec![mesh("bunny", bunny, None)],
        vec![instance(0, 0, Affine3A::IDENTITY)],
        vec![],
    );
    let wide = Prepared::build(&scene, &PrepareOptions::default()).unwrap();
    let binary = Prepared::build(
        &scene,
        &PrepareOptions::layout(caustica::accel::BvhLayout::Binary),
    )
    .unwrap();
    // With L leaves a binary tree has 2L - 1 nodes, a 4-wide one about 4L/3.
    assert!(binary.mesh_nodes.len() > wide.mesh_nodes.len() * 5 / 4);
    assert!(binary
        .mesh_nodes
        .iter()
        .all(|n| n.meta & 0x8000_0000 != 0 || n.meta == 2));
    let mut rng = Rng::new(5);
    for _ in 0..2000 {
        let ray = ray_from_outside(&mut rng, lo, hi);
        assert_matches_brute_force(&binary, &ray);
        assert_eq!(binary.intersect(&ray), wide.intersect(&ray));
    }
}
