//! The photon maps of a frame on the GPU: each map's records and positions with its kd-tree,
//! traced once per frame (`gpu::photons`) and read by the final gather, the composition and the
//! debug views.

use super::kdtree::GpuKdTree;
use super::pool::GpuBuffer;
use crate::render::photons::{PhotonPass, PhotonPassStats};

/// A photon map on the GPU: the records and their positions (the kd-tree builder's input).
pub struct GpuPhotonMap {
    pub records: GpuBuffer,
    pub positions: GpuBuffer,
    pub count: u32,
    pub stats: PhotonPassStats,
}

/// One photon map with its kd-tree on the GPU.
pub(super) struct MapTree {
    pub(super) map: GpuPhotonMap,
    pub(super) tree: GpuKdTree,
}

/// The photon maps of a frame, traced once whatever the passes and layers that use them.
#[derive(Default)]
pub(super) struct FrameMaps {
    pub(super) global: Option<MapTree>,
    pub(super) caustic: Option<MapTree>,
}

impl FrameMaps {
    pub(super) fn get(&self, pass: PhotonPass) -> Option<&MapTree> {
        match pass {
            PhotonPass::Global => self.global.as_ref(),
            PhotonPass::Caustic => self.caustic.as_ref(),
        }
    }
}
