//! Writes `scenes/maps/sky.exr`, the procedural latitude-longitude sky of the environment-light
//! examples (conventions of `caustica::scene::environment`: +Y up, row 0 the zenith).
//!
//! `cargo run --release --example make_sky -- [OUT.exr] [--width W]`
//!
//! The sky is a clear afternoon's in broad strokes, not a physical sky model: blue at the
//! zenith brightening to a pale horizon, a glow a few degrees around the sun's direction (the
//! sun itself is a `light sun`, whose 0.53° disk a map cannot hold), and below the horizon a
//! dim ground that reflects the sky. Half floats, 2:1.

use std::path::PathBuf;

use caustica::scene::environment::{lat_long_direction, luminance};
use exr::prelude::f16;
use glam::{Vec2, Vec3};

/// Towards the sun (the same as `scenes/environment.csc`'s `light sun`, reversed).
const SUN: Vec3 = Vec3::new(-0.8, 0.55, 0.25);

fn sky(d: Vec3) -> Vec3 {
    let sun = SUN.normalize();
    let zenith = Vec3::new(0.18, 0.32, 0.75);
    let horizon = Vec3::new(0.75, 0.8, 0.85);
    if d.y >= 0.0 {
        // Blue overhead, paler towards the horizon.
        let t = (1.0 - d.y).powi(3);
        let base = zenith.lerp(horizon, t);
        // The circumsolar glow: bright within a few degrees, falling off over tens.
        let cos = d.dot(sun).clamp(-1.0, 1.0);
        let angle = cos.acos().to_degrees();
        let glow = 12.0 * (-angle / 3.0).exp() + 0.6 * (-angle / 25.0).exp();
        base + Vec3::new(1.0, 0.9, 0.75) * glow
    } else {
        // Ground: a dim, warm grey that fades into the horizon's haze.
        let t = (-d.y).min(1.0).powf(0.3);
        horizon.lerp(Vec3::new(0.16, 0.14, 0.12), t) * 0.5
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let width: usize = args
        .iter()
        .position(|a| a == "--width")
        .and_then(|i| args.get(i + 1))
        .and_then(|w| w.parse().ok())
        .unwrap_or(256);
    let out = args
        .iter()
        .find(|a| !a.starts_with("--") && a.parse::<usize>().is_err())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("scenes/maps/sky.exr"));
    let height = width / 2;
    let texel = |x: usize, y: usize| {
        let uv = Vec2::new(
            (x as f32 + 0.5) / width as f32,
            (y as f32 + 0.5) / height as f32,
        );
        sky(lat_long_direction(uv))
    };
    exr::prelude::write_rgb_file(&out, width, height, |x, y| {
        let c = texel(x, y);
        (f16::from_f32(c.x), f16::from_f32(c.y), f16::from_f32(c.z))
    })
    .unwrap_or_else(|e| {
        eprintln!("make_sky: {}: {e}", out.display());
        std::process::exit(1);
    });
    let brightest = (0..width * height)
        .map(|i| luminance(texel(i % width, i / width)))
        .fold(0.0f32, f32::max);
    println!(
        "wrote {} ({width}x{height}, brightest luminance {brightest:.2})",
        out.display()
    );
}
