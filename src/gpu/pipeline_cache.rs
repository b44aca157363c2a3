//! The compiled kernels kept on disk between runs: wgpu's `PipelineCache` (Vulkan only), read
//! when the context opens and written back after a frame that compiled new kernels, so that a
//! later process's first frame skips the driver's compilation. One file per adapter and driver
//! (`wgpu::util::pipeline_cache_key`) and Caustica version, in `$CAUSTICA_CACHE_DIR`, else
//! `$XDG_CACHE_HOME/caustica`, else `~/.cache/caustica`; `CAUSTICA_CACHE_DIR=` (empty) turns it
//! off. A file that does not load (another driver, a truncated or edited file: wgpu checks its
//! header and hash) only means an empty cache; a cache that cannot be written is logged, never
//! an error of the render.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The environment variable naming the cache directory (empty: no cache).
pub const CACHE_DIR_VAR: &str = "CAUSTICA_CACHE_DIR";

/// The largest cache file read back; a larger one is ignored (and rewritten).
const MAX_CACHE_BYTES: u64 = 512 << 20;

pub struct PipelineCacheFile {
    cache: wgpu::PipelineCache,
    path: PathBuf,
    /// Pipelines made with the cache, and how many of them the file holds.
    made: AtomicU64,
    saved: AtomicU64,
}

/// The cache directory the environment asks for: `$CAUSTICA_CACHE_DIR` (none when empty),
/// `$XDG_CACHE_HOME/caustica` or `$HOME/.cache/caustica`.
pub fn default_cache_dir() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).map(PathBuf::from);
    match var(CACHE_DIR_VAR) {
        Some(dir) if dir.as_os_str().is_empty() => None,
        Some(dir) => Some(dir),
        None => var("XDG_CACHE_HOME")
            .filter(|d| d.is_absolute())
            .or_else(|| var("HOME").map(|h| h.join(".cache")))
            .map(|d| d.join("caustica")),
    }
}

impl PipelineCacheFile {
    /// The cache of `device` (which must have `Features::PIPELINE_CACHE`) in `dir`, with the
    /// file's contents when there is one that fits; `None` for an adapter whose backend keeps
    /// no pipeline cache.
    pub fn open(
        device: &wgpu::Device,
        adapter: &wgpu::AdapterInfo,
        dir: &Path,
    ) -> Option<PipelineCacheFile> {
        let key = wgpu::util::pipeline_cache_key(adapter)?;
        let path = dir.join(format!("{key}_caustica_{}.bin", env!("CARGO_PKG_VERSION")));
        let data = std::fs::metadata(&path)
            .ok()
            .filter(|m| m.len() <= MAX_CACHE_BYTES)
            .and_then(|_| std::fs::read(&path).ok());
        // SAFETY: the file is only ever written with what `PipelineCache::get_data` returned
        // (below, through a temporary file renamed over it), and wgpu checks the header, the
        // adapter and a hash of the data before using it; with `fallback` a file that fails the
        // checks gives an empty cache.
        let cache = unsafe {
            device.create_pipeline_cache(&wgpu::PipelineCacheDescriptor {
                label: Some("caustica pipelines"),
                data: data.as_deref(),
                fallback: true,
            })
        };
        log::debug!(
            "pipeline cache {} ({} bytes read)",
            path.display(),
            data.as_ref().map_or(0, Vec::len)
        );
        Some(PipelineCacheFile {
            cache,
            path,
            made: AtomicU64::new(0),
            saved: AtomicU64::new(0),
        })
    }

    /// The cache, for a pipeline about to be made (counted, so that the next save writes it).
    pub fn for_new_pipeline(&self) -> &wgpu::PipelineCache {
        self.made.fetch_add(1, Ordering::Relaxed);
        &self.cache
    }

    /// Where the cache lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The bytes the cache would write now (what it read, and what it has gathered since).
    pub fn data_len(&self) -> usize {
        self.cache.get_data().map_or(0, |d| d.len())
    }

    /// Writes the cache to its file if pipelines were made since the last write: whole or not
    /// at all (a temporary file renamed over the old one). Returns whether it wrote.
    pub fn save(&self) -> Result<bool, String> {
        let made = self.made.load(Ordering::Relaxed);
        if made == self.saved.load(Ordering::Relaxed) {
            return Ok(false);
        }
        let Some(data) = self.cache.get_data() else {
            return Ok(false);
        };
        let dir = self.path.parent().unwrap_or(Path::new("."));
        let write = || -> std::io::Result<()> {
            std::fs::create_dir_all(dir)?;
            // A name of this write's own: contexts of one process may save at once.
            static WRITES: AtomicU64 = AtomicU64::new(0);
            let n = WRITES.fetch_add(1, Ordering::Relaxed);
            let temporary = self
                .path
                .with_extension(format!("tmp-{}-{n}", std::process::id()));
            std::fs::write(&temporary, &data)?;
            std::fs::rename(&temporary, &self.path).inspect_err(|_| {
                let _ = std::fs::remove_file(&temporary);
            })
        };
        write().map_err(|e| format!("{}: {e}", self.path.display()))?;
        self.saved.store(made, Ordering::Relaxed);
        Ok(true)
    }
}
