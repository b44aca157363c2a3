//! The environment light: radiance arriving from infinitely far away in every direction, from a
//! latitude-longitude map, sampled in proportion to its luminance.
//!
//! The map's conventions are Mitsuba 3's `envmap`, so that a scene exported to Mitsuba sees the
//! same sky: in map space +Y is up, a direction `d` is at `u = atan2(d.x, −d.z) / 2π` (wrapped to
//! [0, 1)) and `v = acos(d.y) / π`, and row 0 of the image is `v = 0` (the zenith). Radiance is
//! looked up bilinearly between texel centres, wrapping around in `u` and clamped in `v`.
//!
//! Sampling follows a piecewise-constant distribution over the texels (Pharr, Jakob and
//! Humphreys, *PBR* 4th ed., 12.5): each texel weighs the largest luminance of its 3×3
//! neighbourhood (so that every direction the bilinear lookup gives light can be chosen) times
//! `sin θ` at its row's centre, the marginal CDF picks a row and the row's conditional CDF a
//! texel. Both backends sample with the same `f32` CDFs (`shaders/shared/environment.wgsl`).

use std::f32::consts::PI;
use std::sync::Arc;

use glam::{Mat3, Vec2, Vec3};

use super::{bilinear_texels, pick_by_cdf, TextureImage};

/// The size of the map that stands for a uniform environment (`light environment { radiance }`):
/// a few rows, so that the rows' `sin θ` shapes the sampling.
pub const UNIFORM_MAP_SIZE: (u32, u32) = (8, 16);

/// A latitude-longitude radiance map with its sampling distribution.
#[derive(Clone, Default, PartialEq)]
pub struct EnvMap {
    pub width: u32,
    pub height: u32,
    /// Radiance, linear RGB, rows from the top (negative and non-finite values read as 0).
    pub texels: Vec<Vec3>,
    /// Per row, the fraction of the row's weight up to and including each texel
    /// (`width × height`, each row ending at 1).
    pub conditional: Vec<f32>,
    /// The fraction of the map's weight up to and including each row (ending at 1).
    pub marginal: Vec<f32>,
    /// `∫ L dω` over the sphere, per channel (the texels' radiance times their solid angle).
    pub integral: Vec3,
}

impl std::fmt::Debug for EnvMap {
    /// The size and the integral, not every texel.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "EnvMap {{ {}x{}, integral {} }}",
            self.width, self.height, self.integral
        )
    }
}

/// Rec. 709 luminance of linear RGB.
pub fn luminance(c: Vec3) -> f32 {
    0.2126 * c.x + 0.7152 * c.y + 0.0722 * c.z
}

/// Map coordinates of a unit map-space direction. Twin of `env_uv` in
/// `shaders/shared/environment.wgsl`.
pub fn lat_long_uv(d: Vec3) -> Vec2 {
    let mut u = d.x.atan2(-d.z) * (0.5 / PI);
    if u < 0.0 {
        u += 1.0;
    }
    Vec2::new(u, d.y.clamp(-1.0, 1.0).acos() / PI)
}

/// The unit map-space direction of map coordinates `uv`. Twin of `env_direction`.
pub fn lat_long_direction(uv: Vec2) -> Vec3 {
    let (sin_phi, cos_phi) = (2.0 * PI * uv.x).sin_cos();
    let (sin_theta, cos_theta) = (PI * uv.y).sin_cos();
    Vec3::new(sin_phi * sin_theta, cos_theta, -cos_phi * sin_theta)
}

impl EnvMap {
    /// The map of `image` with its sampling distribution.
    pub fn new(image: &TextureImage) -> EnvMap {
        let (width, height) = (image.width.max(1), image.height.max(1));
        let texels: Vec<Vec3> = if image.texels.len() == (width * height) as usize {
            image
                .texels
                .iter()
                .map(|c| {
                    let c = Vec3::select(c.is_finite_mask(), *c, Vec3::ZERO);
                    c.max(Vec3::ZERO)
                })
                .collect()
        } else {
            vec![Vec3::ZERO; (width * height) as usize]
        };
        let (w, h) = (width as usize, height as usize);
        let lum: Vec<f32> = texels.iter().map(|c| luminance(*c)).collect();
        let mut conditional = vec![0.0f32; w * h];
        let mut row_sums = vec![0.0f64; h];
        let mut integral = [0.0f64; 3];
        let texel_solid_angle = (2.0 * PI as f64 / w as f64) * (PI as f64 / h as f64);
        for y in 0..h {
            let sin_theta = (PI as f64 * (y as f64 + 0.5) / h as f64).sin();
            let mut weights = Vec::with_capacity(w);
            for x in 0..w {
                let mut m = 0.0f32;
                for dy in [-1i64, 0, 1] {
                    let yy = (y as i64 + dy).clamp(0, h as i64 - 1) as usize;
                    for dx in [-1i64, 0, 1] {
                        let xx = (x as i64 + dx).rem_euclid(w as i64) as usize;
                        m = m.max(lum[yy * w + xx]);
                    }
                }
                weights.push(m as f64 * sin_theta);
                let c = texels[y * w + x];
                for (k, channel) in [c.x, c.y, c.z].into_iter().enumerate() {
                    integral[k] += channel as f64 * sin_theta * texel_solid_angle;
                }
            }
            let sum: f64 = weights.iter().sum();
            row_sums[y] = sum;
            let row = &mut conditional[y * w..(y + 1) * w];
            let mut running = 0.0f64;
            for (x, weight) in weights.iter().enumerate() {
                running += weight;
                row[x] = if sum > 0.0 {
                    (running / sum) as f32
                } else {
                    (x + 1) as f32 / w as f32
                };
            }
            row[w - 1] = 1.0;
        }
        let total: f64 = row_sums.iter().sum();
        let mut marginal = vec![0.0f32; h];
        let mut running = 0.0f64;
        for (y, sum) in row_sums.iter().enumerate() {
            running += sum;
            marginal[y] = if total > 0.0 {
                (running / total) as f32
            } else {
                0.0
            };
        }
        if total > 0.0 {
            marginal[h - 1] = 1.0;
        }
        EnvMap {
            width,
            height,
            texels,
            conditional,
            marginal,
            integral: Vec3::new(integral[0] as f32, integral[1] as f32, integral[2] as f32),
        }
    }

    /// A map of constant `radiance` ([`UNIFORM_MAP_SIZE`]).
    pub fn uniform(radiance: Vec3) -> EnvMap {
        let (width, height) = UNIFORM_MAP_SIZE;
        EnvMap::new(&TextureImage {
            width,
            height,
            texels: vec![radiance; (width * height) as usize],
        })
    }

    /// Whether the map gives any light (a black map is sampled never).
    pub fn emits(&self) -> bool {
        self.marginal.last().is_some_and(|&m| m > 0.0)
    }

    /// Radiance arriving from unit map-space direction `d`. Twin of `env_lookup`.
    pub fn lookup(&self, d: Vec3) -> Vec3 {
        let uv = lat_long_uv(d);
        let (w, h) = (self.width as i64, self.height as i64);
        bilinear_texels(
            uv.x * self.width as f32,
            uv.y * self.height as f32,
            |xi, yi| {
                let xi = xi.rem_euclid(w) as usize;
                let yi = yi.clamp(0, h - 1) as usize;
                self.texels[yi * self.width as usize + xi]
            },
        )
    }

    /// The probability of texel (`x`, `y`) among all.
    fn texel_probability(&self, x: usize, y: usize) -> f32 {
        let w = self.width as usize;
        let row = self.marginal[y] - if y > 0 { self.marginal[y - 1] } else { 0.0 };
        let c = &self.conditional[y * w..(y + 1) * w];
        let column = c[x] - if x > 0 { c[x - 1] } else { 0.0 };
        row * column
    }

    /// A map-space direction chosen from two uniform numbers (`u.y` picks the row, `u.x` the
    /// texel in it) and its probability density per unit solid angle; `None` when the map is
    /// black or the direction is a pole. Twin of `env_sample`.
    pub fn sample(&self, u: Vec2) -> Option<(Vec3, f32)> {
        if !self.emits() {
            return None;
        }
        let (w, h) = (self.width as usize, self.height as usize);
        let (y, fy) = pick_by_cdf(h, |k| self.marginal[k], u.y);
        let row = &self.conditional[y * w..(y + 1) * w];
        let (x, fx) = pick_by_cdf(w, |k| row[k], u.x);
        let p = self.texel_probability(x, y);
        let uv = Vec2::new(
            (x as f32 + fx) / self.width as f32,
            (y as f32 + fy) / self.height as f32,
        );
        let sin_theta = (PI * uv.y).sin();
        if !(p > 0.0 && sin_theta > 0.0) {
            return None;
        }
        let pdf = p * (self.width * self.height) as f32 / (2.0 * PI * PI * sin_theta);
        Some((lat_long_direction(uv), pdf))
    }

    /// The density per unit solid angle with which [`EnvMap::sample`] chooses unit map-space
    /// direction `d`.
    pub fn pdf(&self, d: Vec3) -> f32 {
        if !self.emits() {
            return 0.0;
        }
        let uv = lat_long_uv(d);
        let x = ((uv.x * self.width as f32) as usize).min(self.width as usize - 1);
        let y = ((uv.y * self.height as f32) as usize).min(self.height as usize - 1);
        let sin_theta = (PI * uv.y).sin();
        if sin_theta <= 0.0 {
            return 0.0;
        }
        self.texel_probability(x, y) * (self.width * self.height) as f32
            / (2.0 * PI * PI * sin_theta)
    }
}

/// An environment light: `map` turned by `to_world` (map space to world space, a rotation) and
/// scaled by `scale`, with `samples` shadow rays per shading point.
#[derive(Clone, Debug, PartialEq)]
pub struct Environment {
    pub map: Arc<EnvMap>,
    pub scale: f32,
    pub to_world: Mat3,
    pub samples: u32,
}

/// A direction chosen towards an environment: unit world direction, the radiance arriving
/// along it, and the density per unit solid angle it was chosen with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EnvSample {
    pub dir: Vec3,
    pub radiance: Vec3,
    pub pdf: f32,
}

impl Environment {
    /// Radiance arriving from unit world direction `dir` (towards the sky).
    pub fn radiance(&self, dir: Vec3) -> Vec3 {
        self.map.lookup(self.to_world.transpose() * dir) * self.scale
    }

    /// A direction towards the sky from two uniform numbers ([`EnvMap::sample`]).
    pub fn sample(&self, u: Vec2) -> Option<EnvSample> {
        let (d, pdf) = self.map.sample(u)?;
        Some(EnvSample {
            dir: self.to_world * d,
            radiance: self.map.lookup(d) * self.scale,
            pdf,
        })
    }

    /// `∫ L dω` over the sphere, per channel.
    pub fn integral(&self) -> Vec3 {
        self.map.integral * self.scale
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sky() -> EnvMap {
        let (width, height) = (32u32, 16u32);
        let texels = (0..width * height)
            .map(|i| {
                let (x, y) = (i % width, i / width);
                // A bright blob, a dim sky and a black lower half.
                if (x, y) == (5, 3) {
                    Vec3::new(40.0, 30.0, 20.0)
                } else if y < height / 2 {
                    Vec3::new(0.2, 0.3, 0.5 + x as f32 * 0.01)
                } else {
                    Vec3::ZERO
                }
            })
            .collect();
        EnvMap::new(&TextureImage {
            width,
            height,
            texels,
        })
    }

    #[test]
    fn lat_long_direction_and_uv_invert_each_other() {
        for uv in [
            Vec2::new(0.1, 0.2),
            Vec2::new(0.6, 0.7),
            Vec2::new(0.95, 0.5),
        ] {
            let back = lat_long_uv(lat_long_direction(uv));
            assert!((back - uv).abs().max_element() < 1e-5, "{uv} → {back}");
        }
        // Mitsuba's convention: the zenith is +Y, u = 0.5 looks down +Z.
        assert!((lat_long_direction(Vec2::new(0.3, 0.0)) - Vec3::Y).length() < 1e-6);
        assert!((lat_long_direction(Vec2::new(0.5, 0.5)) - Vec3::Z).length() < 1e-6);
    }

    #[test]
    fn sampled_directions_have_the_density_pdf_reports() {
        let map = sky();
        for i in 0..200u32 {
            let u = Vec2::new((i as f32 * 0.618_034).fract(), (i as f32 + 0.5) / 200.0);
            if let Some((d, pdf)) = map.sample(u) {
                let again = map.pdf(d);
                assert!(
                    (again - pdf).abs() <= 1e-3 * pdf,
                    "sample {i}: pdf {pdf} vs {again}"
                );
            }
        }
    }

    #[test]
    fn luminance_sampling_estimates_the_maps_integral() {
        // E[L(ω) / pdf(ω)] over the samples is ∫ L dω; bilinear lookups spread the texels but
        // keep their integral up to the poles' rounding.
        let map = sky();
        let n = 256u32;
        let mut sum = Vec3::ZERO;
        for i in 0..n * n {
            let u = Vec2::new(
                ((i % n) as f32 + 0.5) / n as f32,
                ((i / n) as f32 + 0.5) / n as f32,
            );
            if let Some((d, pdf)) = map.sample(u) {
                sum += map.lookup(d) / pdf;
            }
        }
        let estimate = sum / (n * n) as f32;
        let relative = ((estimate - map.integral) / map.integral)
            .abs()
            .max_element();
        assert!(relative < 0.02, "{estimate} vs {}", map.integral);
    }

    #[test]
    fn uniform_map_integrates_to_four_pi_radiance() {
        let map = EnvMap::uniform(Vec3::splat(2.0));
        let expected = 2.0 * 4.0 * PI;
        assert!((map.integral.x - expected).abs() < 0.01 * expected);
        assert_eq!(
            map.lookup(Vec3::new(0.3, -0.9, 0.1).normalize()),
            Vec3::splat(2.0)
        );
    }

    #[test]
    fn black_map_is_never_sampled() {
        let map = EnvMap::uniform(Vec3::ZERO);
        assert!(!map.emits());
        assert_eq!(map.sample(Vec2::splat(0.5)), None);
        assert_eq!(map.pdf(Vec3::Y), 0.0);
    }
}
