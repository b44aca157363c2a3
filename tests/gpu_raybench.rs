//! The benchmark's GPU traversal of primary, shadow, reflection and diffuse rays equals the CPU
//! traversal, for the QBVH, the wide and the binary layouts (the last two also with the VD-patch
//! branch compiled in), with instances merged into one tree too, and scenes with VD patches are
//! refused by the benchmark.

use caustica::accel::{BvhLayout, PrepareOptions, Prepared};
use caustica::gpu::kernel::Checks;
use caustica::gpu::raybench::{make_ray_sets, measure, MeasureOptions};
use caustica::gpu::test_context;

#[test]
fn gpu_traversal_of_every_ray_kind_equals_the_cpu_for_qbvh_wide_and_binary_layouts() {
    let Some(ctx) = test_context() else { return };
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let assets = caustica::io::AssetCache::default();
    // cornell_mcguire: the parts of one OBJ file, traced through one merged tree.
    // "placed twice": that OBJ twice, so that both placements share one merged tree.
    for name in [
        "cornell_spheres.csc",
        "bunny.csc",
        "cornell_mcguire.csc",
        "placed twice",
    ] {
        let file = if name == "placed twice" {
            let path = root.join("scenes/cornell_mcguire.csc");
            let obj = root.join("scenes/meshes/CornellBox-Original.obj");
            let text = std::fs::read_to_string(&path)
                .unwrap()
                .replace("meshes/CornellBox-Original.obj", &obj.to_string_lossy())
                .replace(
                    "instance { mesh box }",
                    "instance { mesh box scale 0.5 translate -0.5 0.5 0 }\n\
                     instance { mesh box scale 0.5 rotate 0 40 0 translate 0.5 0.5 0 }",
                );
            caustica::SceneFile::from_str(&path.to_string_lossy(), &text).unwrap()
        } else {
            caustica::load_scene(&root.join("scenes").join(name)).unwrap()
        };
        let scene = caustica::evaluate_frame(&file, 1, &assets, &Default::default()).unwrap();
        let qbvh = Prepared::build(&scene, &PrepareOptions::default()).unwrap();
        let sets = make_ray_sets(&scene, &qbvh, 160, 120);
        let build = |layout| Prepared::build(&scene, &PrepareOptions::layout(layout)).unwrap();
        let binary = build(BvhLayout::Binary);
        let wide = build(BvhLayout::Wide);
        if name == "cornell_mcguire.csc" || name == "placed twice" {
            assert!(
                qbvh.merged_instances >= 2 && wide.merged_instances == qbvh.merged_instances,
                "the OBJ's parts are merged"
            );
        }
        if name == "placed twice" {
            let merged = (wide.meshes.iter())
                .filter(|m| m.flags & caustica::accel::prepared::MESH_MERGED != 0)
                .count();
            assert_eq!(merged, 1, "one merged tree for both placements");
            assert_eq!(wide.instances.len() as u32, wide.scene_instances + 2);
        }
        for (layout, prepared, checks, with_vd_code) in [
            ("qbvh", &qbvh, Checks::Unchecked, false),
            ("binary", &binary, Checks::Checked, true),
            ("wide", &wide, Checks::Unchecked, false),
            ("wide +vd code", &wide, Checks::Checked, true),
        ] {
            let rows = measure(
                &ctx,
                &scene,
                prepared,
                &sets,
                MeasureOptions {
                    checks,
                    runs: 1,
                    with_vd_code,
                    check_every: 1,
                    defines: &[],
                    fused: false,
                },
            )
            .unwrap();
            assert_eq!(rows.len(), 4, "{name} {layout}: every ray kind is measured");
            for r in rows {
                assert!(r.rays > 0);
                // Every ray is checked. Hardware GPUs may fuse multiply-adds that the CPU rounds
                // twice, which can flip a ray that meets the shared edge of two faces (lavapipe
                // agrees on every ray). Secondary rays start a hair off a surface, often next to a
                // corner, so more of them graze edges: on the H200 about 0.5% of the reflection
                // rays of cornell_spheres pick the other face of an edge.
                let bar = if r.kind == "primary" { 0.999 } else { 0.99 };
                assert!(
                    r.agreement >= bar,
                    "{name} {layout} {}: GPU and CPU traversals agree on only {}",
                    r.kind,
                    r.agreement
                );
                assert!(r.mrays_per_s > 0.0 && r.median_ms.is_finite());
            }
        }
    }
}

#[test]
fn ray_benchmark_refuses_scenes_with_vd_patches() {
    let Some(ctx) = test_context() else { return };
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let assets = caustica::io::AssetCache::default();
    let file = caustica::load_scene(&root.join("scenes/vd_patches.csc")).unwrap();
    let scene = caustica::evaluate_frame(&file, 1, &assets, &Default::default()).unwrap();
    let prepared = Prepared::build(&scene, &PrepareOptions::default()).unwrap();
    let sets = make_ray_sets(&scene, &prepared, 16, 12);
    let options = MeasureOptions {
        checks: Checks::Checked,
        runs: 1,
        with_vd_code: true,
        check_every: 1,
        defines: &[],
        fused: false,
    };
    let err = measure(&ctx, &scene, &prepared, &sets, options).unwrap_err();
    assert!(err.to_string().contains("VD patches"), "{err}");
}

/// A scene that names no layout renders in the one each backend is fastest with
/// (docs/performance.md): the wide BVH on the GPU, the QBVH on the CPU; `film { accel }` wins.
#[test]
fn a_scene_without_accel_takes_the_wide_layout_on_the_gpu_and_the_qbvh_on_the_cpu() {
    let Some(ctx) = test_context() else { return };
    let gpu = caustica::gpu::GpuBackend::new(std::sync::Arc::new(ctx)).unwrap();
    let cpu = caustica::cpu::CpuBackend;
    let mut scene = caustica::scene::Scene::default();
    assert_eq!(caustica::layout_for(&scene, &gpu), BvhLayout::Wide);
    assert_eq!(caustica::layout_for(&scene, &cpu), BvhLayout::Qbvh);
    scene.film.accel = Some(BvhLayout::Binary);
    assert_eq!(caustica::layout_for(&scene, &gpu), BvhLayout::Binary);
    assert_eq!(caustica::layout_for(&scene, &cpu), BvhLayout::Binary);
}
