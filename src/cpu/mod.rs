//! The CPU reference backend: the same stages as the GPU, in plain Rust with rayon.

pub mod gather;
pub mod optics;
pub mod photons;
pub mod prims;
pub mod whitted;

pub use whitted::{render_whitted, CpuBackend, Tracer};
