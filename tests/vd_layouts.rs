//! The ways a VD map is addressed, through files, the scene language and both renderers: UDIM
//! tiles found by their names (`<UDIM>` as Mari writes them, `<UVTILE>` as Mudbox does) and
//! per-face squares packed in one image (Ptex's addressing by face index).
//!
//! The scene is a flat 4 × 2 grid of quads, quad `(i, j)` with the UVs of UDIM tile
//! `1001 + i + 10 j`, displaced by a map whose every tile holds a bump of its own. The same
//! tiles packed as per-face squares (face `k = 4 j + i` in square `k`) are read at the same
//! parameters with the same frames, so the three scenes must render the same bits, on the CPU
//! and on the GPU, and the GPU must agree with the CPU.

mod support;

use std::path::Path;
use std::sync::Arc;

use caustica::gpu::{test_context, GpuBackend};
use caustica::io::vdgen::write_vd_image;
use caustica::io::{find_udim_tiles, AssetCache};
use caustica::render::{Backend, Frame, RenderOptions};
use caustica::scene::{Scene, VdImage, VdLayout};
use caustica::{Overrides, SceneFile};
use glam::Vec3;

/// Texels per tile side.
const N: u32 = 16;
const COLUMNS: u32 = 4;
const ROWS: u32 = 2;

/// Tile `(i, j)`'s displacement at texel `(x, y)` (row 0 at the top): a tangent-space bump, its
/// height, width and lean set by the tile, zero at the tile's border.
fn tile_texel(i: u32, j: u32, x: u32, y: u32) -> Vec3 {
    let k = (j * COLUMNS + i) as f32;
    let (s, t) = (
        (x as f32 + 0.5) / N as f32,
        1.0 - (y as f32 + 0.5) / N as f32,
    );
    let w = 16.0 * s * (1.0 - s) * t * (1.0 - t);
    let r2 = (s - 0.5).powi(2) + (t - 0.5).powi(2);
    let h = (0.15 + 0.03 * k) * (-r2 / (0.06 + 0.01 * k)).exp() * w;
    Vec3::new(0.2 * h * (k - 3.5) / 3.5, 0.0, h)
}

fn tile_image(i: u32, j: u32) -> VdImage {
    VdImage {
        width: N,
        height: N,
        texels: (0..N * N).map(|p| tile_texel(i, j, p % N, p / N)).collect(),
    }
}

/// The tiles packed as per-face squares: face `k` in column `k mod 4`, row `k div 4`.
fn packed_image() -> VdImage {
    let (w, h) = (COLUMNS * N, ROWS * N);
    let texels = (0..w * h)
        .map(|p| {
            let (x, y) = (p % w, p / w);
            let k = (y / N) * COLUMNS + x / N;
            tile_texel(k % COLUMNS, k / COLUMNS, x % N, y % N)
        })
        .collect();
    VdImage {
        width: w,
        height: h,
        texels,
    }
}

/// The grid as OBJ text: vertex `(a, b)` at `(a, 0, -b)` with UV `(a, b)`, so that quad `(i, j)`
/// covers UDIM tile `1001 + i + 10 j` and faces +Y.
fn grid_obj() -> String {
    let mut text = String::new();
    for b in 0..=ROWS {
        for a in 0..=COLUMNS {
            text += &format!("v {a} 0 {}\nvt {a} {b}\n", -(b as i32));
        }
    }
    let at = |a: u32, b: u32| b * (COLUMNS + 1) + a + 1;
    for j in 0..ROWS {
        for i in 0..COLUMNS {
            let v = [at(i, j), at(i + 1, j), at(i + 1, j + 1), at(i, j + 1)];
            text += &format!(
                "f {0}/{0} {1}/{1} {2}/{2} {3}/{3}\n",
                v[0], v[1], v[2], v[3]
            );
        }
    }
    text
}

/// Writes the grid, the tiles under both naming schemes and the packed image into `dir`.
fn write_files(dir: &Path) {
    std::fs::write(dir.join("grid.obj"), grid_obj()).unwrap();
    for j in 0..ROWS {
        for i in 0..COLUMNS {
            let image = tile_image(i, j);
            let udim = 1001 + i + 10 * j;
            write_vd_image(&dir.join(format!("mari.{udim}.exr")), &image).unwrap();
            write_vd_image(
                &dir.join(format!("mudbox_u{}_v{}.exr", i + 1, j + 1)),
                &image,
            )
            .unwrap();
        }
    }
    write_vd_image(&dir.join("faces.exr"), &packed_image()).unwrap();
}

/// The scene, its vdmap block `vdmap` (whose `file "NAME"` is taken in `dir`).
fn scene_text(dir: &Path, vdmap: &str) -> String {
    let d = dir.display();
    let vdmap = vdmap.replace("file \"", &format!("file \"{d}/"));
    format!(
        r#"
camera {{ position 2 2.6 -0.4  look_at 2 0 -1  fov 60 }}
film   {{ resolution 96 64 spp 1 sampler independent max_depth 0 vd_max_level 5 }}
material clay {{ diffuse 0.8 0.7 0.6 }}
vdmap bumps {{ {vdmap} }}
mesh grid {{ file "{d}/grid.obj" displacement bumps }}
instance {{ mesh grid material clay }}
light directional {{ direction -0.3 -1 -0.5 irradiance 2 }}
output {{ path "unused.exr" layers normal position }}
"#
    )
}

fn load(dir: &Path, vdmap: &str) -> Scene {
    let text = scene_text(dir, vdmap);
    let file = SceneFile::from_str("layouts.csc", &text).unwrap_or_else(|e| panic!("{e}"));
    let whitted = Overrides {
        integrator: Some(caustica::scene::Integrator::Whitted),
        ..Overrides::default()
    };
    caustica::evaluate_frame(&file, 1, &AssetCache::default(), &whitted)
        .unwrap_or_else(|e| panic!("{vdmap}: {e}"))
}

/// The frame's position and normal layers, as bits.
fn layers(frame: &Frame) -> Vec<u32> {
    let p = &frame.aov("P").expect("a position layer").pixels;
    let n = &frame.aov("Ns").expect("a normal layer").pixels;
    p.iter().chain(n).map(|v| v.to_bits()).collect()
}

fn render(scene: &Scene, gpu: Option<&GpuBackend>) -> Frame {
    let prepared = caustica::prepare(scene).unwrap();
    match gpu {
        Some(backend) => backend
            .render_frame(scene, &prepared, &RenderOptions::default())
            .unwrap(),
        None => caustica::cpu::render_whitted(scene, &prepared, &RenderOptions::default()),
    }
}

#[test]
fn udim_tiles_are_found_by_either_naming_scheme_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    write_files(dir.path());
    // Names that look like tiles but are not: a folder, a wrong count of digits, tile 1000.
    std::fs::create_dir(dir.path().join("mari.1020.exr")).unwrap();
    for other in [
        "mari.101.exr",
        "mari.1000.exr",
        "mari.1001.exr.bak",
        "mudbox_u0_v1.exr",
    ] {
        std::fs::write(dir.path().join(other), b"not a map").unwrap();
    }
    let expected: Vec<u32> = vec![1001, 1002, 1003, 1004, 1011, 1012, 1013, 1014];
    for pattern in ["mari.<UDIM>.exr", "mudbox_<UVTILE>.exr"] {
        let tiles = find_udim_tiles(&dir.path().join(pattern)).unwrap();
        let numbers: Vec<u32> = tiles.iter().map(|(n, _)| *n).collect();
        assert_eq!(numbers, expected, "{pattern}");
        assert!(tiles.iter().all(|(_, p)| p.is_file()));
    }
    let scene = load(dir.path(), "file \"mari.<UDIM>.exr\"");
    assert_eq!(scene.vdmaps[0].layout, VdLayout::Udim { numbers: expected });
    assert_eq!(scene.vdmaps[0].images[7].texels, tile_image(3, 1).texels);
}

#[test]
fn udim_tiles_and_per_face_squares_of_the_same_texels_render_the_same_bits_on_cpu_and_gpu() {
    let dir = tempfile::tempdir().unwrap();
    write_files(dir.path());
    let maps = [
        "file \"mari.<UDIM>.exr\"",
        "file \"mudbox_<UVTILE>.exr\"",
        "file \"faces.exr\" layout per_face tile 16",
    ];
    let scenes: Vec<Scene> = maps.iter().map(|m| load(dir.path(), m)).collect();
    let flat = {
        let mut s = scenes[0].clone();
        s.meshes[0].displacement = None;
        layers(&render(&s, None))
    };

    let cpu: Vec<Vec<u32>> = scenes.iter().map(|s| layers(&render(s, None))).collect();
    for (m, frame) in maps.iter().zip(&cpu).skip(1) {
        assert!(
            frame == &cpu[0],
            "CPU: {m} renders other bits than {}",
            maps[0]
        );
    }
    // The bumps show: most pixels that see the flat grid see another point of the bumps.
    let pixels = flat.len() / 6;
    let position = |frame: &[u32], i: usize| {
        Vec3::from_array(std::array::from_fn(|c| f32::from_bits(frame[3 * i + c])))
    };
    let on_grid: Vec<usize> = (0..pixels)
        .filter(|&i| position(&flat, i) != Vec3::ZERO)
        .collect();
    let moved = on_grid
        .iter()
        .filter(|&&i| position(&flat, i).distance(position(&cpu[0], i)) > 1e-3)
        .count();
    eprintln!(
        "{} of {pixels} pixels see the grid, {moved} of them another point when it is displaced",
        on_grid.len()
    );
    assert!(
        on_grid.len() * 2 > pixels && moved * 4 > on_grid.len() * 3,
        "only {moved} of {} pixels moved: the map does not displace the grid",
        on_grid.len()
    );

    let Some(ctx) = test_context() else {
        return;
    };
    let backend = GpuBackend::new(Arc::new(ctx)).unwrap();
    let gpu: Vec<Vec<u32>> = scenes
        .iter()
        .map(|s| layers(&render(s, Some(&backend))))
        .collect();
    for (m, frame) in maps.iter().zip(&gpu).skip(1) {
        assert!(
            frame == &gpu[0],
            "GPU: {m} renders other bits than {}",
            maps[0]
        );
    }
    // The GPU twin: positions within 1e-4 of the scene's size (4 units) on 99.5% of the pixels
    // (a ray grazing the shared edge of two cells may find the other cell).
    let (g, c) = (&gpu[0], &cpu[0]);
    let agree = (0..pixels)
        .filter(|&i| {
            (0..3).all(|k| {
                let (a, b) = (f32::from_bits(g[3 * i + k]), f32::from_bits(c[3 * i + k]));
                (a - b).abs() <= 4e-4
            })
        })
        .count();
    eprintln!("GPU vs CPU: positions agree on {agree} of {pixels} pixels");
    assert!(
        agree * 1000 >= pixels * 995,
        "GPU and CPU positions agree on only {agree} of {pixels} pixels"
    );
}

#[test]
fn quads_in_udim_tiles_without_a_file_are_named_in_one_warning_at_the_map() {
    let dir = tempfile::tempdir().unwrap();
    write_files(dir.path());
    std::fs::remove_file(dir.path().join("mari.1003.exr")).unwrap();
    std::fs::remove_file(dir.path().join("mari.1014.exr")).unwrap();
    std::fs::write(
        dir.path().join("s.csc"),
        scene_text(dir.path(), "file \"mari.<UDIM>.exr\""),
    )
    .unwrap();
    let out = support::cli::caustica(dir.path(), &["check", "s.csc"]);
    let err = support::cli::stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(
            "s.csc:5:1: 2 of the 8 quads of mesh \"grid\" lie in UDIM tiles the map has no \
             file for (1003, 1014): they are not displaced"
        ),
        "{err}"
    );
    assert_eq!(err.matches("are not displaced").count(), 1, "{err}");
}
