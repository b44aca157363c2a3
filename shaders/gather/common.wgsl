// Final gather on the GPU, shared by the kernels of shaders/gather/: twins of
// cpu::gather::final_gather and gather_radiance. Gather ray j of seed s is ray s * rays + j; its
// random stream is (seed, s, GATHER_STREAM_TAG + j): 2 numbers for the direction, 1 per step
// (3 at a rough surface).
//!include "photons/common.wgsl"
//!include "shared/gather_types.wgsl"

const GATHER_STREAM_TAG: u32 = 0x80000011u;
const TAU: f32 = 6.28318530717959;

// render::gather::gather_direction: ray j's stratum (row j / columns, column j % columns) of
// equal projected solid angle about n, jittered by u.
fn gather_direction(n: vec3<f32>, j: u32, rows: u32, columns: u32, u: vec2<f32>) -> vec3<f32> {
    let row = j / columns;
    let column = j % columns;
    let sin2 = min((f32(row) + u.y) / f32(rows), 1.0);
    let phi = TAU * (f32(column) + u.x) / f32(columns);
    let s = sqrt(sin2);
    let c = sqrt(max(1.0 - sin2, 0.0));
    return orthonormal_basis_t(n) * (s * cos(phi)) + orthonormal_basis_b(n) * (s * sin(phi)) + n * c;
}
