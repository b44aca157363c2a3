//! `AssetCache`: the [`AssetLoader`] that loads each mesh, texture and VD map file once and shares it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use super::IoError;
use crate::scene::{AssetLoader, EnvMap, MeshAsset, SceneAsset, TextureImage, VdImage};

/// Loads scene assets through [`load_mesh_asset`](super::load_mesh_asset), [`load_texture`](super::load_texture)
/// and [`load_vd_image`](super::load_vd_image), keeping every file it loaded, keyed by its
/// canonical path, so that the frames of an animation (and scenes that name one file twice,
/// by different relative paths) share one copy. Failures are not cached: a file that was missing
/// is looked for again next time.
///
/// Loading happens outside the lock, so two threads asking for a new file at the same moment may
/// both read it; the first to finish is kept and both get the same `Arc` afterwards.
#[derive(Default)]
pub struct AssetCache {
    meshes: Mutex<HashMap<PathBuf, Arc<MeshAsset>>>,
    textures: Mutex<HashMap<PathBuf, Arc<TextureImage>>>,
    vd_images: Mutex<HashMap<PathBuf, Arc<VdImage>>>,
    environments: Mutex<HashMap<PathBuf, Arc<EnvMap>>>,
    scene_files: Mutex<HashMap<PathBuf, Arc<SceneAsset>>>,
}

impl AssetCache {
    pub fn new() -> AssetCache {
        AssetCache::default()
    }

    /// Number of files held: meshes, textures, VD images, environment maps and scene files
    /// together.
    pub fn len(&self) -> usize {
        lock(&self.meshes).len()
            + lock(&self.textures).len()
            + lock(&self.vd_images).len()
            + lock(&self.environments).len()
            + lock(&self.scene_files).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Locks a cache map. A panic in another thread while it held the lock cannot leave a map
/// half-updated (each update is a single insert), so a poisoned lock is still usable.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Returns the cached value for `path`, or loads it with `load` and caches it.
fn cached<T>(
    map: &Mutex<HashMap<PathBuf, Arc<T>>>,
    path: &Path,
    load: impl FnOnce(&Path) -> Result<T, IoError>,
) -> Result<Arc<T>, String> {
    let key = std::fs::canonicalize(path).map_err(|e| IoError::read(path, e).reason())?;
    // A device, a pipe or a folder could be endless, or block.
    if !std::fs::metadata(&key).is_ok_and(|m| m.is_file()) {
        return Err("it is not a regular file (a folder, a device or a pipe)".to_string());
    }
    if let Some(hit) = lock(map).get(&key) {
        return Ok(Arc::clone(hit));
    }
    // Load through the path as given: its extension names the format even when the canonical
    // path is a symlink target without one.
    let loaded = Arc::new(load(path).map_err(|e| e.reason())?);
    Ok(Arc::clone(lock(map).entry(key).or_insert(loaded)))
}

impl AssetLoader for AssetCache {
    fn load_mesh(&self, path: &Path) -> Result<Arc<MeshAsset>, String> {
        cached(&self.meshes, path, super::load_mesh_asset)
    }

    fn load_texture(&self, path: &Path) -> Result<Arc<TextureImage>, String> {
        cached(&self.textures, path, super::load_albedo_texture)
    }

    fn load_vd_image(&self, path: &Path) -> Result<Arc<VdImage>, String> {
        cached(&self.vd_images, path, super::load_vd_image)
    }

    fn find_udim_tiles(&self, pattern: &Path) -> Result<Vec<(u32, PathBuf)>, String> {
        super::find_udim_tiles(pattern).map_err(|e| e.reason())
    }

    fn load_environment(&self, path: &Path) -> Result<Arc<EnvMap>, String> {
        cached(&self.environments, path, |p| {
            super::load_texture(p).map(|image| EnvMap::new(&image))
        })
    }

    fn load_scene_file(&self, path: &Path) -> Result<Arc<SceneAsset>, String> {
        cached(&self.scene_files, path, super::load_gltf)
    }
}
