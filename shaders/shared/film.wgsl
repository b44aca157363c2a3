// Where a pixel's camera samples sit among a pass's camera-ray slots (the 8x8 Morton tiles of
// whitted/primary.wgsl): shared by the kernels that resolve a pass into the films
// (whitted/resolve.wgsl, whitted/resolve_aovs.wgsl). params.ray_count is the pass's slots.
//!include "shared/types.wgsl"
//!include "shared/math.wgsl"

const FILM_TILE_PIXELS: u32 = 64u;
const FILM_NO_SLOT: u32 = 0xffffffffu;

// The slot of pixel p's first sample in the pass (its pass_spp samples follow), or
// FILM_NO_SLOT when p is outside the image or its tile is not in the pass.
fn film_first_slot(params: FrameParams, p: u32) -> u32 {
    if p >= params.width * params.height {
        return FILM_NO_SLOT;
    }
    let px = p % params.width;
    let py = p / params.width;
    let tiles_x = (params.width + 7u) / 8u;
    let tile = (py / 8u) * tiles_x + px / 8u;
    let pass_tiles = params.ray_count / (FILM_TILE_PIXELS * params.pass_spp);
    if tile < params.tile_offset || tile >= params.tile_offset + pass_tiles {
        return FILM_NO_SLOT;
    }
    let m = morton_encode(vec2<u32>(px % 8u, py % 8u));
    return ((tile - params.tile_offset) * FILM_TILE_PIXELS + m) * params.pass_spp;
}
