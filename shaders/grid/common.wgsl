// Shared by the two-level grid's build kernels (grid/*.wgsl; host side caustica::gpu::grid,
// CPU twin caustica::accel::grid::build_grid): the parameters, the grid index and the placing
// of a box in cells. All placing arithmetic is a subtraction, a multiplication and a floor, in
// the CPU twin's order; a grid box is stored as bits between the kernel that makes it and the
// ones that read it, so no compiler can fuse its multiplication with a later subtraction.

// Invocations per workgroup of every grid kernel.
const GRID_WG_SIZE: u32 = 256u;
// Words before the top cells (caustica::accel::grid::HEADER_WORDS).
const HEADER_WORDS: u32 = 16u;
// Leaf resolutions 2..=255 per axis have a threshold each (THRESHOLDS_PER_AXIS).
const THRESHOLDS_PER_AXIS: u32 = 254u;

// Twin of caustica::gpu::grid::GridBuildParams (layout checked by a test).
struct GridBuildParams {
    // xyz: the grid box's lower corner; w: the margin every box is grown by.
    min: vec4<f32>,
    // xyz: top cells per unit length.
    inv_size: vec4<f32>,
    // xyz: the top resolution; w: top cells.
    res: vec4<u32>,
    // Boxes given (placeable or not).
    boxes: u32,
    // (top cell, primitive) pairs.
    top_pairs: u32,
    // (leaf, primitive) pairs: the references.
    refs: u32,
    // Where the leaves and the references start in the words.
    leaves_at: u32,
    refs_at: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

// The linear invocation index of a grid that may spill into y (`Kernel::grid_for`).
fn grid_index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * GRID_WG_SIZE;
}

// Twin of caustica::accel::grid::cell_of: floor(u) clamped to 0..=res - 1 (NaN in cell 0).
fn cell_of(u: f32, res: u32) -> u32 {
    let t = floor(u);
    if t >= f32(res - 1u) {
        return res - 1u;
    }
    if t > 0.0 {
        return u32(t);
    }
    return 0u;
}

fn cells_of(u: vec3<f32>, res: vec3<u32>) -> vec3<u32> {
    return vec3<u32>(cell_of(u.x, res.x), cell_of(u.y, res.y), cell_of(u.z, res.z));
}

// The cells of a range per axis [lo, hi].
fn range_volume(lo: vec3<u32>, hi: vec3<u32>) -> u32 {
    let d = hi - lo + vec3<u32>(1u);
    return d.x * d.y * d.z;
}

// The coordinates of top cell `cell` among `res`.
fn top_coords(cell: u32, res: vec3<u32>) -> vec3<u32> {
    return vec3<u32>(cell % res.x, (cell / res.x) % res.y, cell / (res.x * res.y));
}

// A top cell's leaf resolution from its packed word (rx | ry << 8 | rz << 16).
fn unpack_resolution(packed: u32) -> vec3<u32> {
    return vec3<u32>(packed & 0xffu, (packed >> 8u) & 0xffu, packed >> 16u);
}

// Twin of caustica::accel::grid::leaf_range: the leaf cells of top cell `c` (resolution `r`)
// that the grid box lo..hi overlaps, per axis: the first ones and the last ones.
fn leaf_first(lo: vec3<f32>, c: vec3<u32>, r: vec3<u32>) -> vec3<u32> {
    return cells_of((lo - vec3<f32>(c)) * vec3<f32>(r), r);
}

fn leaf_last(hi: vec3<f32>, c: vec3<u32>, r: vec3<u32>) -> vec3<u32> {
    return cells_of((hi - vec3<f32>(c)) * vec3<f32>(r), r);
}
