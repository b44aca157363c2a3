//! The frame loop, stage order, render options and statistics; the `Backend` trait.

pub mod frame;

pub use frame::{Frame, FrameMetadata, Layer};
