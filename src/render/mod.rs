//! The frame loop's shared parts: the `Backend` trait, render options, statistics, the camera
//! model and sampling.

pub mod camera;
pub mod compare;
pub mod frame;
pub mod gather;
pub mod irradiance_photons;
pub mod lights;
pub mod photons;
pub mod plan;
pub mod progress;
pub mod progressive;
pub mod sampling;
pub mod schedule;
pub mod stats;

pub use camera::CameraModel;
pub use frame::{
    aov_layers, layer_names, FirstHitLayers, FirstHitSums, Frame, FrameMetadata, Layer,
    PhotonViews, DEPTH_LAYER,
};
pub use stats::FrameStats;

use crate::accel::Prepared;
use crate::scene::Scene;

/// Why a backend could not render a frame.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("{0}")]
    DeviceUnavailable(String),
    #[error("the render was cancelled")]
    Cancelled,
}

/// How a frame is rendered, beyond what the scene says.
#[derive(Clone, Debug, Default)]
pub struct RenderOptions {
    /// Where the frame reports its phases ([`progress`]); `None` reports nothing.
    pub progress: Option<progress::ProgressSink>,
    /// The most camera-ray slots of one pass (`render::plan`). The GPU also cuts passes at its
    /// binding limit; the CPU twin cuts them only here. `None`: no limit of the caller's.
    pub max_pass_rays: Option<u64>,
    /// The most gather rays the final gather traces at once: the GPU cuts the seeds into
    /// chunks of at most this many rays (and at its binding limit). The result does not depend
    /// on the cut; the CPU twin has nothing to cut. `None`: no limit of the caller's.
    pub max_gather_rays: Option<u64>,
    /// The GPU times its Whitted phases (camera rays, traces, shading, shadow rays) with
    /// timestamps around their dispatches, for the `gpu/*_ms` and `gpu/*_mrays_per_s`
    /// statistics (`caustica render --stats` asks for them). Each timed dispatch then runs in a
    /// compute pass of its own and the times are read back at each pass's end, which costs a
    /// frame about a millisecond (docs/performance.md); without, the device clock still gives
    /// each stage's time.
    pub phase_times: bool,
}

/// A renderer of prepared scenes: the GPU pipeline or its CPU twin.
pub trait Backend: Send + Sync {
    /// "cpu", or the GPU adapter's name.
    fn name(&self) -> String;
    /// The hierarchy's layout this backend renders fastest, for scenes that name none.
    fn preferred_layout(&self) -> crate::accel::BvhLayout {
        crate::accel::BvhLayout::Qbvh
    }
    /// Whether the backend builds the middle levels of a GPU builder (`--accel wide:gpu_lbvh`)
    /// itself, from [`Prepared::device_builds`](crate::accel::Prepared::device_builds); when
    /// not, they are built on the CPU by the builder's twins.
    fn builds_on_device(&self) -> bool {
        false
    }
    /// The device that builds `--accel kdtree`'s kd-trees for [`Prepared`] (to the CPU twin's
    /// words), if the backend has one.
    fn kdtree_device(&self) -> Option<&dyn crate::accel::tri_kdtree::KdTreeDevice> {
        None
    }
    /// Renders `scene` (already built into `prepared`) into a frame with the scene's film
    /// settings and the requested output layers.
    fn render_frame(
        &self,
        scene: &Scene,
        prepared: &Prepared,
        options: &RenderOptions,
    ) -> Result<Frame, RenderError>;
}
