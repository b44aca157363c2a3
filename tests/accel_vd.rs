//! VD patches in the hierarchy: conservative bounds, the bottom level against flat quads, bumps
//! and the cell-by-cell oracle.

mod accel_support;

use std::path::PathBuf;
use std::sync::Arc;

use accel_support::*;
use caustica::accel::{PrepareOptions, Prepared, Ray, VdFrame};
use caustica::scene::shapes::grid_quad;
use caustica::scene::{Span, VdImage, VdMap, VdSpace};
use glam::{Affine3A, Quat, Vec2, Vec3};

fn map(space: VdSpace, width: u32, height: u32, texel: impl Fn(f32, f32) -> Vec3) -> VdMap {
    let texels = (0..width * height)
        .map(|i| {
            // Texel centre in UV (v up, row 0 at the top).
            let u = ((i % width) as f32 + 0.5) / width as f32;
            let v = 1.0 - ((i / width) as f32 + 0.5) / height as f32;
            texel(u, v)
        })
        .collect();
    VdMap {
        name: "test".into(),
        path: PathBuf::new(),
        images: vec![Arc::new(VdImage {
            width,
            height,
            texels,
        })],
        layout: caustica::scene::VdLayout::Uv,
        space,
        channels: [0, 1, 2],
        scale: 1.0,
        midlevel: 0.0,
        padding: 0.0,
        span: Span::NONE,
    }
}

/// A raised, slightly swirling bump in the middle of the UV square (tangent space).
fn bump_map() -> VdMap {
    map(VdSpace::Tangent, 32, 32, |u, v| {
        let r2 = (u - 0.5).powi(2) + (v - 0.5).powi(2);
        let h = 0.6 * (-r2 / 0.02).exp();
        Vec3::new(0.3 * h * (v - 0.5), -0.3 * h * (u - 0.5), h)
    })
}

#[test]
fn patch_bounds_contain_every_displaced_grid_point() {
    let tilted = Affine3A::from_rotation_translation(Quat::from_rotation_x(0.4), Vec3::ZERO);
    let mut ground = grid_quad(Vec2::new(2.0, 2.0), [3, 2]);
    for p in &mut ground.positions {
        *p = tilted.transform_point3(*p) + Vec3::new(0.0, 0.1 * p.x * p.x, 0.0);
        // non-planar quads
    }
    let maps = vec![
        bump_map(),
        map(VdSpace::Object, 8, 8, |u, v| {
            Vec3::new(u - 0.5, 0.2 * v, -0.3 * u * v)
        }),
    ];
    for (m, vd) in maps.into_iter().enumerate() {
        let s = scene(
            vec![mesh("ground", ground.clone(), Some(0))],
            vec![instance(0, 0, Affine3A::IDENTITY)],
            vec![vd],
        );
        let prepared = Prepared::build(&s, &PrepareOptions::default()).unwrap();
        assert_eq!(prepared.vd_patches.len(), 6);
        let map = &s.vdmaps[0];
        // Mixed levels: the finer edges' points (from a neighbour's surface) stay inside too.
        let levels: Vec<u32> = (0..6).map(|q| 2 + q % 3).collect();
        let edge_levels = prepared.vd_edge_levels(&levels);
        for (q, patch) in prepared.vd_patches.iter().enumerate() {
            let bounds = patch.bounds();
            let tree = prepared.build_patch_tree(q as u32, &levels, &edge_levels);
            for p in tree.points.iter().chain(tree.edges.points.iter().flatten()) {
                assert!(
                    bounds.contains_point(*p),
                    "map {m}, patch {q}: {p:?} outside {bounds:?}"
                );
            }
            // Also between the grid points, on the exact displaced surface.
            let (corners, uvs) = (ground.quad_corners(q), ground.quad_uvs(q));
            for i in 0..=40 {
                for j in 0..=40 {
                    let p = map.whole().displaced_point(
                        &corners,
                        &uvs,
                        i as f32 / 40.0,
                        j as f32 / 40.0,
                    );
                    assert!(
                        bounds.expanded(1e-5).contains_point(p),
                        "map {m}, patch {q}: {p} outside {bounds:?}"
                    );
                }
            }
            // The tree's root is the tight box of its grid, inside the conservative one.
            assert!(bounds.contains_box(&tree.root));
        }
    }
}

#[test]
fn flat_map_gives_the_same_hits_as_the_plain_quads() {
    let ground = grid_quad(Vec2::new(2.0, 2.0), [3, 2]);
    let flat = map(VdSpace::Tangent, 4, 4, |_, _| Vec3::ZERO);
    let transform = Affine3A::from_scale_rotation_translation(
        Vec3::new(1.0, 2.0, 0.5),
        Quat::from_rotation_z(0.3),
        Vec3::ONE,
    );
    let plain = scene(
        vec![mesh("g", ground.clone(), None)],
        vec![instance(0, 0, transform)],
        vec![],
    );
    let displaced = scene(
        vec![mesh("g", ground, Some(0))],
        vec![instance(0, 0, transform)],
        vec![flat],
    );
    let plain = Prepared::build(&plain, &PrepareOptions::default()).unwrap();
    let displaced = Prepared::build(&displaced, &PrepareOptions::default()).unwrap();
    let (lo, hi) = plain.world_bounds();
    let mut rng = Rng::new(21);
    let mut hits = 0;
    for _ in 0..2000 {
        let ray = ray_from_outside(&mut rng, lo - Vec3::splat(0.1), hi + Vec3::splat(0.1));
        let (a, b) = (plain.intersect(&ray), displaced.intersect(&ray));
        assert_eq!(a.is_some(), b.is_some(), "{ray:?}: {a:?} vs {b:?}");
        let (Some(a), Some(b)) = (a, b) else { continue };
        hits += 1;
        assert_eq!((a.instance, a.prim), (b.instance, b.prim));
        assert!((a.t - b.t).abs() <= 1e-4 * a.t, "{a:?} vs {b:?}");
        assert!((a.st - b.st).length() < 1e-3, "{a:?} vs {b:?}");
        let (sa, sb) = (
            plain.surface_point(&ray, &a),
            displaced.surface_point(&ray, &b),
        );
        assert!((sa.position - sb.position).length() < 1e-4);
        assert!(sa.geometric_normal.dot(sb.geometric_normal) > 0.9999);
        assert!((sa.uv - sb.uv).length() < 1e-3);
    }
    assert!(hits > 500, "{hits}");
}

#[test]
fn bump_is_hit_at_its_displaced_height() {
    let ground = grid_quad(Vec2::new(2.0, 2.0), [1, 1]);
    let vd = bump_map();
    let peak = vd.whole().displacement(Vec2::splat(0.5)).z;
    let s = scene(
        vec![mesh("g", ground, Some(0))],
        vec![instance(0, 0, Affine3A::IDENTITY)],
        vec![vd],
    );
    let prepared = Prepared::build(&s, &PrepareOptions::default()).unwrap();
    // 32 × 32 cells.
    let vd = VdFrame::new(vec![5]);

    // Straight down onto the top of the bump.
    let down = Ray::new(Vec3::new(0.0, 5.0, 0.0), Vec3::NEG_Y);
    let hit = prepared
        .intersect_in(&vd, &down)
        .expect("the bump's top is hit");
    assert!(
        (down.at(hit.t).y - peak).abs() < 1e-3,
        "hit at {} but the peak is {peak}",
        down.at(hit.t).y
    );
    assert!((hit.st - Vec2::splat(0.5)).length() < 1e-3);
    let sp = prepared.surface_point(&down, &hit);
    // The facet at the summit vertex leans by the bump's slope over one cell, but faces up.
    assert!(
        sp.geometric_normal.y > 0.8,
        "the top faces up: {}",
        sp.geometric_normal
    );
    assert!((sp.uv - Vec2::splat(0.5)).length() < 1e-3);

    // Far from the bump the surface is (almost) flat.
    let edge = Ray::new(Vec3::new(0.9, 5.0, 0.9), Vec3::NEG_Y);
    assert!(
        edge.at(prepared.intersect_in(&vd, &edge).unwrap().t)
            .y
            .abs()
            < 1e-3
    );

    // Sideways at half the bump's height: a flat quad would be missed, the bump's flank is hit
    // before the centre line and faces the ray.
    let side = Ray::new(Vec3::new(-3.0, peak * 0.5, 0.0), Vec3::X);
    let hit = prepared
        .intersect_in(&vd, &side)
        .expect("the bump's flank is hit");
    let x = side.at(hit.t).x;
    assert!(x > -0.5 && x < 0.0, "flank at x = {x}");
    assert!(prepared.surface_point(&side, &hit).geometric_normal.x < 0.0);
    assert!(prepared.occluded_in(&vd, &side));
}

#[test]
fn patch_tree_hits_equal_cell_by_cell_hits() {
    let ground = grid_quad(Vec2::new(2.0, 2.0), [2, 2]);
    let s = scene(
        vec![mesh("g", ground, Some(0))],
        vec![
            instance(0, 0, Affine3A::IDENTITY),
            instance(
                0,
                1,
                Affine3A::from_scale_rotation_translation(
                    Vec3::new(0.5, 2.0, 1.0),
                    Quat::from_rotation_x(1.2),
                    Vec3::Y,
                ),
            ),
        ],
        vec![bump_map()],
    );
    let prepared = Prepared::build(&s, &PrepareOptions::default()).unwrap();
    let (lo, hi) = prepared.world_bounds();
    let mut rng = Rng::new(31);
    let mut hits = 0;
    for i in 0..1500 {
        let ray = if i % 2 == 0 {
            ray_from_outside(&mut rng, lo, hi)
        } else {
            ray_from_inside(&mut rng, lo, hi)
        };
        hits += assert_matches_brute_force(&prepared, &ray) as usize;
        assert_eq!(prepared.occluded(&ray), prepared.intersect(&ray).is_some());
    }
    assert!(hits > 300, "{hits}");
}
