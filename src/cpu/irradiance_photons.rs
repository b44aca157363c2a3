//! Christensen's precomputed irradiance on the CPU (`render::irradiance_photons` describes it;
//! the GPU twin is `gpu::irradiance_photons`): every `stride`-th photon of the global map with
//! the irradiance estimated at it, and the lookup a gather ray's diffuse hit makes.

use glam::Vec3;
use rayon::prelude::*;

use super::photons::PhotonTree;
use crate::accel::kdtree::{build_point_kdtree, PointKdTree};
use crate::accel::knn::knn_filtered;
use crate::accel::photon_estimate::irradiance_photon_estimate;
use crate::render::irradiance_photons::{irradiance_photon_count, normals_agree, photon_normal};
use crate::render::photons::EstimateSettings;

/// The global map's irradiance photons: positions (a kd-tree over them), normals and the
/// irradiance estimated at each.
pub struct IrradiancePhotons {
    pub points: Vec<[f32; 4]>,
    pub normals: Vec<Vec3>,
    pub irradiance: Vec<Vec3>,
    pub tree: PointKdTree,
    /// The squared radius a lookup searches: the estimate's own.
    pub max_dist2: f32,
}

impl IrradiancePhotons {
    /// Photons `0, stride, 2·stride, …` of `global`, each with the flux density the map gives at
    /// its position on the side of its normal, from the photons that are not irradiance photons
    /// ([`irradiance_photon_estimate`]).
    pub fn precompute(
        global: &PhotonTree,
        stride: u32,
        settings: &EstimateSettings,
    ) -> IrradiancePhotons {
        let records = &global.map.records;
        let count = irradiance_photon_count(records.len() as u32, stride) as usize;
        let chosen: Vec<_> = (0..count).map(|j| &records[j * stride as usize]).collect();
        let points: Vec<[f32; 4]> = chosen
            .iter()
            .map(|r| [r.position[0], r.position[1], r.position[2], 0.0])
            .collect();
        let normals: Vec<Vec3> = chosen.iter().map(|r| photon_normal(r)).collect();
        let irradiance = (0..count)
            .into_par_iter()
            .zip(&normals)
            .map(|(j, &n)| {
                irradiance_photon_estimate(
                    &global.tree.words,
                    &global.points,
                    records,
                    j as u32 * stride,
                    stride,
                    n,
                    settings.k,
                    settings.max_dist2,
                    settings.filter,
                )
            })
            .collect();
        IrradiancePhotons {
            tree: build_point_kdtree(&points),
            points,
            normals,
            irradiance,
            max_dist2: settings.max_dist2,
        }
    }

    /// The irradiance at `x` on the side `n` faces: the nearest irradiance photon's among those
    /// whose normal agrees, within the estimate's radius; zero if there is none.
    pub fn irradiance(&self, x: Vec3, n: Vec3) -> Vec3 {
        let agrees = |i: u32| normals_agree(self.normals[i as usize], n);
        knn_filtered(&self.tree.words, &self.points, x, 1, self.max_dist2, agrees)
            .first()
            .map_or(Vec3::ZERO, |nb| self.irradiance[nb.index as usize])
    }
}
