//! The GPU backend: the wgpu context, buffers, kernels with named bindings, the data-parallel
//! primitives and the stages of the pipeline, one file per stage.

pub mod backend;
pub mod clock;
pub mod context;
pub mod core;
pub mod encoder;
pub mod gather;
pub mod grid;
pub mod irradiance;
pub mod irradiance_photons;
pub mod kdtree;
pub mod kernel;
pub mod kernel_times;
pub mod knn;
pub mod lbvh;
pub mod maps;
pub mod middle_build;
pub mod photons;
pub mod pipeline_cache;
pub mod ploc;
pub mod pool;
pub mod prims;
pub mod raybench;
pub mod sah_build;
pub mod seeding;
pub mod shader;
mod tree_sizes;
pub mod tri_kdtree;
pub mod upload;
pub mod vd_batch;
pub mod vd_pipeline;
pub mod whitted;
pub mod wide_collapse;

pub use backend::GpuBackend;
pub use context::{test_context, DeviceInfo, GpuContext, GpuError, GpuFeatures};
pub use kernel::Kernel;
pub use pool::GpuBuffer;
