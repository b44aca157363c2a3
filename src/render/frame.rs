//! A rendered frame: the colour, the AOV layers and the metadata written into the EXR header.

use glam::Vec3;

use super::stats::FrameStats;
use crate::scene::Aov;

/// One image layer: `channels.len()` interleaved floats per pixel, rows from the top.
#[derive(Clone, Debug, PartialEq)]
pub struct Layer {
    /// Layer name in the EXR file (`Albedo`, `N`, `direct`, ...): its channels are written
    /// `<name>.<channel>`. The empty name holds channels of the default layer beside `R G B A`
    /// (the depth `Z`).
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
    /// The pixels `[x0, y0, x1, y1)` a crop rendered (`--crop`): the EXR's data window. `None`:
    /// the whole image.
    pub data_window: Option<[u32; 4]>,
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
            data_window: scene.film.crop_pixels(),
            stats,
            ..Default::default()
        }
    }

    /// The figure called `name`, if the frame has it.
    pub fn stat(&self, name: &str) -> Option<f64> {
        self.stats.get(name)
    }
}

/// The name of the layer holding the depth channel `Z` (the default layer, beside the colour).
pub const DEPTH_LAYER: &str = "";

/// Per pixel, the sums over a frame's camera samples of what each saw first, which both
/// backends add up sample by sample; [`FirstHitSums::resolve`] makes the layers of them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FirstHitSums {
    pub albedo: Vec<Vec3>,
    pub shading_normal: Vec<Vec3>,
    pub geometric_normal: Vec<Vec3>,
    pub position: Vec<Vec3>,
    /// How many samples hit something.
    pub hits: Vec<f32>,
}

/// The first-hit layers of a frame (each empty where its sums were not made).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FirstHitLayers {
    /// The mean albedo over the samples (a miss counts black).
    pub albedo: Vec<Vec3>,
    /// The normalised sums of the shading and of the geometric normals (world space; zero
    /// where no sample hit).
    pub shading_normal: Vec<Vec3>,
    pub geometric_normal: Vec<Vec3>,
    /// The mean first-hit position (world space) over the samples that hit; zero where none.
    pub position: Vec<Vec3>,
    /// Camera-space depth of `position`: its distance from the camera along the viewing
    /// direction (`look_at − position`); +∞ where no sample hit.
    pub depth: Vec<f32>,
    /// The share of the samples that hit something (coverage).
    pub alpha: Vec<f32>,
}

impl FirstHitSums {
    /// The layers of these sums over `spp` samples a pixel, seen from `camera`.
    pub fn resolve(&self, spp: u32, camera: &crate::scene::Camera) -> FirstHitLayers {
        use rayon::prelude::*;
        let spp = spp.max(1) as f32;
        let forward = (camera.look_at - camera.position).normalize_or_zero();
        let normalised = |v: &[Vec3]| -> Vec<Vec3> {
            v.par_iter()
                .map(|n| n.try_normalize().unwrap_or(Vec3::ZERO))
                .collect()
        };
        let position: Vec<Vec3> = self
            .position
            .par_iter()
            .zip(&self.hits)
            .map(|(&p, &h)| if h > 0.0 { p / h } else { Vec3::ZERO })
            .collect();
        let depth = if self.position.is_empty() {
            Vec::new()
        } else {
            position
                .par_iter()
                .zip(&self.hits)
                .map(|(&p, &h)| {
                    if h > 0.0 {
                        (p - camera.position).dot(forward)
                    } else {
                        f32::INFINITY
                    }
                })
                .collect()
        };
        FirstHitLayers {
            albedo: self.albedo.par_iter().map(|&a| a / spp).collect(),
            shading_normal: normalised(&self.shading_normal),
            geometric_normal: normalised(&self.geometric_normal),
            position,
            depth,
            alpha: self.hits.par_iter().map(|&h| h / spp).collect(),
        }
    }
}

/// A rendered frame. `color` is linear RGB with rows from the top.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    pub width: u32,
    pub height: u32,
    pub color: Vec<Vec3>,
    /// Coverage per pixel: the share of the camera samples that hit something (`A` in the EXR,
    /// beside `R G B`); empty when not known (a file without `A`).
    pub alpha: Vec<f32>,
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

/// The names of the EXR layers an AOV writes, in order (see [`aov_layers`]).
pub fn layer_names(aov: Aov) -> &'static [&'static str] {
    match aov {
        Aov::Albedo => &["Albedo"],
        Aov::Normal => &["N", "Ns"],
        Aov::Position => &["P"],
        Aov::Depth => &[DEPTH_LAYER],
        Aov::Id => &["id"],
        Aov::PhotonsGlobal => &["photons_global"],
        Aov::PhotonsCaustic => &["photons_caustic"],
        Aov::Direct => &["direct"],
        Aov::Indirect => &["indirect"],
        Aov::Caustic => &["caustic"],
        Aov::Seeds => &["seeds"],
    }
}

/// The layers of `requested` AOVs, in that order, from per-pixel buffers of `pixels` pixels,
/// named as pbrt-v4's G-buffer film names them so that denoisers and `imgtool` find them:
/// `Albedo.R/G/B`, `N.X/Y/Z` (geometric normal) and `Ns.X/Y/Z` (shading normal) for `normal`,
/// `P.X/Y/Z` and the depth `Z` (default layer). `ids` holds (instance, prim) per pixel and may
/// be empty when the `id` layer is not requested; so may the first-hit layers and the views in
/// `photons` that are not requested.
pub fn aov_layers(
    requested: &[Aov],
    pixels: usize,
    first: &FirstHitLayers,
    ids: &[[f32; 2]],
    photons: &PhotonViews,
) -> Vec<Layer> {
    let xyz = ["X", "Y", "Z"];
    let mut layers = Vec::new();
    for &aov in requested {
        let names = layer_names(aov);
        match aov {
            Aov::Albedo => layers.push(Layer::rgb(names[0], &first.albedo)),
            Aov::Normal => {
                layers.push(Layer::from_vec3(names[0], xyz, &first.geometric_normal));
                layers.push(Layer::from_vec3(names[1], xyz, &first.shading_normal));
            }
            Aov::Position => layers.push(Layer::from_vec3(names[0], xyz, &first.position)),
            Aov::Depth => layers.push(Layer::scalar(names[0], "Z", &first.depth)),
            Aov::Id => layers.push(Layer {
                name: names[0].to_string(),
                channels: vec!["instance".to_string(), "prim".to_string()],
                pixels: ids.iter().flatten().copied().collect(),
            }),
            Aov::PhotonsGlobal => layers.push(Layer::rgb(names[0], &photons.global)),
            Aov::PhotonsCaustic => layers.push(Layer::rgb(names[0], &photons.caustic)),
            Aov::Direct => layers.push(Layer::rgb(names[0], &filled(&photons.direct_part, pixels))),
            Aov::Indirect => layers.push(Layer::rgb(
                names[0],
                &filled(&photons.indirect_part, pixels),
            )),
            Aov::Caustic => {
                layers.push(Layer::rgb(names[0], &filled(&photons.caustic_part, pixels)))
            }
            Aov::Seeds => layers.push(Layer::scalar(
                names[0],
                "count",
                &if photons.seeds.is_empty() {
                    vec![0.0; pixels]
                } else {
                    photons.seeds.clone()
                },
            )),
        }
    }
    layers
}

/// `values`, or zeros for `n` pixels when a component was not made (the Whitted integrator).
fn filled(values: &[Vec3], n: usize) -> Vec<Vec3> {
    if values.is_empty() {
        vec![Vec3::ZERO; n]
    } else {
        values.to_vec()
    }
}
