//! How much one frame may ask for: the limits on its image, camera rays, photons and gather
//! rays, each defined here once and checked before anything is allocated. The language checks
//! them at the value's place (`lang::eval`); `api::evaluate_frame` checks the evaluated scene
//! again after the command line's overrides (`--resolution`, `--spp`, `--quality`).
//!
//! Work within them splits into passes that fit the device (`render::plan`); beyond them a
//! frame would not fit any machine's memory, or would run for days.

use super::Scene;

/// The most pixels an image may have: 2²⁸, a 16384 × 16384 frame, whose colour and layers
/// take a few GiB.
pub const MAX_PIXELS: u64 = 1 << 28;

/// The most samples per pixel: 2²⁴ (Cycles' limit too). More converge further through
/// progressive passes (`film { passes }`).
pub const MAX_SPP: u64 = 1 << 24;

/// The most camera rays (pixels × samples per pixel) one frame, or one progressive pass of a
/// still, traces: 2⁴⁰, about 1.1 × 10¹² (an 8K frame at 32768 samples per pixel).
pub const MAX_CAMERA_RAYS: u64 = 1 << 40;

/// The most photons one map may emit: 2²⁶, as many as one 2 GiB storage binding holds at
/// 32 bytes a photon.
pub const MAX_PHOTONS: u64 = 1 << 26;

/// The most gather rays per irradiance sample.
pub const MAX_GATHER_RAYS: u64 = 1 << 16;

/// The most gather rays (irradiance samples × rays each) one frame traces.
pub const MAX_FRAME_GATHER_RAYS: u64 = 1 << 40;

/// Whether a `width` × `height` image is within [`MAX_PIXELS`].
pub fn image(width: u32, height: u32) -> Result<(), String> {
    let pixels = width as u64 * height as u64;
    if pixels > MAX_PIXELS {
        return Err(format!(
            "a {width}x{height} image has {pixels} pixels, more than the {MAX_PIXELS} \
             (16384x16384) a frame may have"
        ));
    }
    Ok(())
}

/// Whether `spp` samples per pixel of a `width` × `height` image are within
/// [`MAX_CAMERA_RAYS`].
pub fn camera_rays(width: u32, height: u32, spp: u32) -> Result<(), String> {
    let rays = width as u64 * height as u64 * spp as u64;
    if rays > MAX_CAMERA_RAYS {
        return Err(format!(
            "{width}x{height} pixels at {spp} samples each are {rays} camera rays, more than the \
             {MAX_CAMERA_RAYS} one frame may trace"
        ));
    }
    Ok(())
}

/// Whether `seeds` irradiance samples of `rays` gather rays each are within
/// [`MAX_FRAME_GATHER_RAYS`].
pub fn gather_rays(seeds: u32, rays: u32) -> Result<(), String> {
    let total = seeds as u64 * rays as u64;
    if total > MAX_FRAME_GATHER_RAYS {
        return Err(format!(
            "{seeds} irradiance samples of {rays} gather rays each are {total} gather rays, more \
             than the {MAX_FRAME_GATHER_RAYS} one frame may trace"
        ));
    }
    Ok(())
}

/// Every limit on an evaluated scene: the first one it exceeds.
pub fn check(scene: &Scene) -> Result<(), String> {
    let film = &scene.film;
    image(film.width, film.height)?;
    camera_rays(film.width, film.height, film.spp)?;
    for (map, count) in [
        ("global", scene.photons.global),
        ("caustic", scene.photons.caustic),
    ] {
        if count as u64 > MAX_PHOTONS {
            return Err(format!(
                "{count} photons in the {map} map are more than the {MAX_PHOTONS} one map may hold"
            ));
        }
    }
    if scene.gather.rays as u64 > MAX_GATHER_RAYS {
        return Err(format!(
            "{} gather rays per irradiance sample are more than the {MAX_GATHER_RAYS} allowed",
            scene.gather.rays
        ));
    }
    gather_rays(scene.gather.seeds, scene.gather.rays)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limits_take_their_largest_value_and_refuse_the_next() {
        assert!(image(16384, 16384).is_ok());
        assert!(image(16384, 16385).is_err());
        assert!(camera_rays(1024, 1024, 1 << 20).is_ok());
        assert!(camera_rays(1024, 1024, (1 << 20) + 1).is_err());
        assert!(gather_rays(1 << 24, 1 << 16).is_ok());
        assert!(gather_rays((1 << 24) + 1, 1 << 16).is_err());
    }
}
