//! EXR out (and back in): a rendered [`Frame`] as one OpenEXR image with AOV channels and metadata attributes.
//!
//! # File layout
//!
//! One single-part, scan-line, ZIP-compressed (lossless) image of 32-bit float channels:
//!
//! - the colour as the unnamed default layer, channels `R`, `G`, `B`, with the coverage `A`
//!   (the share of the camera samples that hit something; the colour is not premultiplied by
//!   it, since the background is black), which is what every viewer shows;
//! - each AOV layer as a *named layer* in the OpenEXR multi-view/layer naming convention:
//!   channels `<layer>.<channel>`, named as pbrt-v4's G-buffer film names them: `Albedo.R`,
//!   `N.X` (geometric normal), `Ns.X` (shading normal), `P.X`, and the depth `Z` unprefixed in
//!   the default layer (a layer with the empty name).
//!
//! Prefixed channels in one part are what Blender, Nuke, OpenImageIO, `exrheader` and the
//! OpenEXR layer API read as layers; multi-part files are less widely supported, so they are
//! not used. OpenEXR stores channels sorted by name, so the frame's own order of layers and
//! channels is kept in the attribute `caustica/channelOrder`.
//!
//! # Header attributes
//!
//! | attribute | type | value |
//! |---|---|---|
//! | `software` | string | `Caustica <version>` |
//! | `caustica/version` | string | the crate version |
//! | `caustica/frame` | int (double when outside i32) | frame number |
//! | `caustica/time` | float | scene time in seconds |
//! | `caustica/renderSeconds`, `caustica/buildSeconds` | double | wall-clock times |
//! | `caustica/spp` | int | samples per pixel |
//! | `caustica/camera/position`, `/lookAt`, `/up` | v3f | camera placement |
//! | `caustica/camera/fovDeg` | float | vertical field of view in degrees |
//! | `caustica/device` | string | `cpu` or the GPU adapter |
//! | `caustica/stats/<name>` | double | each named counter |
//! | `caustica/statsOrder` | stringvector | the counters' names in the frame's order |
//! | `worldToCamera` | m44f | world to camera space (`render::CameraModel::world_to_camera`) |
//! | `worldToNDC` | m44f | world to normalised device coordinates (`…::world_to_ndc`) |
//! | `chromaticities` | chromaticities | Rec. 709 / sRGB primaries, D65 white |
//! | `renderTimeSeconds` | float | the render's wall-clock time, as pbrt-v4 names it |
//!
//! The matrices are stored as Imath's, for row vectors (`p' = p · M`): the transposes of the
//! column-vector matrices the functions return.
//!
//! Strings are stored as Latin-1, which OpenEXR requires; other characters become `?`.

use std::collections::HashMap;
use std::path::Path;

use exr::meta::attribute::{AttributeValue, Text};
use glam::Vec3;

use super::atomic::write_atomically;
use super::texture::exr_read_error;
use super::IoError;
use crate::render::{Frame, FrameMetadata, Layer};

const ATTR_VERSION: &str = "caustica/version";
const ATTR_FRAME: &str = "caustica/frame";
const ATTR_TIME: &str = "caustica/time";
const ATTR_RENDER_SECONDS: &str = "caustica/renderSeconds";
const ATTR_BUILD_SECONDS: &str = "caustica/buildSeconds";
const ATTR_SPP: &str = "caustica/spp";
const ATTR_CAMERA_POSITION: &str = "caustica/camera/position";
const ATTR_CAMERA_LOOK_AT: &str = "caustica/camera/lookAt";
const ATTR_CAMERA_UP: &str = "caustica/camera/up";
const ATTR_CAMERA_FOV: &str = "caustica/camera/fovDeg";
const ATTR_DEVICE: &str = "caustica/device";
const ATTR_STATS_PREFIX: &str = "caustica/stats/";
const ATTR_STATS_ORDER: &str = "caustica/statsOrder";
const ATTR_CHANNEL_ORDER: &str = "caustica/channelOrder";
/// The largest display window [`read_frame`] fills in around a data window: a side of
/// `--resolution`'s limit, and at most 2^28 pixels.
const MAX_DISPLAY_SIDE: usize = 65536;
const MAX_DISPLAY_PIXELS: usize = 1 << 28;
/// The default layer's colour channels, which no AOV channel may take.
const COLOUR_CHANNELS: [&str; 4] = ["R", "G", "B", "A"];

/// Writes `frame` to `path` as described in the module docs. The file is written to a
/// temporary file beside it and renamed into place; missing directories are created.
pub fn write_frame(path: &Path, frame: &Frame) -> Result<(), IoError> {
    use exr::prelude::{
        AnyChannel, AnyChannels, Encoding, FlatSamples, Image, LayerAttributes, WritableImage,
    };

    check_frame(path, frame)?;
    // The data window: the crop's pixels, or the whole image.
    let [x0, y0, x1, y1] = data_window(frame);
    let size = ((x1 - x0) as usize, (y1 - y0) as usize);
    let window: Vec<usize> = (y0..y1)
        .flat_map(|y| (x0..x1).map(move |x| (y * frame.width + x) as usize))
        .collect();

    let mut channels: Vec<AnyChannel<FlatSamples>> = Vec::new();
    let mut channel_order: Vec<String> = Vec::new();
    let colour_channels = ["R", "G", "B"];
    for (index, name) in colour_channels.iter().enumerate() {
        let samples = window.iter().map(|&p| frame.color[p][index]).collect();
        channels.push(AnyChannel::new(*name, FlatSamples::F32(samples)));
        channel_order.push(name.to_string());
    }
    if !frame.alpha.is_empty() {
        let samples = window.iter().map(|&p| frame.alpha[p]).collect();
        channels.push(AnyChannel::new("A", FlatSamples::F32(samples)));
        channel_order.push("A".to_string());
    }
    for layer in &frame.aovs {
        let stride = layer.channels.len();
        for (index, channel) in layer.channels.iter().enumerate() {
            let full_name = if layer.name.is_empty() {
                channel.clone()
            } else {
                format!("{}.{}", layer.name, channel)
            };
            let Some(text) = Text::new_or_none(&full_name) else {
                return Err(IoError::invalid_data(
                    path,
                    format!("channel name {full_name:?} is not Latin-1"),
                ));
            };
            let samples = window
                .iter()
                .map(|&p| layer.pixels[p * stride + index])
                .collect();
            channels.push(AnyChannel::new(text, FlatSamples::F32(samples)));
            channel_order.push(full_name);
        }
    }

    let mut attributes = LayerAttributes {
        software_name: Some(latin1(&format!("Caustica {}", env!("CARGO_PKG_VERSION")))),
        other: metadata_attributes(&frame.metadata),
        layer_position: exr::math::Vec2(x0 as i32, y0 as i32),
        ..LayerAttributes::default()
    };
    attributes.other.insert(
        latin1(ATTR_CHANNEL_ORDER),
        AttributeValue::TextVector(channel_order.iter().map(|n| latin1(n)).collect()),
    );

    // The column-major order of a column-vector matrix is the row-major order of Imath's.
    let camera = camera_model(frame);
    attributes.world_to_camera = Some(camera.world_to_camera().to_cols_array());
    attributes.world_to_normalized_device = Some(camera.world_to_ndc().to_cols_array());
    attributes.other.insert(
        latin1("renderTimeSeconds"),
        AttributeValue::F32(frame.metadata.render_seconds as f32),
    );

    let layer = exr::prelude::Layer::new(
        size,
        attributes,
        Encoding::SMALL_LOSSLESS,
        AnyChannels::sort(channels.into()),
    );
    let mut image = Image::from_layer(layer);
    image.attributes.chromaticities = Some(REC709);
    image.attributes.display_window = exr::meta::attribute::IntegerBounds::from_dimensions((
        frame.width as usize,
        frame.height as usize,
    ));
    write_atomically(path, |file| {
        image.write().to_buffered(file).map_err(|e| match e {
            exr::error::Error::Io(source) => IoError::write(path, source),
            other => IoError::invalid_data(path, format!("EXR: {other}")),
        })
    })
}

/// Rec. 709 (and sRGB) primaries with the D65 white point: what the colour's linear RGB is.
const REC709: exr::meta::attribute::Chromaticities = exr::meta::attribute::Chromaticities {
    red: exr::math::Vec2(0.64, 0.33),
    green: exr::math::Vec2(0.30, 0.60),
    blue: exr::math::Vec2(0.15, 0.06),
    white: exr::math::Vec2(0.3127, 0.3290),
};

/// The pixels `[x0, y0, x1, y1)` the file holds: the frame's data window (a crop, clamped to
/// the image and never empty), or the whole image.
fn data_window(frame: &Frame) -> [u32; 4] {
    match frame.metadata.data_window {
        Some([x0, y0, x1, y1]) => {
            let (x1, y1) = (x1.min(frame.width), y1.min(frame.height));
            let (x0, y0) = (x0.min(x1.saturating_sub(1)), y0.min(y1.saturating_sub(1)));
            [x0, y0, x1.max(x0 + 1), y1.max(y0 + 1)]
        }
        None => [0, 0, frame.width, frame.height],
    }
}

/// The camera the frame's metadata describes, for its matrices.
fn camera_model(frame: &Frame) -> crate::render::CameraModel {
    let meta = &frame.metadata;
    let camera = crate::scene::Camera {
        position: meta.camera_position,
        look_at: meta.camera_look_at,
        up: meta.camera_up,
        fov_deg: meta.camera_fov_deg,
        ..Default::default()
    };
    let film = crate::scene::Film {
        width: frame.width,
        height: frame.height,
        ..Default::default()
    };
    crate::render::CameraModel::new(&camera, &film)
}

/// Rejects frames whose buffers do not match their size, before anything is written.
fn check_frame(path: &Path, frame: &Frame) -> Result<(), IoError> {
    frame
        .check_color_size()
        .map_err(|message| IoError::invalid_data(path, message))?;
    let pixels = frame.width as usize * frame.height as usize;
    if !frame.alpha.is_empty() && frame.alpha.len() != pixels {
        return Err(IoError::invalid_data(
            path,
            format!("{} alpha values for {pixels} pixels", frame.alpha.len()),
        ));
    }
    let mut seen = std::collections::HashSet::new();
    for layer in &frame.aovs {
        if layer.channels.is_empty() {
            return Err(IoError::invalid_data(
                path,
                format!("the AOV layer {:?} has no channels", layer.name),
            ));
        }
        if !seen.insert(layer.name.as_str()) || COLOUR_CHANNELS.contains(&layer.name.as_str()) {
            return Err(IoError::invalid_data(
                path,
                format!("the layer name {:?} is used twice", layer.name),
            ));
        }
        if layer.name.is_empty()
            && layer
                .channels
                .iter()
                .any(|c| COLOUR_CHANNELS.contains(&c.as_str()))
        {
            return Err(IoError::invalid_data(
                path,
                "a default-layer channel takes the name of a colour channel",
            ));
        }
        if layer
            .channels
            .iter()
            .any(|c| c.is_empty() || c.contains('.'))
        {
            return Err(IoError::invalid_data(
                path,
                format!("layer {:?} has an empty or dotted channel name", layer.name),
            ));
        }
        if layer.pixels.len() != pixels * layer.channels.len() {
            return Err(IoError::invalid_data(
                path,
                format!(
                    "layer {:?} has {} values for {} pixels of {} channels",
                    layer.name,
                    layer.pixels.len(),
                    pixels,
                    layer.channels.len()
                ),
            ));
        }
    }
    Ok(())
}

/// `text` as an EXR string, with characters outside Latin-1 replaced by `?`.
fn latin1(text: &str) -> Text {
    let cleaned: String = text
        .chars()
        .map(|c| if (c as u32) < 256 { c } else { '?' })
        .collect();
    // Every character of `cleaned` is below 256, which is all `Text` requires.
    Text::new_or_none(cleaned).unwrap_or_default()
}

fn vec3_attribute(v: Vec3) -> AttributeValue {
    AttributeValue::FloatVec3((v.x, v.y, v.z))
}

fn metadata_attributes(meta: &FrameMetadata) -> HashMap<Text, AttributeValue> {
    let mut attrs = HashMap::new();
    let mut put = |name: &str, value: AttributeValue| {
        attrs.insert(latin1(name), value);
    };
    put(
        ATTR_VERSION,
        AttributeValue::Text(latin1(env!("CARGO_PKG_VERSION"))),
    );
    put(
        ATTR_FRAME,
        match i32::try_from(meta.frame) {
            Ok(frame) => AttributeValue::I32(frame),
            Err(_) => AttributeValue::F64(meta.frame as f64),
        },
    );
    put(ATTR_TIME, AttributeValue::F32(meta.time));
    put(
        ATTR_RENDER_SECONDS,
        AttributeValue::F64(meta.render_seconds),
    );
    put(ATTR_BUILD_SECONDS, AttributeValue::F64(meta.build_seconds));
    put(
        ATTR_SPP,
        match i32::try_from(meta.spp) {
            Ok(spp) => AttributeValue::I32(spp),
            Err(_) => AttributeValue::F64(meta.spp as f64),
        },
    );
    put(ATTR_CAMERA_POSITION, vec3_attribute(meta.camera_position));
    put(ATTR_CAMERA_LOOK_AT, vec3_attribute(meta.camera_look_at));
    put(ATTR_CAMERA_UP, vec3_attribute(meta.camera_up));
    put(ATTR_CAMERA_FOV, AttributeValue::F32(meta.camera_fov_deg));
    put(ATTR_DEVICE, AttributeValue::Text(latin1(&meta.device)));
    let stats = meta.stats.entries();
    for (name, value) in &stats {
        put(
            &format!("{ATTR_STATS_PREFIX}{name}"),
            AttributeValue::F64(*value),
        );
    }
    // OpenEXR forbids empty string vectors.
    if !stats.is_empty() {
        put(
            ATTR_STATS_ORDER,
            AttributeValue::TextVector(stats.iter().map(|(n, _)| latin1(n)).collect()),
        );
    }
    attrs
}

/// Reads a frame written by [`write_frame`]: the colour from the unprefixed `R`, `G`, `B`
/// channels, every `<layer>.<channel>` group as an AOV layer, and the metadata attributes
/// (those missing are left at their defaults). Works on other tools' single- and multi-part
/// files too, as long as they have R, G and B.
pub fn read_frame(path: &Path) -> Result<Frame, IoError> {
    use exr::prelude::{read, ReadChannels, ReadLayers};
    super::texture::check_exr_size(path)?;
    let image = read()
        .no_deep_data()
        .largest_resolution_level()
        .all_channels()
        .all_layers()
        .all_attributes()
        .from_file(path)
        .map_err(|e| exr_read_error(path, e))?;

    let Some(first_part) = image.layer_data.first() else {
        return Err(IoError::format(path, "EXR: the file has no image"));
    };
    let size = first_part.size;
    let pixels = size.area();

    // Every channel of every part, by its full name (`albedo.R`, or `R` for the default layer).
    let mut by_name: Vec<(String, Vec<f32>)> = Vec::new();
    for part in &image.layer_data {
        if part.size != size {
            return Err(IoError::format(
                path,
                "EXR: the parts of the file differ in size",
            ));
        }
        let prefix = part.attributes.layer_name.as_ref().map(|n| format!("{n}."));
        for channel in &part.channel_data.list {
            if channel.sample_data.len() != pixels {
                return Err(IoError::format(
                    path,
                    "EXR: subsampled channels are not supported",
                ));
            }
            let name = format!("{}{}", prefix.as_deref().unwrap_or(""), channel.name);
            by_name.push((name, channel.sample_data.values_as_f32().collect()));
        }
    }

    let attributes: HashMap<&Text, &AttributeValue> = first_part
        .attributes
        .other
        .iter()
        .chain(image.attributes.other.iter())
        .collect();
    let attribute = |name: &str| attributes.get(&latin1(name)).copied();

    // The frame's channel order when we wrote the file, then anything else in the file's order.
    let mut ordered: Vec<String> = match attribute(ATTR_CHANNEL_ORDER) {
        Some(AttributeValue::TextVector(names)) => names.iter().map(|n| n.to_string()).collect(),
        _ => Vec::new(),
    };
    ordered.retain(|n| by_name.iter().any(|(name, _)| name == n));
    for (name, _) in &by_name {
        if !ordered.contains(name) {
            ordered.push(name.clone());
        }
    }
    let samples_of = |name: &str| by_name.iter().find(|(n, _)| n == name).map(|(_, s)| s);

    let (Some(r), Some(g), Some(b)) = (samples_of("R"), samples_of("G"), samples_of("B")) else {
        return Err(IoError::format(path, "EXR: no R, G, B channels"));
    };
    let color = (0..pixels).map(|i| Vec3::new(r[i], g[i], b[i])).collect();
    let alpha = samples_of("A").cloned().unwrap_or_default();

    let mut aovs: Vec<Layer> = Vec::new();
    for name in &ordered {
        // Other channels of the default layer (the depth `Z`) make the layer with no name.
        let (layer_name, channel) = match name.rsplit_once('.') {
            Some(split) => split,
            None if COLOUR_CHANNELS.contains(&name.as_str()) => continue,
            None => ("", name.as_str()),
        };
        let index = match aovs.iter().position(|l| l.name == layer_name) {
            Some(index) => index,
            None => {
                aovs.push(Layer {
                    name: layer_name.to_string(),
                    channels: Vec::new(),
                    pixels: Vec::new(),
                });
                aovs.len() - 1
            }
        };
        aovs[index].channels.push(channel.to_string());
    }
    for layer in &mut aovs {
        let columns: Vec<&Vec<f32>> = layer
            .channels
            .iter()
            // Each channel name was built from an entry of `by_name` above.
            .filter_map(|c| {
                if layer.name.is_empty() {
                    samples_of(c)
                } else {
                    samples_of(&format!("{}.{}", layer.name, c))
                }
            })
            .collect();
        layer.pixels = (0..pixels)
            .flat_map(|i| columns.iter().map(move |column| column[i]))
            .collect();
    }

    let to_u32 =
        |n: usize| u32::try_from(n).map_err(|_| IoError::format(path, "EXR: image is too large"));
    let frame = Frame {
        width: to_u32(size.width())?,
        height: to_u32(size.height())?,
        color,
        alpha,
        aovs,
        metadata: read_metadata(&attributes),
    };
    // A data window inside a larger display window (a crop): the frame at the display size.
    let display = image.attributes.display_window;
    let position = first_part.attributes.layer_position;
    if display.size == size && position == display.position {
        return Ok(frame);
    }
    let (x0, y0) = (
        position.0 - display.position.0,
        position.1 - display.position.1,
    );
    let inside = x0 >= 0
        && y0 >= 0
        && x0 as usize + size.width() <= display.size.width()
        && y0 as usize + size.height() <= display.size.height();
    if !inside {
        return Err(IoError::format(
            path,
            "EXR: the data window reaches outside the display window",
        ));
    }
    // The frame is made at the display size: a file must not ask for more than a render can be.
    if display.size.width() > MAX_DISPLAY_SIDE
        || display.size.height() > MAX_DISPLAY_SIDE
        || display.size.area() > MAX_DISPLAY_PIXELS
    {
        return Err(IoError::format(
            path,
            format!(
                "EXR: the display window {}x{} is larger than a frame can be",
                display.size.width(),
                display.size.height()
            ),
        ));
    }
    let (x0, y0) = (to_u32(x0 as usize)?, to_u32(y0 as usize)?);
    Ok(placed_in(
        frame,
        [x0, y0],
        to_u32(display.size.width())?,
        to_u32(display.size.height())?,
    ))
}

/// `frame` (a data window) placed at `origin` in an image `width` × `height`, zero elsewhere,
/// with its data window recorded.
fn placed_in(frame: Frame, origin: [u32; 2], width: u32, height: u32) -> Frame {
    let [x0, y0] = origin;
    let full = (width * height) as usize;
    let at = |i: usize| {
        let (x, y) = (i as u32 % frame.width, i as u32 / frame.width);
        ((y + y0) * width + x + x0) as usize
    };
    let mut color = vec![Vec3::ZERO; full];
    for (i, c) in frame.color.iter().enumerate() {
        color[at(i)] = *c;
    }
    let mut alpha = vec![0.0; if frame.alpha.is_empty() { 0 } else { full }];
    for (i, a) in frame.alpha.iter().enumerate() {
        alpha[at(i)] = *a;
    }
    let aovs = frame
        .aovs
        .iter()
        .map(|layer| {
            let stride = layer.channels.len();
            let mut pixels = vec![0.0; full * stride];
            for (i, values) in layer.pixels.chunks_exact(stride).enumerate() {
                pixels[at(i) * stride..(at(i) + 1) * stride].copy_from_slice(values);
            }
            Layer {
                pixels,
                ..layer.clone()
            }
        })
        .collect();
    let mut metadata = frame.metadata;
    metadata.data_window = Some([x0, y0, x0 + frame.width, y0 + frame.height]);
    Frame {
        width,
        height,
        color,
        alpha,
        aovs,
        metadata,
    }
}

fn read_metadata(attributes: &HashMap<&Text, &AttributeValue>) -> FrameMetadata {
    let attribute = |name: &str| attributes.get(&latin1(name)).copied();
    let f64_of = |name: &str| match attribute(name) {
        Some(AttributeValue::F64(v)) => Some(*v),
        Some(AttributeValue::F32(v)) => Some(*v as f64),
        Some(AttributeValue::I32(v)) => Some(*v as f64),
        _ => None,
    };
    let vec3_of = |name: &str| match attribute(name) {
        Some(AttributeValue::FloatVec3((x, y, z))) => Vec3::new(*x, *y, *z),
        _ => Vec3::ZERO,
    };
    let mut meta = FrameMetadata {
        frame: f64_of(ATTR_FRAME).map_or(0, |f| f as i64),
        time: f64_of(ATTR_TIME).unwrap_or(0.0) as f32,
        render_seconds: f64_of(ATTR_RENDER_SECONDS).unwrap_or(0.0),
        build_seconds: f64_of(ATTR_BUILD_SECONDS).unwrap_or(0.0),
        spp: f64_of(ATTR_SPP).map_or(0, |s| s as u32),
        camera_position: vec3_of(ATTR_CAMERA_POSITION),
        camera_look_at: vec3_of(ATTR_CAMERA_LOOK_AT),
        camera_up: vec3_of(ATTR_CAMERA_UP),
        camera_fov_deg: f64_of(ATTR_CAMERA_FOV).unwrap_or(0.0) as f32,
        device: match attribute(ATTR_DEVICE) {
            Some(AttributeValue::Text(text)) => text.to_string(),
            _ => String::new(),
        },
        data_window: None,
        stats: Default::default(),
    };
    // The figures come back by name (`FrameStats::named`).
    let named = &mut meta.stats.named;
    if let Some(AttributeValue::TextVector(names)) = attribute(ATTR_STATS_ORDER) {
        for name in names {
            let name = name.to_string();
            if let Some(value) = f64_of(&format!("{ATTR_STATS_PREFIX}{name}")) {
                named.push((name, value));
            }
        }
    }
    // Counters without an order entry (another writer, or an edited file), sorted by name.
    let mut unlisted: Vec<(String, f64)> = attributes
        .keys()
        .filter_map(|key| {
            key.to_string()
                .strip_prefix(ATTR_STATS_PREFIX)
                .map(str::to_string)
        })
        .filter(|name| !named.iter().any(|(listed, _)| listed == name))
        .filter_map(|name| f64_of(&format!("{ATTR_STATS_PREFIX}{name}")).map(|value| (name, value)))
        .collect();
    unlisted.sort_by(|a, b| a.0.cmp(&b.0));
    named.extend(unlisted);
    meta
}
