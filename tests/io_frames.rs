//! EXR and PNG out: frames round-trip exactly through `write_frame`/`read_frame`, writes are atomic, previews are sRGB.

use std::path::Path;

use caustica::io::{encode_srgb8, read_frame, write_frame, write_preview_png};
use caustica::render::stats::{GatherStats, WhittedStats};
use caustica::render::{Frame, FrameMetadata, FrameStats, Layer};
use glam::Vec3;

/// A 5x3 frame with colour, albedo, normal and depth (one pixel missed: infinite depth).
fn test_frame() -> Frame {
    let (width, height) = (5u32, 3u32);
    let n = (width * height) as usize;
    let color: Vec<Vec3> = (0..n)
        .map(|i| Vec3::new(i as f32 * 0.1, 1.0 / (i as f32 + 1.0), 100.0 - i as f32))
        .collect();
    let albedo: Vec<Vec3> = (0..n).map(|i| Vec3::splat(i as f32 / n as f32)).collect();
    let normal: Vec<Vec3> = (0..n)
        .map(|i| Vec3::new((i as f32).sin(), (i as f32).cos(), -0.25).normalize())
        .collect();
    let mut depth: Vec<f32> = (0..n).map(|i| 1.5 + i as f32 * 0.01).collect();
    depth[7] = f32::INFINITY;
    Frame {
        width,
        height,
        color,
        aovs: vec![
            Layer::rgb("albedo", &albedo),
            Layer::from_vec3("normal", ["X", "Y", "Z"], &normal),
            Layer::scalar("depth", "Z", &depth),
        ],
        metadata: FrameMetadata {
            frame: 42,
            time: 1.75,
            render_seconds: 12.345678901,
            build_seconds: 0.125,
            spp: 16,
            camera_position: Vec3::new(1.0, 2.0, 3.0),
            camera_look_at: Vec3::new(0.0, 0.5, 0.0),
            camera_up: Vec3::Y,
            camera_fov_deg: 38.5,
            device: "cpu".into(),
            // Figures read back from a header are known by name only.
            stats: FrameStats {
                named: vec![
                    ("rays/primary".into(), 240.0),
                    ("bvh/nodes".into(), 1e9 + 0.5),
                ],
                ..Default::default()
            },
        },
    }
}

fn no_temporary_files_in(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .unwrap()
        .all(|e| !e.unwrap().file_name().to_string_lossy().contains(".tmp-"))
}

#[test]
fn a_frame_round_trips_exactly_through_exr() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shot_0042.exr");
    let frame = test_frame();
    write_frame(&path, &frame).unwrap();
    let back = read_frame(&path).unwrap();
    assert_eq!(back, frame);
    assert_eq!(back.aov("depth").unwrap().pixels[7], f32::INFINITY);
    assert!(no_temporary_files_in(dir.path()));
}

#[test]
fn a_frames_typed_statistics_come_back_from_the_header_by_name_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("typed.exr");
    let mut frame = test_frame();
    frame.metadata.stats = FrameStats {
        whitted: WhittedStats {
            primary_rays: 240,
            shadow_rays: 3,
            specular_rays: 1,
            ms: 2.5,
        },
        gather: Some(GatherStats {
            seeds: Some(64),
            seeding_ms: Some(0.75),
            ..Default::default()
        }),
        ..Default::default()
    };
    write_frame(&path, &frame).unwrap();
    let back = read_frame(&path).unwrap();
    assert_eq!(
        back.metadata.stats.entries(),
        frame.metadata.stats.entries()
    );
    assert_eq!(back.metadata.stat("gather/seeds"), Some(64.0));
    assert_eq!(
        back.metadata.stat("rays/mrays_per_s"),
        Some(244.0 / 2.5e-3 / 1e6)
    );
}

#[test]
fn a_frame_without_aovs_or_stats_round_trips_too() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plain.exr");
    let mut frame = test_frame();
    frame.aovs.clear();
    frame.metadata.stats = FrameStats::default();
    frame.metadata.device = "GeForce™ RTX".into(); // not Latin-1: stored with a placeholder
    write_frame(&path, &frame).unwrap();
    let back = read_frame(&path).unwrap();
    assert_eq!(back.color, frame.color);
    assert!(back.aovs.is_empty() && back.metadata.stats.is_empty());
    assert_eq!(back.metadata.device, "GeForce? RTX");
}

#[test]
fn writing_into_a_missing_directory_creates_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out/renders/frame_0001.exr");
    write_frame(&path, &test_frame()).unwrap();
    assert_eq!(read_frame(&path).unwrap().width, 5);
}

#[test]
fn a_failed_write_is_an_error_and_leaves_no_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("taken.exr");
    std::fs::create_dir(&target).unwrap();
    let error = write_frame(&target, &test_frame()).unwrap_err();
    assert!(error.to_string().contains("taken.exr"), "{error}");
    assert!(target.is_dir());
    assert!(no_temporary_files_in(dir.path()));
    let error = write_preview_png(&target, &test_frame(), 0.0).unwrap_err();
    assert!(error.to_string().contains("taken.exr"), "{error}");
    assert!(no_temporary_files_in(dir.path()));
}

#[test]
fn an_inconsistent_frame_is_rejected_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let mut frame = test_frame();
    frame.aovs[1].pixels.pop();
    let error = write_frame(&dir.path().join("bad.exr"), &frame)
        .unwrap_err()
        .to_string();
    assert!(error.contains("\"normal\""), "{error}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn reading_a_file_that_is_not_exr_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fake.exr");
    std::fs::write(&path, b"hello").unwrap();
    assert!(read_frame(&path).is_err());
    assert!(read_frame(&dir.path().join("missing.exr"))
        .unwrap_err()
        .reason()
        .contains("No such file"));
}

#[test]
fn srgb_encoding_of_half_linear_is_188() {
    assert_eq!(encode_srgb8(0.5), 188);
}

#[test]
fn the_png_preview_has_the_frame_size_and_srgb_values() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("previews/shot.png");
    let mut frame = test_frame();
    // Reinhard on luminance maps a grey of luminance 1 to 0.5 linear.
    frame.color[0] = Vec3::ONE;
    frame.color[1] = Vec3::ZERO;
    write_preview_png(&path, &frame, 0.0).unwrap();
    let png = image::open(&path).unwrap().to_rgb8();
    assert_eq!(png.dimensions(), (5, 3));
    assert_eq!(png.get_pixel(0, 0).0, [188, 188, 188]);
    assert_eq!(png.get_pixel(1, 0).0, [0, 0, 0]);
    // One stop down halves the light: 0.5 tone-maps to 1/3, encoded as 156.
    write_preview_png(&path, &frame, -1.0).unwrap();
    assert_eq!(
        image::open(&path).unwrap().to_rgb8().get_pixel(0, 0).0,
        [156, 156, 156]
    );
    assert!(no_temporary_files_in(path.parent().unwrap()));
}

#[test]
fn rgb_readers_see_the_colour_of_a_written_frame() {
    // `exr`'s RGBA reader is what the `image` crate and simple viewers use: it must find the
    // colour among the AOV channels.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shot.exr");
    let frame = test_frame();
    write_frame(&path, &frame).unwrap();
    let image = exr::prelude::read_first_rgba_layer_from_file(
        &path,
        |resolution, _| vec![Vec3::ZERO; resolution.width() * resolution.height()],
        |pixels: &mut Vec<Vec3>, position, (r, g, b, _a): (f32, f32, f32, f32)| {
            pixels[position.y() * 5 + position.x()] = Vec3::new(r, g, b)
        },
    )
    .unwrap();
    assert_eq!(image.layer_data.channel_data.pixels, frame.color);
    let names: Vec<String> = image
        .layer_data
        .attributes
        .other
        .keys()
        .map(|k| k.to_string())
        .filter(|k| k.starts_with("caustica/camera"))
        .collect();
    assert_eq!(names.len(), 4, "{names:?}");
}
