//! Files in and out: meshes (OBJ, PLY), textures, VD maps and EXR frames.

mod atomic;
mod cache;
mod error;
mod exr;
mod gltf;
mod mesh;
mod mtl;
mod obj;
mod preview;
mod texture;
pub mod vdgen;
pub mod vdgen_party;
mod wavefront_text;

pub use self::exr::{read_frame, write_frame};
pub use self::gltf::load_gltf;
pub use atomic::{note_placeholder, remove_pending_files, OutputLock};
pub use cache::AssetCache;
pub use error::IoError;
pub use mesh::{load_mesh, load_mesh_asset};
pub use preview::{encode_srgb8, tone_map, write_preview_png, write_rgb8_png};
pub use texture::{
    find_udim_tiles, load_albedo_texture, load_texture, load_vd_image, read_image, srgb_to_linear,
};
