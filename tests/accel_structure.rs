//! Structural invariants of the prepared QBVHs, edge cases that must not panic, errors, normals.

mod accel_support;

use std::path::PathBuf;
use std::sync::Arc;

use accel_support::*;
use caustica::accel::aabb::Aabb;
use caustica::accel::qbvh::QbvhNode;
use caustica::accel::{AccelError, BvhBuilder, BvhLayout, PrepareOptions, Prepared, Ray};
use caustica::scene::shapes::{box_mesh, grid_quad, uv_sphere};
use caustica::scene::{MeshData, Span, VdImage, VdMap, VdSpace};
use glam::{Affine3A, Quat, Vec2, Vec3};

/// Checks one tree: child ranges lie inside the tree, each node but the root is the child of
/// exactly one parent (so siblings are contiguous runs), parents contain their children, leaves
/// contain their primitives, and every primitive is referenced exactly once.
fn check_qbvh(nodes: &[QbvhNode], refs: &[u32], prim_bounds: &[Aabb]) {
    if prim_bounds.is_empty() {
        assert!(nodes.is_empty());
        return;
    }
    let mut parents = vec![0usize; nodes.len()];
    let mut seen = vec![0usize; prim_bounds.len()];
    for node in nodes {
        let bounds = node.bounds();
        let (first, count) = (node.first as usize, node.count() as usize);
        if node.is_leaf() {
            assert!(count >= 1 && first + count <= refs.len());
            for &p in &refs[first..first + count] {
                seen[p as usize] += 1;
                assert!(
                    bounds.contains_box(&prim_bounds[p as usize]),
                    "leaf {bounds:?} misses primitive {p}"
                );
            }
        } else {
            assert!((2..=4).contains(&count), "inner node with {count} children");
            assert!(first > 0 && first + count <= nodes.len());
            for child in &nodes[first..first + count] {
                assert!(bounds.contains_box(&child.bounds()));
            }
            for p in &mut parents[first..first + count] {
                *p += 1;
            }
        }
    }
    assert_eq!(parents[0], 0, "the root is nobody's child");
    assert!(
        parents[1..].iter().all(|&p| p == 1),
        "every other node has exactly one parent"
    );
    assert!(
        seen.iter().all(|&s| s == 1),
        "every primitive appears exactly once"
    );
}

fn bumpy_map() -> VdMap {
    let n = 16;
    let texels = (0..n * n)
        .map(|i| {
            let (x, y) = ((i % n) as f32 / n as f32, (i / n) as f32 / n as f32);
            Vec3::new(
                0.05 * (7.0 * x).sin(),
                0.03 * (5.0 * y).cos(),
                0.2 * (x * 9.0 + y * 4.0).sin(),
            )
        })
        .collect();
    VdMap {
        name: "bumps".into(),
        path: PathBuf::new(),
        images: vec![Arc::new(VdImage {
            width: n as u32,
            height: n as u32,
            texels,
        })],
        layout: caustica::scene::VdLayout::Uv,
        space: VdSpace::Tangent,
        channels: [0, 1, 2],
        scale: 1.0,
        midlevel: 0.0,
        padding: 0.01,
        span: Span::NONE,
    }
}

fn mixed_scene() -> caustica::scene::Scene {
    let bunny = load_obj_asset("meshes/stanford/bunny/bun_zipper_res4.obj")
        .unwrap_or_else(|| uv_sphere(0.1, 24));
    let meshes = vec![
        mesh("bunny", bunny, None),
        mesh("sphere", uv_sphere(1.0, 32), None),
        mesh("ground", grid_quad(Vec2::new(4.0, 4.0), [6, 5]), Some(0)),
        mesh("empty", MeshData::default(), None),
        mesh("box", box_mesh(Vec3::new(1.0, 2.0, 0.5)), None),
    ];
    let mut instances = Vec::new();
    for i in 0..12 {
        let transform = Affine3A::from_scale_rotation_translation(
            Vec3::new(1.0 + i as f32 * 0.1, 1.0, 0.5 + i as f32 * 0.05),
            Quat::from_rotation_y(i as f32),
            Vec3::new(i as f32 * 0.7 - 4.0, (i % 3) as f32, (i % 4) as f32 - 2.0),
        );
        instances.push(instance(i % 5, i, transform));
    }
    scene(meshes, instances, vec![bumpy_map()])
}

#[test]
fn every_qbvh_contains_its_children_and_references_each_primitive_once() {
    let scene = mixed_scene();
    let prepared = Prepared::build(&scene, &PrepareOptions::default()).unwrap();
    for (m, record) in prepared.meshes.iter().enumerate() {
        let nodes = &prepared.mesh_nodes
            [record.node_offset as usize..(record.node_offset + record.node_count) as usize];
        let prim_count = (record.triangle_count + record.quad_count) as usize;
        let refs = &prepared.prim_refs
            [record.prim_ref_offset as usize..record.prim_ref_offset as usize + prim_count];
        let position = |v: u32| Vec3::from_slice(&prepared.positions[v as usize][..3]);
        let mut prim_bounds: Vec<Aabb> = (0..record.triangle_count)
            .map(|t| {
                Aabb::from_points(
                    prepared.triangles[(record.triangle_offset + t) as usize][..3]
                        .iter()
                        .map(|&v| position(v)),
                )
            })
            .collect();
        for q in 0..record.quad_count {
            prim_bounds.push(if scene.meshes[m].displacement.is_some() {
                prepared.vd_patches[(record.vd_patch_offset + q) as usize].bounds()
            } else {
                Aabb::from_points(prepared.quads[(record.quad_offset + q) as usize].map(position))
            });
        }
        check_qbvh(nodes, refs, &prim_bounds);
    }
    // The top level over the instances of non-empty meshes.
    let instance_bounds: Vec<Aabb> = prepared
        .top_instance_refs
        .iter()
        .map(|&i| {
            let record = &prepared.meshes[scene.instances[i as usize].mesh as usize];
            prepared.mesh_nodes[record.node_offset as usize]
                .bounds()
                .transformed(&scene.instances[i as usize].transform)
        })
        .collect();
    let identity: Vec<u32> = (0..instance_bounds.len() as u32).collect();
    // Top leaves refer to positions in top_instance_refs; check against the bounds in that order.
    check_qbvh(&prepared.top_nodes, &identity, &instance_bounds);
    assert!(prepared
        .top_nodes
        .iter()
        .filter(|n| n.is_leaf())
        .all(|n| n.count() == 1));
    assert_eq!(
        prepared.top_instance_refs.len(),
        12 - 2,
        "the two instances of the empty mesh are left out"
    );
}

#[test]
fn mixed_scene_with_vd_patches_matches_brute_force_and_the_qbvh_in_the_wide_layout() {
    let qbvh = Prepared::build(&mixed_scene(), &PrepareOptions::default()).unwrap();
    let wide = Prepared::build(&mixed_scene(), &PrepareOptions::layout(BvhLayout::Wide)).unwrap();
    assert_eq!(wide.world_bounds(), qbvh.world_bounds());
    let (lo, hi) = wide.world_bounds();
    let mut rng = Rng::new(12);
    let mut hits = 0;
    for i in 0..1500 {
        let ray = if i % 2 == 0 {
            ray_from_outside(&mut rng, lo, hi)
        } else {
            ray_from_inside(&mut rng, lo, hi)
        };
        hits += assert_matches_brute_force(&wide, &ray) as usize;
        assert_eq!(wide.intersect(&ray), qbvh.intersect(&ray), "ray {ray:?}");
        assert_eq!(wide.occluded(&ray), qbvh.occluded(&ray), "ray {ray:?}");
    }
    assert!(hits > 300, "{hits}");
    let stats = wide.stats();
    assert_eq!(stats.middle_nodes, wide.mesh_wide.len() as u64);
    assert_eq!(stats.top_nodes, wide.top_wide.len() as u64);
}

#[test]
fn mixed_scene_matches_brute_force_and_reports_stats() {
    let prepared = Prepared::build(&mixed_scene(), &PrepareOptions::default()).unwrap();
    let (lo, hi) = prepared.world_bounds();
    let mut rng = Rng::new(11);
    let mut hits = 0;
    for i in 0..1500 {
        let ray = if i % 2 == 0 {
            ray_from_outside(&mut rng, lo, hi)
        } else {
            ray_from_inside(&mut rng, lo, hi)
        };
        hits += assert_matches_brute_force(&prepared, &ray) as usize;
    }
    assert!(hits > 300, "{hits}");
    let stats = prepared.stats();
    assert_eq!(stats.vd_patches, 30);
    assert_eq!(stats.instances, 12);
    assert_eq!(stats.middle_nodes, prepared.mesh_nodes.len() as u64);
    assert!(stats.build_ms >= 0.0 && stats.memory.iter().map(|(_, b)| b).sum::<usize>() > 0);
    let named = stats.to_vec();
    let stat = |name: &str| named.iter().find(|(k, _)| k == name).map(|s| s.1);
    assert_eq!(stat("bvh/vd_patches"), Some(30.0));
    assert_eq!(
        stat("bvh/nodes"),
        Some((prepared.top_nodes.len() + prepared.mesh_nodes.len()) as f64)
    );
}

#[test]
fn empty_scenes_and_degenerate_geometry_neither_panic_nor_hit_in_qbvh_and_wide_layouts() {
    for layout in [BvhLayout::Qbvh, BvhLayout::Wide] {
        let ray = Ray::new(Vec3::new(0.0, 0.0, 5.0), Vec3::NEG_Z);
        let empty = Prepared::build(
            &scene(vec![], vec![], vec![]),
            &PrepareOptions::layout(layout),
        )
        .unwrap();
        assert_eq!(empty.intersect(&ray), None);
        assert!(!empty.occluded(&ray));
        assert_eq!(empty.world_bounds(), (Vec3::ZERO, Vec3::ZERO));
        assert!(!empty.stats().to_vec().is_empty());

        let degenerate = MeshData {
            positions: vec![Vec3::ZERO, Vec3::X, Vec3::X * 2.0, Vec3::ZERO],
            triangles: vec![[0, 1, 2], [0, 0, 0], [1, 3, 1]],
            quads: vec![[0, 1, 2, 3]],
            ..Default::default()
        };
        let s = scene(
            vec![
                mesh("empty", MeshData::default(), None),
                mesh("degenerate", degenerate, None),
            ],
            vec![
                instance(0, 0, Affine3A::IDENTITY),
                instance(1, 0, Affine3A::IDENTITY),
            ],
            vec![],
        );
        let prepared = Prepared::build(&s, &PrepareOptions::layout(layout)).unwrap();
        for dir in [
            Vec3::NEG_Z,
            Vec3::X,
            Vec3::NEG_X,
            Vec3::new(0.0, 0.0, 0.0),
            Vec3::NAN,
        ] {
            for origin in [
                Vec3::new(0.5, 0.0, 1.0),
                Vec3::new(-1.0, 0.0, 0.0),
                Vec3::ZERO,
            ] {
                let ray = Ray::new(origin, dir);
                assert_eq!(prepared.intersect(&ray), None, "{ray:?}");
                assert!(!prepared.occluded(&ray));
                assert_eq!(prepared.intersect_brute_force(&ray), None);
            }
        }
    }
}

#[test]
fn axis_parallel_rays_along_box_faces_hit_like_brute_force_in_qbvh_and_wide_layouts() {
    for layout in [BvhLayout::Qbvh, BvhLayout::Wide] {
        let s = scene(
            vec![mesh("box", box_mesh(Vec3::ONE), None)],
            vec![instance(0, 0, Affine3A::IDENTITY)],
            vec![],
        );
        let prepared = Prepared::build(&s, &PrepareOptions::layout(layout)).unwrap();
        let mut rng = Rng::new(5);
        for _ in 0..500 {
            // Origins on the planes of the box's faces and edges, directions along the axes.
            let snap = |v: f32| if v.abs() > 0.3 { 0.5 * v.signum() } else { v };
            let origin = Vec3::new(
                snap(rng.range(-1.0, 1.0)),
                snap(rng.range(-1.0, 1.0)),
                snap(rng.range(-1.0, 1.0)),
            ) * 1.5;
            for dir in [
                Vec3::X,
                Vec3::NEG_X,
                Vec3::Y,
                Vec3::NEG_Y,
                Vec3::Z,
                Vec3::NEG_Z,
            ] {
                let ray = Ray::new(origin, dir);
                assert_matches_brute_force(&prepared, &ray);
            }
        }
    }
}

#[test]
fn invalid_scenes_are_errors_not_panics() {
    let quad = || grid_quad(Vec2::ONE, [1, 1]);
    let build = |s| Prepared::build(&s, &PrepareOptions::default());
    let bad_mesh = MeshData {
        positions: vec![Vec3::ZERO],
        triangles: vec![[0, 1, 2]],
        ..Default::default()
    };
    assert!(matches!(
        build(scene(vec![mesh("bad", bad_mesh, None)], vec![], vec![])),
        Err(AccelError::InvalidMesh { .. })
    ));
    assert!(matches!(
        build(scene(
            vec![mesh("q", quad(), None)],
            vec![instance(3, 0, Affine3A::IDENTITY)],
            vec![]
        )),
        Err(AccelError::UnknownMesh { .. })
    ));
    assert!(matches!(
        build(scene(vec![mesh("q", quad(), Some(2))], vec![], vec![])),
        Err(AccelError::UnknownVdMap { .. })
    ));
    let flat = Affine3A::from_scale(Vec3::new(1.0, 0.0, 1.0));
    assert!(matches!(
        build(scene(
            vec![mesh("q", quad(), None)],
            vec![instance(0, 0, flat)],
            vec![]
        )),
        Err(AccelError::SingularTransform { instance: 0 })
    ));
}

#[test]
fn non_uniformly_scaled_sphere_gets_ellipsoid_normals() {
    let radii = Vec3::new(3.0, 1.0, 0.5);
    let transform =
        Affine3A::from_scale_rotation_translation(radii, Quat::IDENTITY, Vec3::new(1.0, 2.0, 3.0));
    let s = scene(
        vec![mesh("sphere", uv_sphere(1.0, 64), None)],
        vec![instance(0, 4, transform)],
        vec![],
    );
    let prepared = Prepared::build(&s, &PrepareOptions::default()).unwrap();
    let mut rng = Rng::new(9);
    let centre = Vec3::new(1.0, 2.0, 3.0);
    let mut checked = 0;
    for _ in 0..500 {
        let origin = centre + rng.unit_vector() * 10.0;
        let ray = Ray::new(
            origin,
            centre + rng.in_box(-radii * 0.5, radii * 0.5) - origin,
        );
        let Some(hit) = prepared.intersect(&ray) else {
            continue;
        };
        let sp = prepared.surface_point(&ray, &hit);
        let local = sp.position - centre;
        let analytic = (local / (radii * radii)).normalize();
        assert!((sp.position - ray.at(hit.t)).length() < 1e-3);
        assert!(
            sp.shading_normal.dot(analytic) > 0.999,
            "shading {} vs {}",
            sp.shading_normal,
            analytic
        );
        assert!(
            sp.geometric_normal.dot(analytic) > 0.95,
            "geometric {} vs {}",
            sp.geometric_normal,
            analytic
        );
        assert!(
            sp.geometric_normal.dot(ray.dir) < 0.0,
            "hit from outside, on the front side"
        );
        assert!((sp.shading_normal.length() - 1.0).abs() < 1e-5);
        assert!(sp.uv.cmpge(Vec2::ZERO).all() && sp.uv.cmple(Vec2::ONE).all());
        assert_eq!((sp.material, sp.mesh), (4, 0));
        checked += 1;
    }
    assert!(checked > 400);
}

/// `n` rays of seed `seed` through the box `(lo, hi)`: from outside, from inside, and from one
/// camera position, in turn.
fn mixed_rays(seed: u64, n: usize, lo: Vec3, hi: Vec3) -> Vec<Ray> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|i| match i % 3 {
            0 => ray_from_outside(&mut rng, lo, hi),
            1 => ray_from_inside(&mut rng, lo, hi),
            _ => {
                let eye = lo + (hi - lo) * Vec3::new(0.5, 0.7, 3.0);
                let target = rng.in_box(lo, hi);
                Ray::new(eye, target - eye)
            }
        })
        .collect()
}

#[test]
fn every_layout_and_builder_pair_matches_brute_force_on_the_mixed_scene() {
    // The rays and their brute-force hits once: they do not depend on the accelerator.
    let reference = Prepared::build(&mixed_scene(), &PrepareOptions::default()).unwrap();
    let (lo, hi) = reference.world_bounds();
    let rays = mixed_rays(21, 1500, lo, hi);
    let expected: Vec<_> = rays
        .iter()
        .map(|ray| reference.intersect_brute_force(ray))
        .collect();
    let mut pairs = 0;
    for layout in BvhLayout::ALL {
        for builder in BvhBuilder::ALL {
            let options = PrepareOptions {
                layout,
                builder,
                device_builds: false,
                ..PrepareOptions::default()
            };
            if !builder.builds(layout) {
                let err = Prepared::build(&mixed_scene(), &options).unwrap_err();
                assert!(matches!(err, AccelError::BuilderLayout { .. }), "{err}");
                continue;
            }
            pairs += 1;
            let prepared = Prepared::build(&mixed_scene(), &options).unwrap();
            assert!(prepared.device_builds.is_empty());
            assert_eq!(prepared.world_bounds(), (lo, hi));
            let mut hits = 0;
            for (ray, slow) in rays.iter().zip(&expected) {
                hits += assert_same_hit(ray, prepared.intersect(ray), *slow) as usize;
            }
            assert!(hits > 300, "{}:{}: {hits}", layout.name(), builder.name());
        }
    }
    assert_eq!(
        pairs, 13,
        "qbvh, binary and wide by cpu_sah, wide by gpu_lbvh, gpu_sah, gpu_hybrid and gpu_ploc, \
         and the grid and the kd-tree under each layout's top level"
    );
}

#[test]
fn a_gpu_builder_left_to_the_device_reserves_room_and_lists_the_meshes() {
    for builder in [
        BvhBuilder::GpuLbvh,
        BvhBuilder::GpuSah,
        BvhBuilder::GpuHybrid,
        BvhBuilder::GpuPloc,
    ] {
        let options = PrepareOptions {
            layout: BvhLayout::Wide,
            builder,
            device_builds: true,
            ..PrepareOptions::default()
        };
        let prepared = Prepared::build(&mixed_scene(), &options).unwrap();
        let twin = Prepared::build(
            &mixed_scene(),
            &PrepareOptions {
                device_builds: false,
                ..options
            },
        )
        .unwrap();
        assert!(!prepared.device_builds.is_empty());
        for build in &prepared.device_builds {
            let mesh = prepared.meshes[build.mesh as usize];
            let built = twin.meshes[build.mesh as usize];
            let prims = (mesh.triangle_count + mesh.quad_count) as usize;
            assert_eq!(build.boxes.len(), prims);
            assert_eq!(build.builder, builder);
            assert!(
                mesh.node_count >= built.node_count,
                "room for the tree the twin built"
            );
            assert_eq!(
                prepared.mesh_bounds[build.mesh as usize],
                twin.mesh_bounds[build.mesh as usize]
            );
            let refs = &prepared.prim_refs[mesh.prim_ref_offset as usize..][..prims];
            assert!(refs.iter().enumerate().all(|(i, &r)| r == i as u32));
        }
        // The top level is the twin's: the meshes' bounds are the same.
        assert_eq!(prepared.top_wide, twin.top_wide);
    }
}

/// Parts that share one transform (as an OBJ file's material parts do), twice over, with a mesh
/// instanced twice, an empty part, a displaced part and two parts of the very same geometry
/// (exact ties) among them.
fn parts_scene() -> caustica::scene::Scene {
    let tilted = Affine3A::from_scale_rotation_translation(
        Vec3::new(1.2, 0.8, 1.0),
        Quat::from_rotation_y(0.7) * Quat::from_rotation_x(0.3),
        Vec3::new(0.5, -0.25, 1.0),
    );
    let shifted = Affine3A::from_translation(Vec3::new(-3.0, 0.5, 0.0));
    let meshes = vec![
        mesh("sphere", uv_sphere(0.3, 20), None),
        mesh("box", box_mesh(Vec3::new(1.5, 0.4, 0.7)), None),
        mesh("ground", grid_quad(Vec2::new(4.0, 4.0), [5, 4]), None),
        mesh("same box", box_mesh(Vec3::new(1.5, 0.4, 0.7)), None),
        mesh("empty", MeshData::default(), None),
        mesh("bumps", grid_quad(Vec2::new(2.0, 2.0), [3, 3]), Some(0)),
        mesh("shared", box_mesh(Vec3::new(0.3, 0.3, 0.3)), None),
        mesh("small sphere", uv_sphere(0.5, 12), None),
        mesh("tall box", box_mesh(Vec3::new(0.2, 2.0, 0.2)), None),
    ];
    let instances = vec![
        instance(3, 0, tilted),
        instance(0, 1, tilted),
        instance(6, 2, tilted),
        instance(1, 3, tilted),
        instance(2, 4, tilted),
        instance(4, 5, tilted),
        instance(5, 6, tilted),
        instance(7, 7, shifted),
        instance(6, 8, shifted),
        instance(8, 9, shifted),
    ];
    scene(meshes, instances, vec![bumpy_map()])
}

#[test]
fn merged_instances_hit_what_separate_instances_and_brute_force_hit_in_every_layout() {
    let separate = PrepareOptions {
        merge_instances: false,
        ..PrepareOptions::default()
    };
    let reference = Prepared::build(&parts_scene(), &separate).unwrap();
    let (lo, hi) = reference.world_bounds();
    let rays = mixed_rays(41, 1200, lo, hi);
    let expected: Vec<_> = rays
        .iter()
        .map(|ray| reference.intersect_brute_force(ray))
        .collect();
    for layout in BvhLayout::ALL {
        for builder in BvhBuilder::ALL.into_iter().filter(|b| b.builds(layout)) {
            let name = format!("{}:{}", layout.name(), builder.name());
            let options = PrepareOptions {
                layout,
                builder,
                ..PrepareOptions::default()
            };
            let merged = Prepared::build(&parts_scene(), &options).unwrap();
            let apart = Prepared::build(
                &parts_scene(),
                &PrepareOptions {
                    merge_instances: false,
                    ..options
                },
            )
            .unwrap();
            // The tilted group: sphere, box, ground and the same box (the shared mesh, the
            // empty and the displaced parts stay apart); the shifted one: the small sphere and
            // the tall box.
            assert_eq!(merged.merged_instances, 6, "{name}");
            assert_eq!(merged.scene_instances, 10, "{name}");
            assert_eq!(merged.instances.len(), 12, "{name}: a record per group");
            assert_eq!(apart.merged_instances, 0, "{name}");
            assert_eq!(
                merged.top_instance_refs.len(),
                5,
                "{name}: 2 groups, 3 apart"
            );
            assert_eq!(merged.world_bounds(), apart.world_bounds(), "{name}");
            assert_eq!(merged.ray_epsilon(), apart.ray_epsilon(), "{name}");
            let (mut hits, mut merged_hits, mut ties) = (0, 0, 0);
            for (ray, slow) in rays.iter().zip(&expected) {
                let fast = merged.intersect(ray);
                hits += assert_same_hit(ray, fast, *slow) as usize;
                assert_eq!(fast, apart.intersect(ray), "{name}: {ray:?}");
                assert_eq!(merged.occluded(ray), slow.is_some(), "{name}: {ray:?}");
                if let Some(hit) = fast {
                    merged_hits += [0, 1, 3, 4, 7, 9].contains(&hit.instance) as usize;
                    // The box and the same box meet the ray at the same t: the lower
                    // instance (the same box, instance 0) takes the hit.
                    ties += (hit.instance == 0) as usize;
                    assert_ne!(hit.instance, 3, "{name}: {ray:?} ties go to instance 0");
                    let point = merged.surface_point(ray, &hit);
                    assert_eq!(point, apart.surface_point(ray, &hit), "{name}");
                }
            }
            assert!(
                hits > 300 && merged_hits > 150 && ties > 20,
                "{name}: {hits} hits, {merged_hits} merged, {ties} ties"
            );
        }
    }
}

#[test]
fn a_frame_whose_group_is_unchanged_reuses_the_merged_tree() {
    let cache = caustica::accel::MeshBuildCache::default();
    let options = PrepareOptions::default();
    let first = Prepared::build_cached(&parts_scene(), &options, &cache).unwrap();
    let again = Prepared::build_cached(&parts_scene(), &options, &cache).unwrap();
    assert_eq!(first.meshes_reused, 0);
    // The shared and the empty mesh and the two merged trees; the members have no tree to
    // reuse, and the displaced mesh's map is a new image in each scene made here.
    assert_eq!(again.meshes_reused, 4);
    assert_eq!(again.mesh_wide, first.mesh_wide);
    assert_eq!(again.merged_prims, first.merged_prims);
    // Moving one member out of its group builds its own tree and the group's again.
    let mut moved = parts_scene();
    moved.instances[1].transform = Affine3A::from_translation(Vec3::new(0.0, 3.0, 0.0));
    let next = Prepared::build_cached(&moved, &options, &cache).unwrap();
    assert_eq!(next.merged_instances, 5);
    assert_eq!(
        next.meshes_reused, 3,
        "the shifted group, the shared and the empty mesh"
    );
}

/// A two-part "file" (a sphere and a box) placed twice, a mesh placed once beside one
/// placement and once alone, and a mesh placed twice with one transform.
fn placed_twice_scene() -> caustica::scene::Scene {
    let at = |x: f32, angle: f32| {
        Affine3A::from_scale_rotation_translation(
            Vec3::splat(0.9),
            Quat::from_rotation_y(angle),
            Vec3::new(x, 0.1, -0.5),
        )
    };
    let meshes = vec![
        mesh("part sphere", uv_sphere(0.4, 16), None),
        mesh("part box", box_mesh(Vec3::new(1.2, 0.3, 0.5)), None),
        mesh("lamp", box_mesh(Vec3::new(0.1, 1.5, 0.1)), None),
        mesh("twice", uv_sphere(0.2, 8), None),
        mesh("ground", grid_quad(Vec2::new(6.0, 3.0), [4, 2]), None),
    ];
    let instances = vec![
        instance(0, 0, at(-1.5, 0.2)),
        instance(1, 1, at(-1.5, 0.2)),
        instance(2, 2, at(-1.5, 0.2)),
        instance(1, 1, at(1.5, -0.6)),
        instance(0, 0, at(1.5, -0.6)),
        instance(2, 3, at(0.0, 1.0)),
        instance(3, 4, at(0.0, 2.0)),
        instance(3, 5, at(0.0, 2.0)),
        instance(4, 6, Affine3A::IDENTITY),
    ];
    scene(meshes, instances, Vec::new())
}

#[test]
fn a_file_placed_twice_is_merged_once_and_hits_what_its_parts_apart_hit() {
    let apart = PrepareOptions {
        merge_instances: false,
        ..PrepareOptions::default()
    };
    let reference = Prepared::build(&placed_twice_scene(), &apart).unwrap();
    let (lo, hi) = reference.world_bounds();
    let mut rng = Rng::new(5);
    let rays: Vec<Ray> = (0..900)
        .map(|i| match i % 2 {
            0 => ray_from_outside(&mut rng, lo, hi),
            _ => ray_from_inside(&mut rng, lo, hi),
        })
        .collect();
    for layout in BvhLayout::ALL {
        let merged =
            Prepared::build(&placed_twice_scene(), &PrepareOptions::layout(layout)).unwrap();
        let apart = Prepared::build(
            &placed_twice_scene(),
            &PrepareOptions {
                layout,
                merge_instances: false,
                ..PrepareOptions::default()
            },
        )
        .unwrap();
        let name = layout.name();
        let merged_meshes = merged
            .meshes
            .iter()
            .filter(|m| m.flags & caustica::accel::prepared::MESH_MERGED != 0)
            .count();
        // The sphere and the box, one tree for both placements; the lamp beside one of them
        // is placed alone elsewhere, and "twice" twice by one group: both stay apart.
        assert_eq!(merged_meshes, 1, "{name}");
        assert_eq!(merged.merged_instances, 4, "{name}");
        assert_eq!(
            merged.instances.len(),
            9 + 2,
            "{name}: a record per placement"
        );
        assert_eq!(
            merged.merged_members,
            vec![0, 1, 4, 3],
            "{name}: in mesh order"
        );
        assert_eq!(merged.top_instance_refs.len(), 2 + 5, "{name}");
        let mut hits = [0usize; 9];
        for ray in &rays {
            let fast = merged.intersect(ray);
            assert_eq!(fast, apart.intersect(ray), "{name}: {ray:?}");
            assert_same_hit(ray, fast, reference.intersect_brute_force(ray));
            if let Some(h) = fast {
                hits[h.instance as usize] += 1;
            }
        }
        assert!(
            [0, 1, 3, 4].iter().all(|&i| hits[i] > 0),
            "{name}: every merged part is hit: {hits:?}"
        );
    }
}
