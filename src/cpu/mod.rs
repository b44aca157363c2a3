//! The CPU reference backend: the same stages as the GPU, in plain Rust with rayon.
