//! A rendered frame: the colour, the AOV layers and the metadata written into the EXR header.

use glam::Vec3;

use super::stats::FrameStats;
use crate::scene::Aov;

/// One image layer: `channels.len()` interleaved floats per pixel, rows from the top.
#[derive(Clone, Debug, PartialEq)]
pub struct Layer {
    /// Layer name in the EXR file ("albedo", "normal", "depth", ...).
    pub name: String,
    /// Channel names within the layer, e.g. `["R", "G", "B"]`, `["X", "Y", "Z"]` or `["Z"]`.
    pub channels: Vec<String>,
    pub pixels: Vec<f32>,
}

impl Layer {
    /// A layer of RGB triples.
    pub fn rgb(name: &str, values: &[Vec3]) -> Layer {
        Layer::from_vec3(name, ["R", "G", "B"], values)
    }

    /// A layer of three named channels.
    pub fn from_vec3(name: &str, channels: [&str; 3], values: &[Vec3]) -> Layer {
        // `Vec3` is three packed `f32`s (glam's `bytemuck` feature): one copy, on rayon's
        // threads for a large image (a 1024² frame's three layers took 15 ms on one thread).
        Layer {
            name: name.to_string(),
            channels: channels.iter().map(|c| c.to_string()).collect(),
            pixels: parallel_copy(bytemuck::cast_slice(values)),
        }
    }

    /// A layer of one channel.
    pub fn scalar(name: &str, channel: &str, values: &[f32]) -> Layer {
        Layer {
            name: name.to_string(),
            channels: vec![channel.to_string()],
            pixels: parallel_copy(values),
        }
    }

    /// The value of `channel` at pixel index `i`.
    pub fn get(&self, i: usize, channel: usize) -> f32 {
        self.pixels[i * self.channels.len() + channel]
    }
}

/// What was rendered and how, written as EXR header attributes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FrameMetadata {
    pub frame: i64,
    pub time: f32,
    /// Wall-clock time of rendering this frame (excluding parsing and the hierarchy build).
    pub render_seconds: f64,
    /// Wall-clock time of building the hierarchy for this frame.
    pub build_seconds: f64,
    pub spp: u32,
    pub camera_position: Vec3,
    pub camera_look_at: Vec3,
    pub camera_up: Vec3,
    pub camera_fov_deg: f32,
    /// "cpu" or the GPU adapter's name.
    pub device: String,
    /// The frame's statistics (`render::stats`), named by `FrameStats::entries`.
    pub stats: FrameStats,
}

impl FrameMetadata {
    /// The metadata of `scene`'s frame rendered on `device` in `render_seconds`, with its
    /// counters (the film's spp; the hierarchy's build time is filled in by the caller).
    pub fn of(
        scene: &crate::scene::Scene,
        device: String,
        render_seconds: f64,
        stats: FrameStats,
    ) -> FrameMetadata {
        FrameMetadata {
            frame: scene.frame,
            time: scene.time,
            render_seconds,
            spp: scene.film.spp.max(1),
            camera_position: scene.camera.position,
            camera_look_at: scene.camera.look_at,
            camera_up: scene.camera.up,
            camera_fov_deg: scene.camera.fov_deg,
            device,
            stats,
            ..Default::default()
        }
    }

    /// The figure called `name`, if the frame has it.
    pub fn stat(&self, name: &str) -> Option<f64> {
        self.stats.get(name)
    }
}

/// A rendered frame. `color` is linear RGB with rows from the top.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    pub width: u32,
    pub height: u32,
    pub color: Vec<Vec3>,
    /// Extra layers in the order requested.
    pub aovs: Vec<Layer>,
    pub metadata: FrameMetadata,
}

impl Frame {
    /// Checks that the frame has pixels and that the colour buffer matches its size; the message
    /// says what is wrong.
    pub fn check_color_size(&self) -> Result<(), String> {
        if self.width == 0 || self.height == 0 {
            return Err(format!(
                "the frame is {}x{} pixels",
                self.width, self.height
            ));
        }
        if self.color.len() != self.width as usize * self.height as usize {
            return Err(format!(
                "{} colour values for {}x{} pixels",
                self.color.len(),
                self.width,
                self.height
            ));
        }
        Ok(())
    }

    pub fn aov(&self, name: &str) -> Option<&Layer> {
        self.aovs.iter().find(|l| l.name == name)
    }
}

/// The photon maps' debug views and photon mapping's components, per pixel (empty when not
/// made).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PhotonViews {
    pub global: Vec<Vec3>,
    pub caustic: Vec<Vec3>,
    /// The components of the composed colour.
    pub direct_part: Vec<Vec3>,
    pub indirect_part: Vec<Vec3>,
    pub caustic_part: Vec<Vec3>,
    /// Irradiance seeds per pixel.
    pub seeds: Vec<f32>,
}

impl PhotonViews {
    /// Adds `other`'s views and seeds into these (the layers of a frame's passes sum); an
    /// empty view is nothing to add, and an empty one here takes `other`'s.
    pub fn add(&mut self, other: &PhotonViews) {
        fn sum<T: Copy + std::ops::AddAssign>(a: &mut Vec<T>, b: &[T]) {
            if a.is_empty() {
                a.extend_from_slice(b);
            } else if !b.is_empty() {
                for (x, y) in a.iter_mut().zip(b) {
                    *x += *y;
                }
            }
        }
        sum(&mut self.global, &other.global);
        sum(&mut self.caustic, &other.caustic);
        sum(&mut self.direct_part, &other.direct_part);
        sum(&mut self.indirect_part, &other.indirect_part);
        sum(&mut self.caustic_part, &other.caustic_part);
        sum(&mut self.seeds, &other.seeds);
    }
}

/// `values` copied, in blocks on rayon's threads when there are many (the fresh pages are
/// touched in parallel).
fn parallel_copy(values: &[f32]) -> Vec<f32> {
    use rayon::prelude::*;
    const BLOCK: usize = 1 << 16;
    if values.len() < 4 * BLOCK {
        return values.to_vec();
    }
    let mut out = vec![0.0f32; values.len()];
    out.par_chunks_mut(BLOCK)
        .zip(values.par_chunks(BLOCK))
        .for_each(|(o, v)| o.copy_from_slice(v));
    out
}

/// The layers of `requested` AOVs, in that order, from per-pixel buffers of `pixels` pixels.
/// `ids` holds (instance, prim) per pixel and may be empty when the `id` layer is not
/// requested; so may `albedo`, `normal` and `depth` and the views in `photons` that are not
/// requested.
pub fn aov_layers(
    requested: &[Aov],
    pixels: usize,
    albedo: &[Vec3],
    normal: &[Vec3],
    depth: &[f32],
    ids: &[[f32; 2]],
    photons: &PhotonViews,
) -> Vec<Layer> {
    requested
        .iter()
        .map(|aov| match aov {
            Aov::Albedo => Layer::rgb("albedo", albedo),
            Aov::Normal => Layer::from_vec3("normal", ["X", "Y", "Z"], normal),
            Aov::Depth => Layer::scalar("depth", "Z", depth),
            Aov::Id => Layer {
                name: "id".to_string(),
                channels: vec!["instance".to_string(), "prim".to_string()],
                pixels: ids.iter().flatten().copied().collect(),
            },
            Aov::PhotonsGlobal => Layer::rgb("photons_global", &photons.global),
            Aov::PhotonsCaustic => Layer::rgb("photons_caustic", &photons.caustic),
            Aov::Direct => Layer::rgb("direct", &filled(&photons.direct_part, pixels)),
            Aov::Indirect => Layer::rgb("indirect", &filled(&photons.indirect_part, pixels)),
            Aov::Caustic => Layer::rgb("caustic", &filled(&photons.caustic_part, pixels)),
            Aov::Seeds => Layer::scalar(
                "seeds",
                "count",
                &if photons.seeds.is_empty() {
                    vec![0.0; pixels]
                } else {
                    photons.seeds.clone()
                },
            ),
        })
        .collect()
}

/// `values`, or zeros for `n` pixels when a component was not made (the Whitted integrator).
fn filled(values: &[Vec3], n: usize) -> Vec<Vec3> {
    if values.is_empty() {
        vec![Vec3::ZERO; n]
    } else {
        values.to_vec()
    }
}
