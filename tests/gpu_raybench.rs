//! The benchmark's GPU traversal of primary, shadow, reflection and diffuse rays equals the CPU
//! traversal, for the QBVH and for the binary layout.

use caustica::accel::{PrepareOptions, Prepared};
use caustica::gpu::kernel::Checks;
use caustica::gpu::raybench::{make_ray_sets, measure};
use caustica::gpu::test_context;

#[test]
fn gpu_traversal_of_every_ray_kind_equals_the_cpu_for_qbvh_and_binary_layouts() {
    let Some(ctx) = test_context() else { return };
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let assets = caustica::io::AssetCache::default();
    for name in ["cornell_spheres.csc", "bunny.csc", "vd_patches.csc"] {
        let file = caustica::load_scene(&root.join("scenes").join(name)).unwrap();
        let scene = caustica::evaluate_frame(&file, 1, &assets, &Default::default()).unwrap();
        let qbvh = Prepared::build(&scene, &PrepareOptions::default()).unwrap();
        let sets = make_ray_sets(&scene, &qbvh, 96, 72);
        let binary = Prepared::build(
            &scene,
            &PrepareOptions {
                branching: 2,
                ..Default::default()
            },
        )
        .unwrap();
        for (layout, prepared, checks) in [
            ("qbvh", &qbvh, Checks::Unchecked),
            ("binary", &binary, Checks::Checked),
        ] {
            let rows = measure(&ctx, &scene, prepared, &sets, checks, 1, false).unwrap();
            assert_eq!(rows.len(), 4, "{name} {layout}: every ray kind is measured");
            for r in rows {
                assert!(r.rays > 0);
                assert_eq!(
                    r.agreement, 1.0,
                    "{name} {layout} {}: GPU and CPU traversals differ",
                    r.kind
                );
                assert!(r.mrays_per_s > 0.0 && r.median_ms.is_finite());
            }
        }
    }
}
