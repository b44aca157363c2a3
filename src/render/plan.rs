//! The plan of a frame: the passes its camera samples are split into, so that every pass fits
//! the device's buffers, and the photon maps the frame needs (traced once, whatever the passes).
//!
//! A frame's camera rays are numbered as the GPU's `primary` kernel lays them out: the image is
//! cut into 8×8 tiles, numbered row by row, and a tile's 64 pixels are in Morton order; each
//! pixel's samples are consecutive. A pass takes a range of tiles and a range of samples: its
//! rays are `tiles × 64 × samples` slots. Passes are cut by samples first (every pass covers the
//! whole image) and by tiles only when one sample of the whole image is already too many rays.
//! The image is the sum over passes of each pass's samples divided by the frame's `spp`, so it
//! does not depend on how the frame was cut, up to the order of float additions.
//!
//! Both backends run the same plan: the GPU cuts it from its binding limit (and splits a pass
//! again when a deeper level of the shade trees outgrows a binding: "report the size, split,
//! retry"), the CPU twin takes the cut it is given (`RenderOptions::max_pass_rays`).

use crate::render::photons::PhotonPass;
use crate::scene::{Aov, Integrator, Scene};

/// Side of the square tiles that camera rays are grouped in.
pub const TILE_SIDE: u32 = 8;
/// Pixels of one tile.
pub const TILE_PIXELS: u32 = TILE_SIDE * TILE_SIDE;

/// One pass: samples `sample_start..sample_start + samples` of the pixels of tiles
/// `tile_start..tile_start + tiles`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PassPlan {
    pub sample_start: u32,
    pub samples: u32,
    pub tile_start: u32,
    pub tiles: u32,
}

impl PassPlan {
    /// Camera-ray slots of the pass (padding pixels of partial tiles included).
    pub fn ray_slots(&self) -> u64 {
        self.tiles as u64 * TILE_PIXELS as u64 * self.samples as u64
    }

    /// The pass cut in two halves (by samples while it has several, else by tiles), or `None`
    /// when it is one sample of one tile and cannot be cut.
    pub fn split(&self) -> Option<(PassPlan, PassPlan)> {
        if self.samples > 1 {
            let a = self.samples / 2;
            Some((
                PassPlan {
                    samples: a,
                    ..*self
                },
                PassPlan {
                    sample_start: self.sample_start + a,
                    samples: self.samples - a,
                    ..*self
                },
            ))
        } else if self.tiles > 1 {
            let a = self.tiles / 2;
            Some((
                PassPlan { tiles: a, ..*self },
                PassPlan {
                    tile_start: self.tile_start + a,
                    tiles: self.tiles - a,
                    ..*self
                },
            ))
        } else {
            None
        }
    }

    /// Whether pixel (`px`, `py`) of an image `width` wide lies in the pass's tiles.
    pub fn covers_pixel(&self, px: u32, py: u32, width: u32) -> bool {
        let tile = tile_of_pixel(px, py, width);
        (self.tile_start..self.tile_start + self.tiles).contains(&tile)
    }
}

/// The pixel (row-major index) and frame sample of camera slot `slot` of `pass`, or `None` for
/// a padding slot outside the image: the layout of `shaders/whitted/primary.wgsl`.
pub fn pass_slot(pass: &PassPlan, slot: u64, width: u32, height: u32) -> Option<(u32, u32)> {
    let samples = pass.samples.max(1) as u64;
    let (pixel_slot, s) = (slot / samples, (slot % samples) as u32);
    let tile = pass.tile_start + (pixel_slot / TILE_PIXELS as u64) as u32;
    let (lx, ly) = crate::accel::vd_patch::morton_decode((pixel_slot % TILE_PIXELS as u64) as u32);
    let tiles_x = tiles_across(width);
    let (px, py) = (
        (tile % tiles_x) * TILE_SIDE + lx,
        (tile / tiles_x) * TILE_SIDE + ly,
    );
    (px < width && py < height).then_some((py * width + px, pass.sample_start + s))
}

/// Tiles across an image `width` pixels wide.
pub fn tiles_across(width: u32) -> u32 {
    width.max(1).div_ceil(TILE_SIDE)
}

/// Tiles of a `width` × `height` image.
pub fn tile_count(width: u32, height: u32) -> u32 {
    tiles_across(width) * height.max(1).div_ceil(TILE_SIDE)
}

/// The tile (row-major) that holds pixel (`px`, `py`).
pub fn tile_of_pixel(px: u32, py: u32, width: u32) -> u32 {
    (py / TILE_SIDE) * tiles_across(width) + px / TILE_SIDE
}

/// The run of consecutive tiles (first tile, count) a frame's passes cover: every tile, or
/// with a crop `[x0, y0, x1, y1)` the run from the crop's first tile to its last (the camera
/// kernel gives no ray to the pixels outside the crop, so the tiles between the crop's rows cost
/// only their empty slots, and the frame stays one pass where the crop fits one). Empty for a
/// crop without pixels.
pub fn tile_run(width: u32, height: u32, crop: Option<[u32; 4]>) -> (u32, u32) {
    let Some([x0, y0, x1, y1]) = crop else {
        return (0, tile_count(width, height));
    };
    let (x1, y1) = (x1.min(width), y1.min(height));
    if x0 >= x1 || y0 >= y1 {
        return (0, 0);
    }
    let first = tile_of_pixel(x0, y0, width);
    (first, tile_of_pixel(x1 - 1, y1 - 1, width) - first + 1)
}

/// The passes and photon maps of one frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FramePlan {
    pub passes: Vec<PassPlan>,
    /// Tiles of the whole image.
    pub tiles: u32,
    /// The frame's samples per pixel (the sum of every pixel's passes' samples).
    pub spp: u32,
    /// Whether the frame traces the global map (photon mapping, or its debug view).
    pub global_map: bool,
    /// Whether the frame traces the caustic map.
    pub caustic_map: bool,
}

impl FramePlan {
    /// Cuts `scene`'s frame into passes of at most `max_pass_rays` camera-ray slots (at least
    /// one sample of one tile, whatever the limit).
    pub fn new(scene: &Scene, max_pass_rays: u64) -> FramePlan {
        let (width, height) = (scene.film.width.max(1), scene.film.height.max(1));
        let spp = scene.film.spp.max(1);
        let tiles = tile_count(width, height);
        let (first_tile, run) = tile_run(width, height, scene.film.crop_pixels());
        let run_slots = run.max(1) as u64 * TILE_PIXELS as u64;
        let samples_per_pass = (max_pass_rays / run_slots).min(spp as u64) as u32;
        // A crop without pixels has no pass.
        let mut passes = Vec::new();
        if run > 0 && samples_per_pass >= 1 {
            let mut s = 0;
            while s < spp {
                let n = samples_per_pass.min(spp - s);
                passes.push(PassPlan {
                    sample_start: s,
                    samples: n,
                    tile_start: first_tile,
                    tiles: run,
                });
                s += n;
            }
        } else if run > 0 {
            let tiles_per_pass = ((max_pass_rays / TILE_PIXELS as u64) as u32).clamp(1, run);
            for s in 0..spp {
                let mut t = 0;
                while t < run {
                    let n = tiles_per_pass.min(run - t);
                    passes.push(PassPlan {
                        sample_start: s,
                        samples: 1,
                        tile_start: first_tile + t,
                        tiles: n,
                    });
                    t += n;
                }
            }
        }
        let photon_map = scene.film.integrator == Integrator::PhotonMap;
        let layers = &scene.output.layers;
        FramePlan {
            passes,
            tiles,
            spp,
            global_map: photon_map || layers.contains(&Aov::PhotonsGlobal),
            caustic_map: photon_map || layers.contains(&Aov::PhotonsCaustic),
        }
    }
}

impl FramePlan {
    /// The photon maps the frame traces, with their photon counts from `scene`.
    pub fn photon_passes(&self, scene: &Scene) -> Vec<(PhotonPass, u32)> {
        let mut passes = Vec::new();
        if self.global_map {
            passes.push((PhotonPass::Global, scene.photons.global));
        }
        if self.caustic_map {
            passes.push((PhotonPass::Caustic, scene.photons.caustic));
        }
        passes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scene(width: u32, height: u32, spp: u32) -> Scene {
        let mut s = Scene::default();
        s.film.width = width;
        s.film.height = height;
        s.film.spp = spp;
        s
    }

    #[test]
    fn a_crop_plans_the_run_of_its_tiles_each_sample_once() {
        let mut s = scene(40, 24, 3);
        // Pixels 10..30 × 9..17: tile columns 1..4 of tile rows 1..3 (3 × 2 tiles).
        s.film.crop = Some(crate::scene::CropWindow::new(0.25, 0.75, 0.375, 0.7).unwrap());
        assert_eq!(s.film.crop_pixels(), Some([10, 9, 30, 17]));
        // The run from the crop's first tile (6) to its last (13).
        assert_eq!(tile_run(40, 24, s.film.crop_pixels()), (6, 8));
        for limit in [u64::MAX, 64 * 3, 64] {
            let plan = FramePlan::new(&s, limit);
            let mut seen = std::collections::HashMap::new();
            for p in &plan.passes {
                for t in p.tile_start..p.tile_start + p.tiles {
                    for k in p.sample_start..p.sample_start + p.samples {
                        *seen.entry((t, k)).or_insert(0) += 1;
                    }
                }
            }
            let expected: Vec<_> = (6..14).flat_map(|t| (0..3).map(move |k| (t, k))).collect();
            assert_eq!(seen.len(), expected.len(), "limit {limit}");
            assert!(
                expected.iter().all(|k| seen.get(k) == Some(&1)),
                "limit {limit}"
            );
        }
        // A crop as wide as the image is its rows of tiles.
        assert_eq!(tile_run(40, 24, Some([0, 9, 40, 17])), (5, 10));
        assert_eq!(tile_run(40, 24, Some([3, 3, 3, 9])), (0, 0));
    }

    /// Every (tile, sample) of the frame appears in exactly one pass.
    fn assert_exact_cover(plan: &FramePlan) {
        let mut seen = vec![0u32; (plan.tiles * plan.spp) as usize];
        for p in &plan.passes {
            for t in p.tile_start..p.tile_start + p.tiles {
                for s in p.sample_start..p.sample_start + p.samples {
                    seen[(t * plan.spp + s) as usize] += 1;
                }
            }
        }
        assert!(seen.iter().all(|&n| n == 1), "{plan:?}");
    }

    #[test]
    fn a_frame_that_fits_is_one_pass() {
        let plan = FramePlan::new(&scene(64, 48, 16), u64::MAX);
        assert_eq!(plan.passes.len(), 1);
        assert_eq!(plan.passes[0].ray_slots(), 64 * 48 * 16);
        assert_exact_cover(&plan);
    }

    #[test]
    fn passes_cut_samples_first_and_stay_under_the_ray_limit() {
        // 256² at 32 spp with room for 5 samples of the image per pass.
        let limit = 256 * 256 * 5 + 17;
        let plan = FramePlan::new(&scene(256, 256, 32), limit);
        assert_eq!(plan.passes.len(), 7);
        assert!(plan.passes.iter().all(|p| p.ray_slots() <= limit));
        assert!(plan.passes.iter().all(|p| p.tiles == plan.tiles));
        assert_exact_cover(&plan);
    }

    #[test]
    fn passes_cut_tiles_when_one_sample_of_the_image_is_too_many_rays() {
        let plan = FramePlan::new(&scene(100, 70, 3), 64 * 20);
        assert!(plan.passes.iter().all(|p| p.ray_slots() <= 64 * 20));
        // 13 × 9 = 117 tiles, 20 a pass: 6 passes for each of the 3 samples.
        assert_eq!(plan.tiles, 117);
        assert_eq!(plan.passes.len(), 18);
        assert_exact_cover(&plan);
    }

    #[test]
    fn a_pass_splits_into_two_halves_that_cover_it() {
        let p = PassPlan {
            sample_start: 4,
            samples: 5,
            tile_start: 0,
            tiles: 9,
        };
        let (a, b) = p.split().unwrap();
        assert_eq!(
            (a.sample_start, a.samples, b.sample_start, b.samples),
            (4, 2, 6, 3)
        );
        let q = PassPlan { samples: 1, ..p };
        let (a, b) = q.split().unwrap();
        assert_eq!((a.tile_start, a.tiles, b.tile_start, b.tiles), (0, 4, 4, 5));
        let single = PassPlan { tiles: 1, ..q };
        assert_eq!(single.split(), None);
    }

    #[test]
    fn the_slots_of_a_frames_passes_name_each_pixel_sample_once() {
        let (w, h) = (21, 13);
        let plan = FramePlan::new(&scene(w, h, 3), 64 * 5);
        let mut seen = vec![0u32; (w * h * 3) as usize];
        for p in &plan.passes {
            for slot in 0..p.ray_slots() {
                if let Some((pixel, s)) = pass_slot(p, slot, w, h) {
                    assert!(p.covers_pixel(pixel % w, pixel / w, w));
                    seen[(pixel * 3 + s) as usize] += 1;
                }
            }
        }
        assert!(seen.iter().all(|&n| n == 1));
    }

    #[test]
    fn pixels_belong_to_the_tiles_of_their_pass() {
        let p = PassPlan {
            sample_start: 0,
            samples: 1,
            tile_start: 3,
            tiles: 2,
        };
        // 40 pixels wide: 5 tiles a row; tiles 3 and 4 are the last two of the first row.
        assert!(p.covers_pixel(24, 0, 40));
        assert!(p.covers_pixel(39, 7, 40));
        assert!(!p.covers_pixel(23, 0, 40));
        assert!(!p.covers_pixel(24, 8, 40));
    }
}
