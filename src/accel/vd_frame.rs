//! The VD bottom level of one frame on the CPU: the subdivision level of every patch, fixed for
//! the frame, and the patch trees ([`PatchBvh`]) built on first use at that level.
//!
//! # How a frame's levels are chosen (the same on both backends)
//!
//! Paper 000 chooses a patch's level from the footprints of the rays that reach it and takes the
//! maximum. Caustica does that for the frame's **camera rays** (every sample of every pixel),
//! and then keeps the level for every other ray of the frame, so that reflection, refraction and
//! shadow rays (and, later, photons and gather rays) meet exactly the surface the camera sees:
//! a shadow ray leaving a level-5 surface is never blocked by a coarser level-3 version of the
//! same patch. For one camera ray and one patch it reaches in the top and middle levels, the
//! level is [`lod_level`] of the patch's conservative bounds at the ray's entry distance into
//! them, with the footprint growing by `pixel_spread · |dir|` per unit of `t` in the patch's
//! object space ([`Prepared::vd_levels_from_rays`]; the GPU's first VD batch of the frame does
//! the same in its workgroups).
//!
//! A patch no camera ray reaches (seen only in a mirror, or only casting a shadow) gets the
//! **camera bound** ([`Prepared::vd_camera_bound_levels`]): the level a camera ray would need at
//! the nearest point of the patch's world bounds, over all instances. No ray that starts at the
//! camera (and travels on through reflections, whose footprint only grows with the path length)
//! can need a finer level there, so the bound is the largest level any ray of the frame could
//! ask for.

use std::sync::OnceLock;

use super::vd_bottom::PatchBvh;
use super::Prepared;

/// The levels of a frame's VD patches and their trees, built lazily (thread-safe).
#[derive(Debug, Default)]
pub struct VdFrame {
    /// The level of each VD patch (by global patch index, as [`Prepared::vd_patches`]).
    pub levels: Vec<u32>,
    /// The level of each patch edge, the finest of the patches that share it (the watertight
    /// rule, [`super::vd_seams`]), found with the first tree.
    edge_levels: OnceLock<Vec<u32>>,
    trees: Vec<OnceLock<PatchBvh>>,
}

impl Clone for VdFrame {
    /// A frame with the same levels and no trees built yet.
    fn clone(&self) -> VdFrame {
        VdFrame::new(self.levels.clone())
    }
}

impl VdFrame {
    /// A frame whose patch `p` is built at `levels[p]`.
    pub fn new(levels: Vec<u32>) -> VdFrame {
        let trees = (0..levels.len()).map(|_| OnceLock::new()).collect();
        VdFrame {
            levels,
            edge_levels: OnceLock::new(),
            trees,
        }
    }

    /// The tree of patch `patch` of `prepared`, built on first use.
    pub fn tree(&self, prepared: &Prepared, patch: u32) -> &PatchBvh {
        self.trees[patch as usize].get_or_init(|| {
            let edge_levels = self
                .edge_levels
                .get_or_init(|| prepared.vd_edge_levels(&self.levels));
            prepared.build_patch_tree(patch, &self.levels, edge_levels)
        })
    }

    /// `(trees built so far, their bytes)`.
    pub fn built(&self) -> (usize, usize) {
        self.trees
            .iter()
            .filter_map(|t| t.get())
            .fold((0, 0), |(n, bytes), t| (n + 1, bytes + t.bytes()))
    }
}
