// Final gather on the GPU, shared by the kernels of shaders/gather/: twins of
// cpu::gather::final_gather and gather_radiance. Gather ray j of seed s is ray s * rays + j; its
// random stream is (seed, s, GATHER_STREAM_TAG + j): 2 numbers for the direction, 1 per step.
//!include "photons/common.wgsl"
//!include "shared/gather_types.wgsl"

const GATHER_STREAM_TAG: u32 = 0x80000011u;
