//! Watertight VD patches (accel::vd_seams): a closed displaced mesh, its patches at mixed
//! levels, leaks no ray fired from inside at and across its patch edges, on the CPU and the GPU,
//! for tangent-space and object-space maps. The mesh is a cube projected onto the unit sphere,
//! 6 × 3 × 3 quads, each face's vertices its own (split along the cube's edges as a UV atlas
//! splits them) with UVs into its own tile of a 3 × 2 atlas, so that neighbouring patches differ
//! in their quads' frames and, across the cube's edges, in the texels they read.
//!
//! The same mesh is displaced through each way a map can be addressed: one atlas over the UVs,
//! UDIM tiles (each cube face's UVs in a tile of its own, six images), and per-face squares
//! (one square of texels per quad, the mesh's UVs unused). In the last two, neighbouring
//! patches across a tile or square border read different images or windows, with values that
//! do not meet there.
//!
//! The rays are aimed where patches built on their own part: at points between the two sides'
//! tessellated boundaries (each built alone at its level) along every shared edge, at 63
//! fractions of it. Built alone, the patches leak some of these rays (the cracks the shared-edge
//! rule closes, measured here too so that the rays are known to find them); under the rule,
//! none may leak.

mod accel_support;
mod support;

use accel_support::{instance, mesh, scene};
use support::vd_map;

use caustica::accel::aabb::SlabRay;
use caustica::accel::vd_bottom::PatchBvh;
use caustica::accel::vd_seams::EDGE_CORNERS;
use caustica::accel::{PrepareOptions, Prepared, Ray, VdFrame};
use caustica::gpu::prims::Primitives;
use caustica::gpu::vd_batch::{
    VdBatch, VdBatchOptions, VdBatchPatch, VdBatchRay, VdBatchScene, VdTexelLayout,
};
use caustica::scene::shapes::CUBE_FACES;
use caustica::scene::{MeshData, Scene, VdImage, VdLayout, VdMap, VdSpace};
use glam::{Affine3A, Vec2, Vec3};
use std::sync::Arc;

/// Quads per cube face side.
const SIDE: u32 = 3;

/// How the test's map is addressed.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Layout {
    Atlas,
    Udim,
    PerFace,
}

/// The cube sphere: 6 faces of SIDE × SIDE quads, wound outwards, each face with vertices of
/// its own and UVs into tile `face` of a 3 × 2 atlas (inset by a texel's width), or for
/// `Layout::Udim` into UDIM tile `1001 + face % 3 + 10 · (face / 3)`.
fn cube_sphere(layout: Layout) -> MeshData {
    let mut m = MeshData::default();
    for (f, (n, u, v)) in CUBE_FACES.iter().enumerate() {
        let base = m.positions.len() as u32;
        let tile = Vec2::new((f % 3) as f32, (f / 3) as f32);
        for j in 0..=SIDE {
            for i in 0..=SIDE {
                let (a, b) = (i as f32 / SIDE as f32, j as f32 / SIDE as f32);
                // From whole numbers, so that a vertex on a cube edge has the same bits in
                // every face it belongs to (as the vertices of one OBJ `v` split by UVs do).
                let whole = *n * SIDE as f32
                    + *u * (2 * i as i32 - SIDE as i32) as f32
                    + *v * (2 * j as i32 - SIDE as i32) as f32;
                m.positions.push(whole.normalize());
                let inset = Vec2::splat(0.05) + Vec2::new(a, b) * 0.9;
                m.uvs.push(match layout {
                    Layout::Udim => tile + inset,
                    _ => (tile + inset) / Vec2::new(3.0, 2.0),
                });
            }
        }
        let at = |i: u32, j: u32| base + j * (SIDE + 1) + i;
        for j in 0..SIDE {
            for i in 0..SIDE {
                m.quads
                    .push([at(i, j), at(i + 1, j), at(i + 1, j + 1), at(i, j + 1)]);
            }
        }
    }
    m.validate().unwrap();
    m
}

/// Waves over the whole atlas: outward in tangent space with a sideways part (so that the
/// quads' frames matter), or a field of vectors in object space.
/// For `Layout::Udim`, six 32 × 32 tiles, each with the waves shifted by its face; for
/// `Layout::PerFace`, squares of 8 × 8 texels, 9 to a row, one per quad.
fn waves(w: u32, h: u32, shift: f32) -> Arc<VdImage> {
    let texels = (0..w * h)
        .map(|k| {
            let (x, y) = ((k % w) as f32 / w as f32, (k / w) as f32 / h as f32);
            let (x, y) = (x + shift * 0.37, y + shift * 0.11);
            let s = (x * 23.0).sin() * (y * 17.0).cos();
            let c = (x * 11.0 + y * 7.0).cos();
            Vec3::new(0.04 * c, 0.03 * s, 0.05 + 0.04 * s * c)
        })
        .collect();
    Arc::new(VdImage {
        width: w,
        height: h,
        texels,
    })
}

fn map(space: VdSpace, layout: Layout) -> VdMap {
    let mut map = vd_map((*waves(96, 64, 0.0)).clone(), space, 0.0);
    match layout {
        Layout::Atlas => {}
        Layout::Udim => {
            map.images = (0..6).map(|f| waves(32, 32, f as f32)).collect();
            map.layout = VdLayout::Udim {
                numbers: (0..6).map(|f| 1001 + f % 3 + 10 * (f / 3)).collect(),
            };
        }
        Layout::PerFace => {
            map.images = vec![waves(9 * 8, 6 * 8, 0.0)];
            map.layout = VdLayout::PerFace { tile: 8 };
        }
    }
    map
}

fn displaced_scene(space: VdSpace, layout: Layout) -> Scene {
    scene(
        vec![mesh("ball", cube_sphere(layout), Some(0))],
        vec![instance(0, 0, Affine3A::IDENTITY)],
        vec![map(space, layout)],
    )
}

/// Mixed levels: 1 to 4, neighbours mostly different.
fn mixed_levels(patches: usize) -> Vec<u32> {
    (0..patches)
        .map(|p| 1 + (p as u32 * 7 + p as u32 / 3) % 4)
        .collect()
}

/// The point at fraction `f` along edge `e` of a patch tree's tessellated boundary.
fn boundary_at(tree: &PatchBvh, e: usize, f: f32) -> Vec3 {
    let n = tree.resolution();
    let row = n + 1;
    let grid = |k: u32| {
        let (i, j) = match e {
            0 => (k, 0),
            1 => (n, k),
            2 => (k, n),
            _ => (0, k),
        };
        tree.points[(j * row + i) as usize]
    };
    let t = f * n as f32;
    let k = (t.floor() as u32).min(n - 1);
    grid(k).lerp(grid(k + 1), t - k as f32)
}

/// The aim points between the two sides of every shared edge (each side built alone), and the
/// patches built alone.
fn aims_at_shared_edges(prepared: &Prepared, levels: &[u32]) -> (Vec<Vec3>, Vec<PatchBvh>) {
    let alone: Vec<PatchBvh> = (0..prepared.vd_patches.len() as u32)
        .map(|p| {
            let (corners, uvs, map) = prepared.vd_patch_geometry(p);
            PatchBvh::build(&corners, &uvs, map, levels[p as usize])
        })
        .collect();
    let mut aims = Vec::new();
    for (p, seams) in prepared.vd_seams.iter().enumerate() {
        for e in 0..EDGE_CORNERS.len() {
            let owner = seams.edge_owner[e] as usize;
            if owner == p {
                continue;
            }
            let (owner_edge, reversed) = seams.owner_edge(e);
            for k in 1..64 {
                let f = k as f32 / 64.0;
                let here = boundary_at(&alone[p], e, f);
                let there = boundary_at(
                    &alone[owner],
                    owner_edge,
                    if reversed { 1.0 - f } else { f },
                );
                for w in [0.0, 0.25, 0.5, 0.75, 1.0] {
                    aims.push(here.lerp(there, w));
                }
            }
        }
    }
    (aims, alone)
}

/// Rays from the centre (inside the closed surface) that hit none of the patches built alone.
fn leaks_alone(alone: &[PatchBvh], aims: &[Vec3]) -> usize {
    aims.iter()
        .filter(|&&aim| {
            alone.iter().all(|tree| {
                tree.intersect(Vec3::ZERO, aim, 0.0, f32::INFINITY)
                    .is_none()
            })
        })
        .count()
}

fn check_cpu(space: VdSpace, layout: Layout) {
    let s = displaced_scene(space, layout);
    let prepared = Prepared::build(&s, &PrepareOptions::default()).unwrap();
    assert_eq!(prepared.vd_patches.len(), 54);
    // Every patch reads texels, from as many windows as the layout has tiles or squares.
    let mut windows = Vec::new();
    for p in 0..54 {
        let (_, _, surface) = prepared.vd_patch_geometry(p);
        let w = surface.window;
        assert!(!w.is_empty(), "patch {p} reads no texels");
        let key = (w.image as *const VdImage, w.x0, w.y0);
        if !windows.contains(&key) {
            windows.push(key);
        }
    }
    let expected = match layout {
        Layout::Atlas => 1,
        Layout::Udim => 6,
        Layout::PerFace => 54,
    };
    assert_eq!(windows.len(), expected, "windows of the {layout:?} map");
    let levels = mixed_levels(54);
    let (aims, alone) = aims_at_shared_edges(&prepared, &levels);
    let frame = VdFrame::new(levels);
    let leaks = aims
        .iter()
        .filter(|&&aim| {
            prepared
                .intersect_in(&frame, &Ray::new(Vec3::ZERO, aim))
                .is_none()
        })
        .count();
    let before = leaks_alone(&alone, &aims);
    eprintln!(
        "{space:?} {layout:?} map, CPU: {} rays at shared edges: {leaks} leak under the shared-edge rule, \
         {before} between patches built alone",
        aims.len()
    );
    assert!(
        before > 0,
        "the rays find the cracks of patches built alone"
    );
    assert_eq!(leaks, 0, "rays leak through the displaced surface");
}

fn check_gpu(space: VdSpace, layout: Layout) {
    let Some(ctx) = caustica::gpu::test_context() else {
        return;
    };
    let s = displaced_scene(space, layout);
    let prepared = Prepared::build(&s, &PrepareOptions::default()).unwrap();
    let levels = mixed_levels(prepared.vd_patches.len());
    let edge_levels = prepared.vd_edge_levels(&levels);
    let (aims, _) = aims_at_shared_edges(&prepared, &levels);
    let maps: Vec<&VdMap> = prepared.vd_maps.iter().collect();
    let texels = VdTexelLayout::of(&maps).unwrap();
    let patches = VdBatchPatch::all_of(&prepared, &texels).unwrap();
    let scene = VdBatchScene::upload(
        &ctx,
        &patches,
        &maps,
        Some((&prepared.vd_seams, prepared.vd_edge_count)),
    )
    .unwrap();
    let mut rays = Vec::new();
    let mut records = Vec::new();
    for (i, aim) in aims.iter().enumerate() {
        let slab = SlabRay::new(Vec3::ZERO, *aim);
        for (p, record) in prepared.vd_patches.iter().enumerate() {
            if slab
                .entry_box(&record.bounds(), 0.0, f32::INFINITY)
                .is_some()
            {
                records.push((p as u32, i as u32));
            }
        }
        rays.push(VdBatchRay {
            origin: [0.0; 3],
            t_max: f32::INFINITY,
            dir: aim.to_array(),
            hit: i as u32,
            ..Default::default()
        });
    }
    let batch = VdBatch::new(&ctx, VdBatchOptions::for_context(&ctx, 4)).unwrap();
    let prims = Primitives::new(&ctx).unwrap();
    let result = batch
        .trace_vec(
            &ctx,
            &prims,
            &scene,
            &rays,
            &records,
            rays.len() as u32,
            Some((&levels, &edge_levels)),
        )
        .unwrap();
    let leaks = result.hits.iter().filter(|h| h.is_none()).count();
    eprintln!(
        "{space:?} {layout:?} map, GPU: {} rays at shared edges: {leaks} leak under the shared-edge rule",
        rays.len()
    );
    assert_eq!(
        leaks, 0,
        "rays leak through the displaced surface on the GPU"
    );
    // Built at the levels given, edges at theirs: the CPU twin's hits.
    let frame = VdFrame::new(levels);
    let mut differ = 0;
    for (aim, hit) in aims.iter().zip(&result.hits) {
        let cpu = prepared.intersect_in(&frame, &Ray::new(Vec3::ZERO, *aim));
        let (Some(cpu), Some(gpu)) = (cpu, hit) else {
            continue;
        };
        differ += ((cpu.t - gpu.t).abs() > 1e-4 * cpu.t) as usize;
    }
    assert!(
        differ * 200 <= rays.len(),
        "{differ} of {} hits differ from the CPU twin's",
        rays.len()
    );
}

#[test]
fn watertight_tangent_space_patches_at_mixed_levels_leak_no_ray_on_the_cpu() {
    check_cpu(VdSpace::Tangent, Layout::Atlas);
}

#[test]
fn watertight_tangent_space_patches_at_mixed_levels_leak_no_ray_on_the_gpu() {
    check_gpu(VdSpace::Tangent, Layout::Atlas);
}

#[test]
fn watertight_object_space_patches_at_mixed_levels_leak_no_ray_on_the_cpu() {
    check_cpu(VdSpace::Object, Layout::Atlas);
}

#[test]
fn watertight_object_space_patches_at_mixed_levels_leak_no_ray_on_the_gpu() {
    check_gpu(VdSpace::Object, Layout::Atlas);
}

#[test]
fn watertight_udim_tangent_space_patches_at_mixed_levels_leak_no_ray_on_the_cpu() {
    check_cpu(VdSpace::Tangent, Layout::Udim);
}

#[test]
fn watertight_udim_tangent_space_patches_at_mixed_levels_leak_no_ray_on_the_gpu() {
    check_gpu(VdSpace::Tangent, Layout::Udim);
}

#[test]
fn watertight_udim_object_space_patches_at_mixed_levels_leak_no_ray_on_the_cpu() {
    check_cpu(VdSpace::Object, Layout::Udim);
}

#[test]
fn watertight_udim_object_space_patches_at_mixed_levels_leak_no_ray_on_the_gpu() {
    check_gpu(VdSpace::Object, Layout::Udim);
}

#[test]
fn watertight_per_face_tangent_space_patches_at_mixed_levels_leak_no_ray_on_the_cpu() {
    check_cpu(VdSpace::Tangent, Layout::PerFace);
}

#[test]
fn watertight_per_face_tangent_space_patches_at_mixed_levels_leak_no_ray_on_the_gpu() {
    check_gpu(VdSpace::Tangent, Layout::PerFace);
}

#[test]
fn watertight_per_face_object_space_patches_at_mixed_levels_leak_no_ray_on_the_cpu() {
    check_cpu(VdSpace::Object, Layout::PerFace);
}

#[test]
fn watertight_per_face_object_space_patches_at_mixed_levels_leak_no_ray_on_the_gpu() {
    check_gpu(VdSpace::Object, Layout::PerFace);
}
