//! The CPU reference backend: the same stages as the GPU, in plain Rust with rayon, and a
//! driver (`backend`) that runs them in the GPU driver's order.

pub mod backend;
pub mod compose;
pub mod gather;
pub mod irradiance_photons;
pub mod microfacet;
pub mod optics;
pub mod photons;
pub mod plastic;
pub mod prims;
pub mod rough;
pub mod whitted;

pub use backend::{render_whitted, CpuBackend};
pub use whitted::Tracer;
