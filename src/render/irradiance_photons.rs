//! Christensen's precomputed irradiance (P. H. Christensen, "Faster Photon Map Global
//! Illumination", Journal of Graphics Tools 4(3), 1999): what both backends share.
//!
//! A final gather sends hundreds of rays from every irradiance seed, and each ray's diffuse hit
//! needs the global map's irradiance there. Estimating it at every hit with the k nearest
//! photons is most of the gather's cost (2.1M k = 64 queries in the Cornell box). Instead,
//! every `stride`-th photon of the global map (`gather { precomputed_irradiance }`, in the map's
//! order, which both backends share) gets the estimate once, at its own position and with its
//! own surface normal (kept in the record's flags, `accel::photon_estimate`), counted from
//! the photons that are not irradiance photons (`irradiance_photon_estimate`, which says why). A gather hit at `x` with normal `n` then takes the irradiance of the nearest of
//! those photons whose normal agrees with `n` (`cos ≥` [`LOOKUP_MIN_COS`]) within the estimate's
//! radius (a kNN search that offers only agreeing photons, `accel::knn::knn_filtered`); none
//! gives zero, as an estimate that finds no photon does.
//!
//! The estimate moves by at most the distance to that photon, which the photon density bounds;
//! the progressive mode draws fresh photons every pass, so the displacement averages out as the
//! radius shrinks. The CPU twin is `cpu::irradiance_photons`, the GPU's `gpu::irradiance_photons`.

use glam::Vec3;

use crate::accel::photon_estimate::{coarse_octahedral_decode, PhotonRecord, PHOTON_NORMAL_SHIFT};

/// The least cosine between a gather hit's normal and an irradiance photon's normal for the
/// photon to stand for the hit (about 25°; WGSL twin in `shaders/gather/photon_lookup.wgsl`).
pub const LOOKUP_MIN_COS: f32 = 0.9;

/// How many photons of a map of `count` carry irradiance: photons `0, stride, 2·stride, …`;
/// none for `stride` 0.
pub fn irradiance_photon_count(count: u32, stride: u32) -> u32 {
    if stride == 0 {
        0
    } else {
        count.div_ceil(stride)
    }
}

/// The surface normal a stored photon carries (on the side it arrived from).
pub fn photon_normal(record: &PhotonRecord) -> Vec3 {
    coarse_octahedral_decode(record.flags >> PHOTON_NORMAL_SHIFT)
}

/// Whether an irradiance photon with normal `photon_normal` stands for a hit with normal `n`.
pub fn normals_agree(photon_normal: Vec3, n: Vec3) -> bool {
    photon_normal.dot(n) >= LOOKUP_MIN_COS
}
