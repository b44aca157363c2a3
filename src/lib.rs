//! Caustica: an offline photon-mapping renderer. Scene files in, OpenEXR frames out.
//!
//! The library API is small, and the command line, the tests and the benchmarks all go
//! through it:
//! 1. [`load_scene`] parses a scene file (and its includes) into a [`SceneFile`];
//! 2. [`evaluate_frame`] evaluates it for one frame into a [`scene::Scene`], loading the files it
//!    names through an [`io::AssetCache`];
//! 3. [`prepare`] builds the hierarchy ([`accel::Prepared`]);
//! 4. a [`render::Backend`] from [`select_backend`] renders a [`render::Frame`];
//! 5. [`io::write_frame`] writes it as a layered EXR.
//!
//! [`render_animation`] runs the whole loop for a range of frames on the job's devices
//! ([`select_backends`]), each taking the next frame when it is free.
//!
//! The steps live in `api.rs`, the loop in `jobs.rs`, what the fuzz targets feed them in
//! `fuzzing.rs`; this file only names the modules.

pub mod accel;
mod api;
pub mod cpu;
pub mod fuzzing;
pub mod gpu;
pub mod io;
mod jobs;
pub mod lang;
pub mod render;
pub mod scene;

pub use api::*;
pub use jobs::{render_animation, render_animation_on, FrameReport, RenderJob, Shard};
