//! The two-level grid of paper 001 as a middle level (`--accel grid`): closest and any hits
//! equal brute force on random, camera and far-away rays under both layouts' top levels, on
//! the CPU and on the GPU (lavapipe in CI); a frame renders the bits of the default structure;
//! meshes of VD patches and spheres keep a tree; `--accel grid` and `film { accel grid }` name
//! it.

mod accel_support;

use std::sync::Arc;

use accel_support::*;
use caustica::accel::prepared::{MESH_GRID, MESH_MERGED};
use caustica::accel::{BvhBuilder, BvhLayout, PrepareOptions, Prepared, Ray};
use caustica::gpu::{test_context, GpuBackend};
use glam::Vec3;

fn grid_options(layout: BvhLayout) -> PrepareOptions {
    PrepareOptions {
        layout,
        builder: BvhBuilder::Grid,
        ..PrepareOptions::default()
    }
}

#[test]
fn two_level_grid_closest_and_any_hits_equal_brute_force_under_both_layouts_top_levels() {
    let scene = stadium_scene();
    for layout in [BvhLayout::Qbvh, BvhLayout::Wide, BvhLayout::Binary] {
        for merge_instances in [true, false] {
            let options = PrepareOptions {
                merge_instances,
                ..grid_options(layout)
            };
            let prepared = Prepared::build(&scene, &options).unwrap();
            let grids = (prepared.meshes.iter())
                .filter(|m| m.flags & MESH_GRID != 0)
                .count();
            let merged = (prepared.meshes.iter())
                .any(|m| m.flags & MESH_MERGED != 0 && m.flags & MESH_GRID != 0);
            assert_eq!(
                merged, merge_instances,
                "the pole and the lid share one grid"
            );
            assert!(grids >= 4, "{} grids", grids);
            assert!(
                prepared.prim_refs.is_empty(),
                "grids hold their own references"
            );
            let stats = prepared.stats();
            assert_eq!(stats.grids, grids as u64);
            assert!(stats.grid_references >= prepared.triangles.len() as u64 / 2);
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
fn two_level_grid_of_the_bunny_equals_brute_force_on_camera_rays() {
    assert_bunny_camera_rays_match_brute_force(&grid_options(BvhLayout::Wide));
}

#[test]
fn two_level_grid_leaves_vd_and_sphere_meshes_their_trees_and_names_the_choice() {
    assert_structure_choice("grid", BvhBuilder::Grid, MESH_GRID);
}

#[test]
fn two_level_grid_frames_render_the_bits_of_the_default_structure_on_the_cpu() {
    let cpu = caustica::cpu::CpuBackend;
    assert_frames_match_default(&cpu, PrepareOptions::default(), BvhBuilder::Grid);
}

#[test]
fn two_level_grid_gpu_frames_render_the_bits_of_the_default_structure() {
    let Some(ctx) = test_context() else { return };
    let backend = GpuBackend::new(Arc::new(ctx)).unwrap();
    let default = PrepareOptions::layout(BvhLayout::Wide);
    assert_frames_match_default(&backend, default, BvhBuilder::Grid);
}

#[test]
fn two_level_grid_gpu_traversal_of_every_ray_kind_equals_the_cpu() {
    let Some(ctx) = test_context() else { return };
    assert_gpu_traversal_matches_cpu(&ctx, BvhBuilder::Grid, MESH_GRID);
}

/// Rays that run along the grid's own cell planes, start on them, or pass through cell
/// corners: where the walk chooses between neighbouring cells by a rounding.
#[test]
fn two_level_grid_rays_along_cell_planes_and_through_corners_equal_brute_force() {
    let scene = stadium_scene();
    let prepared = Prepared::build(&scene, &grid_options(BvhLayout::Wide)).unwrap();
    let mut rng = Rng::new(5);
    let mut rays = Vec::new();
    let mut grids = 0;
    for (i, record) in prepared.instances[..prepared.scene_instances as usize]
        .iter()
        .enumerate()
    {
        let mesh = &prepared.meshes[record.mesh as usize];
        if mesh.flags & MESH_GRID == 0 {
            continue;
        }
        grids += 1;
        let w = &prepared.grid_cells[mesh.node_offset as usize..];
        let f = |k: usize| f32::from_bits(w[k]);
        let min = Vec3::new(f(0), f(1), f(2));
        let size = Vec3::ONE / Vec3::new(f(3), f(4), f(5));
        let res = Vec3::new(w[6] as f32, w[7] as f32, w[8] as f32);
        let to_world = scene.instances[i].transform;
        for _ in 0..60 {
            // A point on a top cell's corner (integer grid coordinates), and one on a leaf
            // boundary of a finely divided cell (quarters of a cell).
            let corner = Vec3::new(
                (rng.range(0.0, res.x)).floor(),
                (rng.range(0.0, res.y)).floor(),
                (rng.range(0.0, res.z)).floor(),
            );
            let quarter = (corner * 4.0 + Vec3::new(1.0, 2.0, 3.0)) / 4.0;
            for g in [corner, quarter] {
                let p = to_world.transform_point3(min + g * size);
                let axis = [Vec3::X, Vec3::Y, Vec3::Z][rng.range(0.0, 2.999) as usize];
                let diagonal = to_world.transform_vector3(size * Vec3::new(1.0, 1.0, 1.0));
                let in_plane = to_world.transform_vector3(size * Vec3::new(1.0, -1.0, 0.0));
                for dir in [axis, -axis, diagonal, -diagonal, in_plane] {
                    rays.push(Ray::new(p - dir * 3.0, dir));
                    rays.push(Ray::new(p, dir));
                }
            }
        }
    }
    assert!(grids >= 4);
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

/// A backend that builds its grids (`device_builds`) gets zeroed room of the very size of the
/// twin's grids and the boxes to build them from; meshes of trees are not listed.
#[test]
fn two_level_grid_left_to_the_device_reserves_the_twins_size_and_lists_the_meshes() {
    let scene = stadium_scene();
    let twin = Prepared::build(&scene, &grid_options(BvhLayout::Wide)).unwrap();
    let options = PrepareOptions {
        device_builds: true,
        ..grid_options(BvhLayout::Wide)
    };
    let prepared = Prepared::build(&scene, &options).unwrap();
    assert_eq!(prepared.grid_cells.len(), twin.grid_cells.len());
    assert!(prepared.grid_cells.iter().all(|&w| w == 0));
    let grids: Vec<u32> = (0..prepared.meshes.len() as u32)
        .filter(|&m| prepared.meshes[m as usize].flags & MESH_GRID != 0)
        .collect();
    let listed: Vec<u32> = prepared.device_builds.iter().map(|b| b.mesh).collect();
    assert_eq!(listed, grids);
    for build in &prepared.device_builds {
        let (mesh, built) = (
            prepared.meshes[build.mesh as usize],
            twin.meshes[build.mesh as usize],
        );
        assert_eq!(build.builder, BvhBuilder::Grid);
        assert_eq!(
            (mesh.node_offset, mesh.node_count),
            (built.node_offset, built.node_count)
        );
        assert_eq!(
            build.boxes.len() as u32,
            mesh.triangle_count + mesh.quad_count
        );
    }
}
