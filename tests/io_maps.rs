//! Images in: VD maps and textures load with the right size and values; the generated maps behave as documented.

mod support;

use support::shared_asset;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use caustica::io::{load_texture, load_vd_image, vdgen, AssetCache};
use caustica::scene::{AssetLoader, VdMap};
use glam::{Vec2, Vec3};

fn tangent_map(image: caustica::scene::VdImage) -> VdMap {
    VdMap::atlas("generated", Arc::new(image))
}

const UNIT_QUAD: [Vec3; 4] = [Vec3::ZERO, Vec3::X, Vec3::new(1.0, 1.0, 0.0), Vec3::Y];
const UNIT_UVS: [Vec2; 4] = [Vec2::ZERO, Vec2::X, Vec2::ONE, Vec2::Y];

#[test]
fn the_teapot_vd_map_has_520_by_260_texels() {
    let Some(path) = shared_asset("displacement/bezier_teaset_vdm/teapot_vdm_object.exr") else {
        return;
    };
    let image = load_vd_image(&path).unwrap();
    assert_eq!((image.width, image.height), (520, 260));
    assert_eq!(image.texels.len(), 520 * 260);
    let largest = image
        .texels
        .iter()
        .map(|t| t.abs().max_element())
        .fold(0.0, f32::max);
    // teapot_vdm.json: max_abs_object_disp 0.6226.
    assert!(
        (largest - 0.6226).abs() < 1e-3,
        "largest component {largest}"
    );
}

#[test]
fn the_generated_overhang_map_folds_the_surface_back_over_itself() {
    let map = tangent_map(vdgen::overhang(64));
    let steps = 256;
    let s_positions: Vec<f32> = (0..=steps)
        .map(|i| {
            map.whole()
                .displaced_point(&UNIT_QUAD, &UNIT_UVS, i as f32 / steps as f32, 0.5)
                .x
        })
        .collect();
    let folds = s_positions.windows(2).filter(|w| w[1] < w[0]).count();
    assert!(
        folds > 0,
        "the displaced s positions never go backwards: no overhang"
    );
    // And the middle is lifted well above the base quad.
    assert!(
        map.whole()
            .displaced_point(&UNIT_QUAD, &UNIT_UVS, 0.5, 0.5)
            .z
            > 0.25
    );
}

#[test]
fn the_ripples_map_moves_points_sideways_as_well_as_up() {
    let map = tangent_map(vdgen::ripples(64));
    let sideways = (0..64)
        .map(|i| {
            map.whole()
                .displacement(Vec2::new(0.5 + i as f32 / 160.0, 0.5))
                .x
                .abs()
        })
        .fold(0.0, f32::max);
    assert!(sideways > 0.01, "largest sideways displacement {sideways}");
}

#[test]
fn a_written_vd_image_reads_back_exactly_and_stays_small() {
    let dir = tempfile::tempdir().unwrap();
    for kind in vdgen::KINDS {
        let image = vdgen::generate(kind, 64).unwrap();
        let path = dir.path().join(format!("maps/{kind}.exr"));
        vdgen::write_vd_image(&path, &image).unwrap();
        assert_eq!(load_vd_image(&path).unwrap(), image);
        let bytes = std::fs::metadata(&path).unwrap().len();
        assert!(bytes < 100_000, "{kind}: {bytes} bytes");
    }
}

#[test]
fn the_committed_maps_match_the_generator() {
    for kind in vdgen::KINDS {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("scenes/maps/{kind}.exr"));
        let stored = load_vd_image(&path).unwrap();
        let generated = vdgen::generate(kind, 64).unwrap();
        assert_eq!((stored.width, stored.height), (64, 64));
        // Allow for last-bit differences between the platforms' sin and cos.
        let largest_difference = stored
            .texels
            .iter()
            .zip(&generated.texels)
            .map(|(a, b)| (*a - *b).abs().max_element())
            .fold(0.0, f32::max);
        assert!(
            largest_difference < 1e-6,
            "{kind}: differs by {largest_difference}; run make_vdmap again"
        );
    }
}

#[test]
fn png_textures_are_decoded_from_srgb_to_linear() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.png");
    let mut png = image::RgbImage::new(2, 1);
    png.put_pixel(0, 0, image::Rgb([188, 0, 255]));
    png.put_pixel(1, 0, image::Rgb([255, 255, 255]));
    png.save(&path).unwrap();
    let texture = load_texture(&path).unwrap();
    assert_eq!((texture.width, texture.height), (2, 1));
    assert!((texture.texels[0].x - 0.5029).abs() < 1e-3);
    assert_eq!(texture.texels[0].y, 0.0);
    assert!((texture.texels[1] - Vec3::ONE).length() < 1e-6);
}

#[test]
fn exr_textures_are_taken_as_linear() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.exr");
    let image = caustica::scene::VdImage {
        width: 1,
        height: 2,
        texels: vec![Vec3::new(0.5, 2.0, -1.0), Vec3::ZERO],
    };
    vdgen::write_vd_image(&path, &image).unwrap();
    let texture = load_texture(&path).unwrap();
    assert_eq!(texture.texels, image.texels);
}

#[test]
fn the_asset_cache_shares_textures_and_reports_bad_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("map.exr");
    vdgen::write_vd_image(&path, &vdgen::ripples(8)).unwrap();
    let cache = AssetCache::new();
    let a = cache.load_vd_image(&path).unwrap();
    let b = cache.load_vd_image(&path).unwrap();
    assert!(Arc::ptr_eq(&a, &b));
    let not_exr = dir.path().join("map.png");
    std::fs::write(&not_exr, b"plain text").unwrap();
    assert!(cache
        .load_vd_image(&not_exr)
        .unwrap_err()
        .contains("not an OpenEXR file"));
    assert!(!cache.load_texture(&not_exr).unwrap_err().is_empty());
}

/// A 4×2 Radiance HDR file of `texels` (rows from the top) in `dir`.
fn write_hdr(dir: &Path, texels: &[Vec3]) -> PathBuf {
    let path = dir.join("sky.hdr");
    let file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    let pixels: Vec<image::Rgb<f32>> = texels.iter().map(|c| image::Rgb(c.to_array())).collect();
    image::codecs::hdr::HdrEncoder::new(file)
        .encode(&pixels, 4, 2)
        .unwrap();
    path
}

#[test]
fn a_radiance_hdr_file_loads_as_linear_values_above_one() {
    let dir = tempfile::tempdir().unwrap();
    // Values the shared-exponent format holds exactly; sRGB decoding would make 3.5 into 18.5.
    let texels: Vec<Vec3> = (0..8)
        .map(|i| Vec3::new(3.5, 2.0, 0.25) * (1 + i % 2) as f32)
        .collect();
    let path = write_hdr(dir.path(), &texels);
    let image = load_texture(&path).unwrap();
    assert_eq!((image.width, image.height), (4, 2));
    assert_eq!(image.texels, texels);
    // The asset cache builds the environment map's sampling distribution from it once.
    let cache = AssetCache::new();
    let map = cache.load_environment(&path).unwrap();
    assert!(Arc::ptr_eq(&map, &cache.load_environment(&path).unwrap()));
    assert_eq!(map.texels, texels);
    assert_eq!(*map.marginal.last().unwrap(), 1.0);
}

/// A 4 × 4 EXR whose header is edited to claim 60001 × 60001 pixels (its data window), over
/// the 16 pixels of data it holds: textures, VD maps and `compare`'s images refuse it from its
/// header, naming the size, before any pixel is allocated (issue 15: it used to exhaust memory).
#[test]
fn an_exr_header_claiming_more_pixels_than_the_file_holds_is_refused_before_reading() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("liar.exr");
    exr::prelude::write_rgb_file(&path, 4, 4, |_, _| (0.5f32, 0.5f32, 0.5f32)).unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    let key = b"dataWindow\0box2i\0";
    let at = bytes
        .windows(key.len())
        .position(|w| w == key)
        .expect("a data window attribute")
        + key.len()
        + 4; // the attribute's size
    for (i, v) in [0i32, 0, 60000, 60000].iter().enumerate() {
        bytes[at + 4 * i..at + 4 * i + 4].copy_from_slice(&v.to_le_bytes());
    }
    std::fs::write(&path, &bytes).unwrap();
    let expected =
        "EXR: the header claims 60001x60001 pixels, more than the 268435456 an image may have";
    for error in [
        load_texture(&path).unwrap_err().to_string(),
        load_vd_image(&path).unwrap_err().to_string(),
        caustica::io::read_frame(&path).unwrap_err().to_string(),
    ] {
        assert!(error.contains(expected), "{error}");
    }
    // Within the pixel limit but beyond what 1100:1 compression could give the file's bytes.
    for (i, v) in [0i32, 0, 9999, 9999].iter().enumerate() {
        bytes[at + 4 * i..at + 4 * i + 4].copy_from_slice(&v.to_le_bytes());
    }
    std::fs::write(&path, &bytes).unwrap();
    let error = load_texture(&path).unwrap_err().to_string();
    assert!(
        error.contains("EXR: the header claims 10000x10000 pixels (1200000000 bytes of samples), more than a file of"),
        "{error}"
    );
}
