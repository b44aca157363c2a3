//! Image comparison against a reference: the relative mean squared error of Rousselle et al.
//! (`(x − r)² / (r² + ε)` averaged over pixels and channels, ε = 0.01), over the whole image
//! or outside excluded rectangles (a caustic the reference renders differently, say).

use glam::Vec3;

/// The ε of the relative MSE: keeps dark reference pixels from dominating.
pub const RELMSE_EPSILON: f32 = 0.01;

/// A pixel rectangle `[x0, x1) × [y0, y1)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rect {
    pub x0: u32,
    pub y0: u32,
    pub x1: u32,
    pub y1: u32,
}

impl Rect {
    pub fn contains(&self, x: u32, y: u32) -> bool {
        x >= self.x0 && x < self.x1 && y >= self.y0 && y < self.y1
    }
}

/// What a comparison found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Comparison {
    /// Relative MSE over the pixels compared.
    pub relmse: f64,
    /// Mean of the image and of the reference over the pixels compared (per channel).
    pub mean: Vec3,
    pub reference_mean: Vec3,
    pub pixels: usize,
}

/// Compares `image` with `reference` (both `width` pixels wide, rows from the top), skipping
/// the pixels inside `excluded`. Non-finite values count as an error of 1 per channel.
pub fn compare(
    image: &[Vec3],
    reference: &[Vec3],
    width: u32,
    excluded: &[Rect],
) -> Result<Comparison, String> {
    if image.len() != reference.len() {
        return Err(format!(
            "the images differ in size: {} and {} pixels",
            image.len(),
            reference.len()
        ));
    }
    let (mut sum, mut mean, mut reference_mean, mut pixels) = (0.0f64, Vec3::ZERO, Vec3::ZERO, 0);
    for (i, (x, r)) in image.iter().zip(reference).enumerate() {
        let (px, py) = (i as u32 % width.max(1), i as u32 / width.max(1));
        if excluded.iter().any(|e| e.contains(px, py)) {
            continue;
        }
        for c in 0..3 {
            let (a, b) = (x[c], r[c]);
            sum += if a.is_finite() && b.is_finite() {
                ((a - b) as f64).powi(2) / (b as f64 * b as f64 + RELMSE_EPSILON as f64)
            } else {
                1.0
            };
        }
        mean += *x;
        reference_mean += *r;
        pixels += 1;
    }
    if pixels == 0 {
        return Err("every pixel is excluded".into());
    }
    Ok(Comparison {
        relmse: sum / (3 * pixels) as f64,
        mean: mean / pixels as f32,
        reference_mean: reference_mean / pixels as f32,
        pixels,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relmse_is_zero_for_equal_images_and_scales_with_relative_error() {
        let r = vec![Vec3::splat(2.0); 4];
        assert_eq!(compare(&r, &r, 2, &[]).unwrap().relmse, 0.0);
        let x = vec![Vec3::splat(2.2); 4];
        let c = compare(&x, &r, 2, &[]).unwrap();
        assert!((c.relmse - 0.04 / 4.01).abs() < 1e-6, "{}", c.relmse);
        // Excluding the only differing pixel leaves no error.
        let mut y = r.clone();
        y[3] = Vec3::splat(9.0);
        let e = Rect {
            x0: 1,
            y0: 1,
            x1: 2,
            y1: 2,
        };
        assert_eq!(compare(&y, &r, 2, &[e]).unwrap().relmse, 0.0);
        assert!(compare(&y, &r, 2, &[]).unwrap().relmse > 0.0);
        assert!(compare(&y[..3], &r, 2, &[]).is_err());
    }
}
