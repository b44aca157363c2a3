//! EXR and PNG out: frames round-trip exactly through `write_frame`/`read_frame`, writes are atomic, previews are sRGB.

use std::path::Path;

use caustica::io::{encode_srgb8, read_frame, write_frame, write_preview_png};
use caustica::render::stats::{GatherStats, WhittedStats};
use caustica::render::{Frame, FrameMetadata, FrameStats, Layer};
use glam::Vec3;

/// A 5x3 frame with colour, coverage, albedo, normal and depth in pbrt's G-buffer names (one
/// pixel missed: infinite depth, no coverage).
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
    let mut alpha = vec![1.0; n];
    alpha[7] = 0.0;
    alpha[8] = 0.25;
    Frame {
        width,
        height,
        color,
        alpha,
        aovs: vec![
            Layer::rgb("Albedo", &albedo),
            Layer::from_vec3("N", ["X", "Y", "Z"], &normal),
            Layer::scalar(caustica::render::DEPTH_LAYER, "Z", &depth),
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
            data_window: None,
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
    assert_eq!(back.aov("").unwrap().pixels[7], f32::INFINITY);
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
    assert!(error.contains("\"N\""), "{error}");
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

#[test]
fn the_header_names_the_channels_as_pbrt_and_holds_the_camera_matrices_primaries_and_time() {
    use exr::meta::attribute::AttributeValue;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("header.exr");
    let frame = test_frame();
    write_frame(&path, &frame).unwrap();
    let meta = exr::meta::MetaData::read_from_file(&path, false).unwrap();
    let header = &meta.headers[0];
    let names: Vec<String> = header
        .channels
        .list
        .iter()
        .map(|c| c.name.to_string())
        .collect();
    for expected in ["R", "G", "B", "A", "Albedo.R", "N.X", "N.Z", "Z"] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} not in {names:?}"
        );
    }
    let chroma = header.shared_attributes.chromaticities.unwrap();
    assert_eq!((chroma.red.0, chroma.red.1), (0.64, 0.33));
    assert_eq!((chroma.white.0, chroma.white.1), (0.3127, 0.3290));
    // The camera at (1, 2, 3) looking at (0, 0.5, 0): Imath's row-vector matrix takes the
    // camera's position to the origin and the point looked at onto +z.
    let attrs = &header.own_attributes;
    let m = attrs.world_to_camera.unwrap();
    let apply = |p: Vec3| {
        let row = |c: usize| p.x * m[c] + p.y * m[4 + c] + p.z * m[8 + c] + m[12 + c];
        Vec3::new(row(0), row(1), row(2))
    };
    assert!(apply(Vec3::new(1.0, 2.0, 3.0)).length() < 1e-5);
    let ahead = apply(Vec3::new(0.0, 0.5, 0.0));
    assert!(
        ahead.x.abs() < 1e-5 && ahead.y.abs() < 1e-5 && ahead.z > 3.0,
        "{ahead}"
    );
    assert!(attrs.world_to_normalized_device.is_some());
    assert_eq!(
        attrs
            .other
            .get(&exr::meta::attribute::Text::from("renderTimeSeconds")),
        Some(&AttributeValue::F32(12.345_679))
    );
}

#[test]
fn a_cropped_frame_writes_its_data_window_and_reads_back_at_full_size() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crop.exr");
    let mut frame = test_frame();
    frame.metadata.data_window = Some([1, 1, 4, 3]);
    write_frame(&path, &frame).unwrap();
    let meta = exr::meta::MetaData::read_from_file(&path, false).unwrap();
    let header = &meta.headers[0];
    assert_eq!(header.layer_size.0, 3);
    assert_eq!(header.layer_size.1, 2);
    assert_eq!(header.own_attributes.layer_position.0, 1);
    assert_eq!(header.shared_attributes.display_window.size.0, 5);
    let back = read_frame(&path).unwrap();
    assert_eq!((back.width, back.height), (5, 3));
    assert_eq!(back.metadata.data_window, Some([1, 1, 4, 3]));
    for y in 0..3 {
        for x in 0..5 {
            let i = y * 5 + x;
            let inside = (1..4).contains(&x) && (1..3).contains(&y);
            let expected = if inside { frame.color[i] } else { Vec3::ZERO };
            assert_eq!(back.color[i], expected, "({x}, {y})");
            let n = back.aov("N").unwrap();
            let expected = if inside {
                frame.aov("N").unwrap().get(i, 2)
            } else {
                0.0
            };
            assert_eq!(n.get(i, 2), expected, "({x}, {y})");
        }
    }
}

#[test]
fn a_display_window_larger_than_any_frame_is_an_error_not_an_allocation() {
    use exr::prelude::*;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.exr");
    // A 1-pixel data window inside a display window of 2^20 × 2^20 pixels.
    let channels = SpecificChannels::rgb(|_: Vec2<usize>| (0.5f32, 0.5f32, 0.5f32));
    let layer = Layer::new(
        (1, 1),
        LayerAttributes::default(),
        Encoding::UNCOMPRESSED,
        channels,
    );
    let mut image = Image::from_layer(layer);
    image.attributes.display_window = IntegerBounds::from_dimensions((1 << 20, 1 << 20));
    image.write().to_file(&path).unwrap();
    let error = read_frame(&path).unwrap_err().to_string();
    assert!(error.contains("larger than a frame can be"), "{error}");
}
