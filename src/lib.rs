//! Caustica: an offline photon-mapping renderer. Scene files in, OpenEXR frames out.

pub mod accel;
pub mod cpu;
pub mod io;
pub mod lang;
pub mod render;
pub mod scene;
