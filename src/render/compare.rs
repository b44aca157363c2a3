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

/// Each pixel's relative squared error, averaged over its channels (the summand of the
/// relative MSE; a non-finite value counts 1). `image` and `reference` have the same size.
pub fn pixel_errors(image: &[Vec3], reference: &[Vec3]) -> Vec<f32> {
    image
        .iter()
        .zip(reference)
        .map(|(x, r)| {
            (0..3)
                .map(|c| {
                    let (a, b) = (x[c], r[c]);
                    if a.is_finite() && b.is_finite() {
                        (a - b).powi(2) / (b * b + RELMSE_EPSILON)
                    } else {
                        1.0
                    }
                })
                .sum::<f32>()
                / 3.0
        })
        .collect()
}

/// The false colour of a relative squared error `e`: black at 1e-5 and below, then through
/// blue, cyan, green and yellow to red at 1 and above, evenly in log10(e) (one colour stop a
/// decade); NaN is red.
pub fn false_colour(e: f32) -> [u8; 3] {
    const STOPS: [[f32; 3]; 6] = [
        [0.0, 0.0, 0.0],
        [0.0, 0.0, 1.0],
        [0.0, 1.0, 1.0],
        [0.0, 1.0, 0.0],
        [1.0, 1.0, 0.0],
        [1.0, 0.0, 0.0],
    ];
    let t = if e.is_nan() {
        1.0
    } else {
        ((e.max(1e-5).log10() + 5.0) / 5.0).clamp(0.0, 1.0)
    };
    let x = t * (STOPS.len() - 1) as f32;
    let i = (x as usize).min(STOPS.len() - 2);
    let f = x - i as f32;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    [0, 1, 2].map(|c| ((a[c] + (b[c] - a[c]) * f) * 255.0).round() as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pixel_errors_average_to_the_relmse_and_false_colour_runs_black_to_red() {
        let r = vec![Vec3::splat(2.0), Vec3::splat(1.0), Vec3::ZERO];
        let x = vec![
            Vec3::splat(2.2),
            Vec3::splat(1.0),
            Vec3::new(f32::NAN, 0.0, 0.0),
        ];
        let e = pixel_errors(&x, &r);
        assert!((e[0] - 0.04 / 4.01).abs() < 1e-6);
        assert_eq!(e[1], 0.0);
        assert!((e[2] - 1.0 / 3.0).abs() < 1e-6);
        let relmse = compare(&x, &r, 3, &[]).unwrap().relmse;
        let mean = e.iter().map(|&v| v as f64).sum::<f64>() / 3.0;
        assert!((relmse - mean).abs() < 1e-6, "{relmse} vs {mean}");
        assert_eq!(false_colour(0.0), [0, 0, 0]);
        assert_eq!(false_colour(1e-4), [0, 0, 255]);
        assert_eq!(false_colour(1.0), [255, 0, 0]);
        assert_eq!(false_colour(50.0), [255, 0, 0]);
        assert_eq!(false_colour(f32::NAN), [255, 0, 0]);
    }

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
