//! The wgpu context: adapter choice, the optional features we use, limits, and device facts.

use std::fmt;

use super::clock::{ClockReading, DeviceClock, HostClock};
use super::kernel_times::KernelTimes;
use super::pipeline_cache::{default_cache_dir, PipelineCacheFile};
use super::pool::{BufferPool, GpuBuffer};
use crate::render::stats::{KernelFigure, StageTimes, TrafficStats};
use crate::scene::{DeviceChoice, DeviceList};

/// Optional adapter features the pipeline uses when present; each has a correct fallback.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GpuFeatures {
    /// Subgroup (warp) operations in compute shaders.
    pub subgroups: bool,
    /// 64-bit integers in shaders.
    pub int64: bool,
    /// 64-bit atomic min/max on storage buffers (closest hit as one atomic).
    pub int64_atomic_min_max: bool,
    /// Timestamp queries at pass boundaries.
    pub timestamps: bool,
    /// Timestamp queries inside passes.
    pub timestamps_inside_passes: bool,
    /// Timestamp queries between passes, in command encoders (the device clock).
    pub timestamps_inside_encoders: bool,
}

/// What the adapter is and allows, for `--stats` and `caustica info --device`.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceInfo {
    pub name: String,
    pub backend: String,
    pub device_type: String,
    pub driver: String,
    pub features: GpuFeatures,
    pub subgroup_min_size: u32,
    pub subgroup_max_size: u32,
    pub max_storage_buffer_binding_size: u64,
    pub max_buffer_size: u64,
    pub max_compute_workgroup_size_x: u32,
    pub max_compute_invocations_per_workgroup: u32,
    pub max_compute_workgroups_per_dimension: u32,
    pub max_storage_buffers_per_shader_stage: u32,
    /// The bytes of workgroup memory one workgroup may declare.
    pub max_compute_workgroup_storage_size: u32,
    pub timestamp_period_ns: f32,
}

impl DeviceInfo {
    /// The most bytes one storage binding may hold: the binding limit, within the largest
    /// buffer the device creates.
    pub fn binding_limit(&self) -> u64 {
        self.max_storage_buffer_binding_size
            .min(self.max_buffer_size)
    }
}

impl fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let yes = |b: bool| if b { "yes" } else { "no" };
        writeln!(
            f,
            "adapter          {} ({}, {})",
            self.name, self.device_type, self.backend
        )?;
        writeln!(f, "driver           {}", self.driver)?;
        writeln!(
            f,
            "subgroups        {} (size {}..{})",
            yes(self.features.subgroups),
            self.subgroup_min_size,
            self.subgroup_max_size
        )?;
        writeln!(
            f,
            "64-bit integers  {}; 64-bit atomic min/max {}",
            yes(self.features.int64),
            yes(self.features.int64_atomic_min_max)
        )?;
        writeln!(
            f,
            "timestamps       {} (inside passes: {}), period {} ns",
            yes(self.features.timestamps),
            yes(self.features.timestamps_inside_passes),
            self.timestamp_period_ns
        )?;
        writeln!(
            f,
            "storage binding  {} MiB max; buffer {} MiB max",
            self.max_storage_buffer_binding_size >> 20,
            self.max_buffer_size >> 20
        )?;
        write!(
            f,
            "compute          {} invocations per workgroup, {} workgroups per dimension, {} storage buffers per stage, {} KiB of workgroup memory",
            self.max_compute_invocations_per_workgroup,
            self.max_compute_workgroups_per_dimension,
            self.max_storage_buffers_per_shader_stage,
            self.max_compute_workgroup_storage_size >> 10
        )
    }
}

/// Why no GPU context could be made.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    #[error("no GPU adapter found{0}")]
    NoAdapter(String),
    #[error("the GPU adapter \"{name}\" ({backend}) could not open a device: {message}")]
    NoDevice {
        name: String,
        backend: String,
        message: String,
    },
    #[error("{what} needs {size} bytes in one storage binding, but the adapter allows at most {limit} bytes")]
    BufferTooLarge { what: String, size: u64, limit: u64 },
    #[error(
        "the {map} photon map stores {stored} photons of {emitted} emitted, more than the {most} \
         that one storage binding of this adapter holds ({limit} bytes): emit at most about \
         {fits} (`photons {{ {map} {fits} }}`)"
    )]
    PhotonMapTooLarge {
        map: &'static str,
        stored: u64,
        emitted: u64,
        most: u64,
        limit: u64,
        /// The emitted count whose map would fit at the same photons stored per emitted one.
        fits: u64,
    },
    #[error("GPU error: {0}")]
    Device(String),
}

/// An open wgpu device with the facts the pipeline needs about it.
pub struct GpuContext {
    pub instance: wgpu::Instance,
    pub adapter: wgpu::Adapter,
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub info: DeviceInfo,
    /// What the host has asked of the device so far (`gpu::kernel`'s buffer helpers count it);
    /// a frame reports the difference (`--stats`: `gpu/allocated_bytes`, ...).
    pub traffic: Traffic,
    /// Every buffer of the pipeline comes from here (`gpu::pool`).
    pub pool: BufferPool,
    /// Stamps every submission when the adapter can (`gpu::clock`).
    clock: Option<DeviceClock>,
    /// The stage the frame driver named last (the device clock counts submissions under it)
    /// and the host's time per stage.
    host_clock: HostClock,
    /// Status words that kernels or their error bits into, read together at the end of the
    /// frame (`gpu::kernel::run_deferred_checks`) instead of one wait each.
    deferred_checks: std::sync::Mutex<Vec<(GpuBuffer, StatusCheck)>>,
    /// Bind groups made before (`Kernel::bind`), by layout and entries.
    bind_groups: std::sync::Mutex<BindGroupCache>,
    /// The device's time per kernel, when asked for (`gpu::kernel_times`).
    pub kernel_times: Option<std::sync::Arc<KernelTimes>>,
    /// The compiled kernels kept on disk between runs (`gpu::pipeline_cache`), where the
    /// adapter keeps a pipeline cache.
    pub pipeline_cache: Option<PipelineCacheFile>,
}

/// The entries of a bind group: (binding, buffer, bound size), by binding.
pub type BindKey = (wgpu::BindGroupLayout, Vec<(u32, wgpu::Buffer, u64)>);

/// Bind groups kept from frame to frame: the pool hands a warm frame the same buffers in the
/// same order, so most of its bind groups are ones the last frame made. An entry holds its
/// buffers alive, so entries that [`BIND_GROUP_FRAMES_KEPT`] frame ends leave unused are
/// dropped.
#[derive(Default)]
struct BindGroupCache {
    /// Frame ends so far.
    frame: u64,
    groups: std::collections::HashMap<BindKey, (wgpu::BindGroup, u64)>,
}

/// Frame ends an unused cached bind group survives.
const BIND_GROUP_FRAMES_KEPT: u64 = 2;

/// Turns a kernel's status word into the error its bits name (`Ok` for 0).
pub type StatusCheck = fn(u32) -> Result<(), GpuError>;

/// Running totals of the host's buffer traffic with the device.
#[derive(Debug, Default)]
pub struct Traffic {
    pub allocated_bytes: std::sync::atomic::AtomicU64,
    pub uploaded_bytes: std::sync::atomic::AtomicU64,
    pub readbacks: std::sync::atomic::AtomicU64,
    pub readback_bytes: std::sync::atomic::AtomicU64,
    /// Waits for the device to finish (read-backs included) and the host's time in them.
    pub waits: std::sync::atomic::AtomicU64,
    pub wait_ns: std::sync::atomic::AtomicU64,
    /// The host's time copying read-back data out of mapped memory.
    pub readback_copy_ns: std::sync::atomic::AtomicU64,
    /// Compute dispatches recorded (`gpu::encoder` counts them).
    pub dispatches: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Bind groups made (`Kernel::bind`), those taken from the cache instead, and the host's
    /// time in both.
    pub bind_groups: std::sync::atomic::AtomicU64,
    pub bind_groups_reused: std::sync::atomic::AtomicU64,
    pub bind_ns: std::sync::atomic::AtomicU64,
    /// Submissions and the host's time in them (`GpuContext::submit`).
    pub submissions: std::sync::atomic::AtomicU64,
    pub submit_ns: std::sync::atomic::AtomicU64,
}

/// The number of counters in a [`Traffic::snapshot`].
const TRAFFIC_COUNTERS: usize = 13;

impl Traffic {
    pub fn add(counter: &std::sync::atomic::AtomicU64, n: u64) {
        counter.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }

    /// Every counter so far, in the order of [`TrafficStats`]' fields ([`Traffic::since`]).
    pub fn snapshot(&self) -> [u64; TRAFFIC_COUNTERS] {
        use std::sync::atomic::Ordering::Relaxed;
        [
            self.allocated_bytes.load(Relaxed),
            self.uploaded_bytes.load(Relaxed),
            self.readbacks.load(Relaxed),
            self.readback_bytes.load(Relaxed),
            self.waits.load(Relaxed),
            self.dispatches.load(Relaxed),
            self.bind_groups.load(Relaxed),
            self.bind_groups_reused.load(Relaxed),
            self.submissions.load(Relaxed),
            self.wait_ns.load(Relaxed),
            self.readback_copy_ns.load(Relaxed),
            self.bind_ns.load(Relaxed),
            self.submit_ns.load(Relaxed),
        ]
    }

    /// The traffic since `before` (a [`Traffic::snapshot`]).
    pub fn since(&self, before: [u64; TRAFFIC_COUNTERS]) -> TrafficStats {
        let now = self.snapshot();
        let d: Vec<u64> = now
            .iter()
            .zip(before)
            .map(|(n, b)| n.saturating_sub(b))
            .collect();
        let ms = |ns: u64| ns as f64 * 1e-6;
        TrafficStats {
            allocated_bytes: d[0],
            uploaded_bytes: d[1],
            readbacks: d[2],
            readback_bytes: d[3],
            waits: d[4],
            dispatches: d[5],
            bind_groups: d[6],
            bind_groups_reused: d[7],
            submissions: d[8],
            wait_ms: ms(d[9]),
            readback_copy_ms: ms(d[10]),
            bind_ms: ms(d[11]),
            submit_ms: ms(d[12]),
        }
    }
}

impl fmt::Debug for GpuContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GpuContext")
            .field("info", &self.info)
            .finish_non_exhaustive()
    }
}

/// Which backends to search. `WGPU_BACKEND` (e.g. `vulkan`) wins; when a GPU is required the
/// search is pinned to Vulkan, because with default backends and no Vulkan driver wgpu falls
/// back to a GL adapter that has neither subgroups nor 64-bit atomics.
pub fn backends_to_search(require_gpu: bool) -> wgpu::Backends {
    if let Some(from_env) = wgpu::Backends::from_env() {
        return from_env;
    }
    if require_gpu {
        wgpu::Backends::VULKAN
    } else {
        wgpu::Backends::PRIMARY
    }
}

fn new_instance(backends: wgpu::Backends) -> wgpu::Instance {
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
    desc.backends = backends;
    wgpu::Instance::new(desc)
}

/// An adapter as `caustica info --gpu` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdapterSummary {
    /// Its place in the list: what `--devices` indices name.
    pub index: usize,
    pub name: String,
    pub backend: String,
    /// `DiscreteGpu`, `IntegratedGpu`, `Cpu` (a software renderer such as lavapipe), …
    pub device_type: String,
    pub driver: String,
}

impl AdapterSummary {
    fn of(index: usize, info: &wgpu::AdapterInfo) -> AdapterSummary {
        AdapterSummary {
            index,
            name: info.name.clone(),
            backend: format!("{:?}", info.backend),
            device_type: format!("{:?}", info.device_type),
            driver: format!("{} {}", info.driver, info.driver_info)
                .trim()
                .to_string(),
        }
    }

    pub fn is_discrete(&self) -> bool {
        self.device_type == format!("{:?}", wgpu::DeviceType::DiscreteGpu)
    }
}

impl fmt::Display for AdapterSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}  {} ({}, {}{}{})",
            self.index,
            self.name,
            self.backend,
            self.device_type,
            if self.driver.is_empty() { "" } else { ", " },
            self.driver
        )
    }
}

/// The adapters on the backends a render would search (`backends_to_search`), enumerated once
/// on one instance, in the driver's order, which is the order `--devices` indices count in.
/// The devices of a render on several adapters are opened on it (creating an instance and
/// enumerating its adapters costs about 0.1 s on an NVIDIA driver, and more when two are made
/// at once).
pub struct AdapterSet {
    instance: wgpu::Instance,
    backends: wgpu::Backends,
    adapters: Vec<wgpu::Adapter>,
}

impl AdapterSet {
    /// The adapters a render would search: pinned to Vulkan (or `WGPU_BACKEND`) when
    /// `require_gpu`, otherwise any primary backend.
    pub fn enumerate(require_gpu: bool) -> AdapterSet {
        let start = std::time::Instant::now();
        let backends = backends_to_search(require_gpu);
        let instance = new_instance(backends);
        let adapters = pollster::block_on(instance.enumerate_adapters(backends));
        log::debug!(
            "{} adapters found in {:.1} ms",
            adapters.len(),
            start.elapsed().as_secs_f64() * 1e3
        );
        AdapterSet {
            instance,
            backends,
            adapters,
        }
    }

    /// The adapters as `caustica info --gpu` lists them.
    pub fn summaries(&self) -> Vec<AdapterSummary> {
        self.adapters
            .iter()
            .enumerate()
            .map(|(index, adapter)| AdapterSummary::of(index, &adapter.get_info()))
            .collect()
    }

    /// A device on the adapter with `index`; the same index opened twice gives two
    /// independent logical devices.
    pub fn open(&self, index: usize) -> Result<GpuContext, GpuError> {
        let Some(adapter) = self.adapters.get(index) else {
            return Err(GpuError::NoAdapter(format!(
                " with index {index} on {:?} ({} found; see caustica info --gpu)",
                self.backends,
                self.adapters.len()
            )));
        };
        GpuContext::on_adapter(self.instance.clone(), adapter.clone())
    }
}

/// Every adapter on the backends a render would search ([`AdapterSet::summaries`]).
pub fn list_adapters(require_gpu: bool) -> Vec<AdapterSummary> {
    AdapterSet::enumerate(require_gpu).summaries()
}

/// The adapters `list` names among `adapters`, as indices in the order they are named (an
/// index named twice appears twice). `Ok(None)` for [`DeviceList::Auto`] with no discrete GPU:
/// the caller then opens the one adapter it would open alone. An index out of range or a name
/// that matches nothing is an error that lists the adapters.
pub fn resolve_devices(
    list: &DeviceList,
    adapters: &[AdapterSummary],
) -> Result<Option<Vec<usize>>, String> {
    let listing = || {
        let lines: Vec<String> = adapters.iter().map(|a| format!("  {a}")).collect();
        if lines.is_empty() {
            "no adapter was found".to_string()
        } else {
            format!("the adapters found:\n{}", lines.join("\n"))
        }
    };
    match list {
        DeviceList::Auto => {
            let Some(first) = adapters.iter().find(|a| a.is_discrete()) else {
                return Ok(None);
            };
            Ok(Some(
                adapters
                    .iter()
                    .filter(|a| a.is_discrete() && a.backend == first.backend)
                    .map(|a| a.index)
                    .collect(),
            ))
        }
        DeviceList::All if adapters.is_empty() => Err(format!("--devices all: {}", listing())),
        DeviceList::All => Ok(Some(adapters.iter().map(|a| a.index).collect())),
        DeviceList::List(entries) => {
            let mut chosen = Vec::new();
            for entry in entries {
                match entry {
                    DeviceChoice::Index(i) if *i < adapters.len() => chosen.push(*i),
                    DeviceChoice::Index(i) => {
                        return Err(format!("there is no GPU adapter {i}; {}", listing()))
                    }
                    DeviceChoice::Name(name) => {
                        let lower = name.to_lowercase();
                        let matching: Vec<usize> = adapters
                            .iter()
                            .filter(|a| a.name.to_lowercase().contains(&lower))
                            .map(|a| a.index)
                            .collect();
                        if matching.is_empty() {
                            return Err(format!(
                                "no GPU adapter's name contains \"{name}\"; {}",
                                listing()
                            ));
                        }
                        chosen.extend(matching);
                    }
                }
            }
            Ok(Some(chosen))
        }
    }
}

impl GpuContext {
    /// Opens the best adapter on `backends` with its full limits and the optional features it
    /// has. `Err(NoAdapter)` when there is none.
    pub fn new(backends: wgpu::Backends) -> Result<GpuContext, GpuError> {
        let instance = new_instance(backends);
        let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            force_fallback_adapter: false,
            compatible_surface: None,
            ..Default::default()
        }))
        .map_err(|e| GpuError::NoAdapter(format!(" on {backends:?}: {e}")))?;
        GpuContext::on_adapter(instance, adapter)
    }

    /// A device on `adapter` with its full limits and the optional features it has.
    fn on_adapter(
        instance: wgpu::Instance,
        adapter: wgpu::Adapter,
    ) -> Result<GpuContext, GpuError> {
        let adapter_info = adapter.get_info();
        let available = adapter.features();
        let wanted = wgpu::Features::SUBGROUP
            | wgpu::Features::SHADER_INT64
            | wgpu::Features::SHADER_INT64_ATOMIC_MIN_MAX
            | wgpu::Features::TIMESTAMP_QUERY
            | wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES
            | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS
            | wgpu::Features::PIPELINE_CACHE;
        let required_features = available & wanted;
        let limits = adapter.limits();
        let start = std::time::Instant::now();
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("caustica"),
            required_features,
            required_limits: limits.clone(),
            ..Default::default()
        }))
        .map_err(|e| GpuError::NoDevice {
            name: adapter_info.name.clone(),
            backend: format!("{:?}", adapter_info.backend),
            message: e.to_string(),
        })?;
        log::debug!(
            "{}: device opened in {:.1} ms",
            adapter_info.name,
            start.elapsed().as_secs_f64() * 1e3
        );
        let features = GpuFeatures {
            subgroups: required_features.contains(wgpu::Features::SUBGROUP),
            int64: required_features.contains(wgpu::Features::SHADER_INT64),
            int64_atomic_min_max: required_features
                .contains(wgpu::Features::SHADER_INT64_ATOMIC_MIN_MAX),
            timestamps: required_features.contains(wgpu::Features::TIMESTAMP_QUERY),
            timestamps_inside_passes: required_features
                .contains(wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES),
            timestamps_inside_encoders: required_features.contains(
                wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS,
            ),
        };
        let summary = AdapterSummary::of(0, &adapter_info);
        let info = DeviceInfo {
            name: summary.name,
            backend: summary.backend,
            device_type: summary.device_type,
            driver: summary.driver,
            features,
            subgroup_min_size: adapter_info.subgroup_min_size,
            subgroup_max_size: adapter_info.subgroup_max_size,
            max_storage_buffer_binding_size: limits.max_storage_buffer_binding_size,
            max_buffer_size: limits.max_buffer_size,
            max_compute_workgroup_size_x: limits.max_compute_workgroup_size_x,
            max_compute_invocations_per_workgroup: limits.max_compute_invocations_per_workgroup,
            max_compute_workgroups_per_dimension: limits.max_compute_workgroups_per_dimension,
            max_storage_buffers_per_shader_stage: limits.max_storage_buffers_per_shader_stage,
            max_compute_workgroup_storage_size: limits.max_compute_workgroup_storage_size,
            timestamp_period_ns: queue.get_timestamp_period(),
        };
        Ok(GpuContext {
            instance,
            adapter,
            info,
            traffic: Traffic::default(),
            pool: BufferPool::default(),
            clock: features
                .timestamps_inside_encoders
                .then(|| DeviceClock::new(&device, queue.get_timestamp_period())),
            host_clock: HostClock::default(),
            deferred_checks: std::sync::Mutex::new(Vec::new()),
            bind_groups: std::sync::Mutex::new(BindGroupCache::default()),
            kernel_times: KernelTimes::from_env(&device, features.timestamps_inside_encoders)
                .map(std::sync::Arc::new),
            pipeline_cache: default_cache_dir()
                .filter(|_| required_features.contains(wgpu::Features::PIPELINE_CACHE))
                .and_then(|dir| PipelineCacheFile::open(&device, &adapter_info, &dir)),
            device,
            queue,
        })
    }

    /// Opens a context the way the command line does: pinned to Vulkan (or `WGPU_BACKEND`) when
    /// `require_gpu`, otherwise any primary backend.
    pub fn open(require_gpu: bool) -> Result<GpuContext, GpuError> {
        GpuContext::new(backends_to_search(require_gpu))
    }

    /// Checks that one storage binding of `size` bytes is allowed, with an error naming `what`.
    pub fn check_binding_size(&self, what: &str, size: u64) -> Result<(), GpuError> {
        let limit = self.info.binding_limit();
        if size > limit {
            return Err(GpuError::BufferTooLarge {
                what: what.to_string(),
                size,
                limit,
            });
        }
        Ok(())
    }

    /// Submits `commands`, after the clears of reused buffers that were asked for zeroed and
    /// between the device clock's stamps, and returns the submission's index, for
    /// [`GpuContext::wait_for`]. Every submission goes through here (clippy.toml forbids
    /// `Queue::submit` elsewhere).
    pub fn submit<I: IntoIterator<Item = wgpu::CommandBuffer>>(
        &self,
        commands: I,
    ) -> wgpu::SubmissionIndex {
        let timer = std::time::Instant::now();
        let clears = self.pool.record_clears(&self.device);
        let clock = self
            .clock
            .as_ref()
            .and_then(|c| c.brackets(&self.device, self.stage()));
        let (start, end) = match clock {
            Some((a, b)) => (Some(a), Some(b)),
            None => (None, None),
        };
        #[allow(clippy::disallowed_methods)]
        let index = self
            .queue
            .submit(start.into_iter().chain(clears).chain(commands).chain(end));
        Traffic::add(&self.traffic.submissions, 1);
        Traffic::add(&self.traffic.submit_ns, timer.elapsed().as_nanos() as u64);
        index
    }

    /// Names the stage whose submissions follow, for the device clock (`device/<stage>_ms`).
    pub fn set_stage(&self, stage: &'static str) {
        self.host_clock.switch(stage);
        if let Some(times) = &self.kernel_times {
            times.set_stage(stage);
        }
    }

    /// The host's milliseconds per stage, its waits left out, since the last reading.
    pub fn read_host_clock(&self) -> StageTimes {
        self.host_clock.read()
    }

    /// Checks `status` with `check` when the frame's deferred checks run, before anything the
    /// kernel wrote reaches the host.
    pub fn defer_status_check(&self, status: &GpuBuffer, check: StatusCheck) {
        self.deferred_checks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((status.clone(), check));
    }

    /// The status checks deferred so far, leaving none.
    pub fn take_deferred_checks(&self) -> Vec<(GpuBuffer, StatusCheck)> {
        std::mem::take(
            &mut *self
                .deferred_checks
                .lock()
                .unwrap_or_else(|e| e.into_inner()),
        )
    }

    /// The stage named last.
    pub fn stage(&self) -> &'static str {
        self.host_clock.stage()
    }

    /// Writes `data` at `offset` of `buffer` before the next submission's commands; a clear
    /// still pending on the buffer is submitted first, so that it cannot erase the data.
    pub fn write_buffer(&self, buffer: &GpuBuffer, offset: u64, data: &[u8]) {
        if buffer.clear_pending() {
            self.submit([]);
        }
        #[allow(clippy::disallowed_methods)]
        self.queue.write_buffer(buffer, offset, data);
    }

    /// Waits until the device is idle and makes the buffers of dropped leases free for reuse.
    /// Only where every encoder the caller recorded has been submitted (or dropped).
    #[track_caller]
    pub fn recycle_buffers(&self) -> Result<(), GpuError> {
        self.wait_idle()?;
        self.pool.recycle();
        Ok(())
    }

    /// [`GpuContext::recycle_buffers`] at the end of a frame, which also frees buffers that
    /// recent frames have not used.
    pub fn end_frame(&self) -> Result<(), GpuError> {
        self.wait_idle()?;
        {
            let mut cache = self.bind_groups.lock().unwrap_or_else(|e| e.into_inner());
            cache.frame += 1;
            let frame = cache.frame;
            cache
                .groups
                .retain(|_, (_, used)| *used + BIND_GROUP_FRAMES_KEPT >= frame);
        }
        self.pool.end_frame();
        Ok(())
    }

    /// The bind group of `key` made before, or `make`'s (kept for later frames); the second
    /// value is whether it was made now.
    pub fn cached_bind_group(
        &self,
        key: BindKey,
        make: impl FnOnce() -> wgpu::BindGroup,
    ) -> (wgpu::BindGroup, bool) {
        let mut cache = self.bind_groups.lock().unwrap_or_else(|e| e.into_inner());
        let frame = cache.frame;
        if let Some((group, used)) = cache.groups.get_mut(&key) {
            *used = frame;
            return (group.clone(), false);
        }
        let group = make();
        cache.groups.insert(key, (group.clone(), frame));
        (group, true)
    }

    /// Starts the device and host clocks afresh: what they counted before is not read.
    pub fn reset_clocks(&self) {
        if let Some(clock) = &self.clock {
            clock.reset();
        }
        self.host_clock.reset();
    }

    /// The device's busy time over the submissions since the last reading (waits for it to
    /// finish them); `None` without the adapter's timestamps inside encoders.
    pub fn read_device_clock(&self) -> Result<Option<ClockReading>, GpuError> {
        match &self.clock {
            None => Ok(None),
            Some(clock) => clock
                .read(&self.device, &self.queue)
                .map(Some)
                .map_err(|e| GpuError::Device(format!("cannot read the device clock: {e}"))),
        }
    }

    /// Keeps the compiled kernels in `dir` instead of the default directory (none: no cache),
    /// for the kernels made from now on; says whether there is a cache (the adapter must keep
    /// pipeline caches).
    pub fn use_pipeline_cache(&mut self, dir: Option<&std::path::Path>) -> bool {
        let info = self.adapter.get_info();
        self.pipeline_cache = dir
            .filter(|_| {
                self.device
                    .features()
                    .contains(wgpu::Features::PIPELINE_CACHE)
            })
            .and_then(|dir| PipelineCacheFile::open(&self.device, &info, dir));
        self.pipeline_cache.is_some()
    }

    /// Writes the pipeline cache to its file if kernels were compiled since it was last written
    /// (a failure is logged: the render does not depend on it). Says whether it wrote.
    pub fn save_pipeline_cache(&self) -> bool {
        match self.pipeline_cache.as_ref().map(PipelineCacheFile::save) {
            Some(Ok(wrote)) => wrote,
            Some(Err(e)) => {
                log::warn!("the pipeline cache was not saved: {e}");
                false
            }
            None => false,
        }
    }

    /// Turns kernel times on (as `CAUSTICA_KERNEL_TIMES=1` does when the context opens), if the
    /// adapter has timestamps inside encoders; says whether they are on.
    pub fn time_kernels(&mut self) -> bool {
        if self.kernel_times.is_none() && self.info.features.timestamps_inside_encoders {
            self.kernel_times = KernelTimes::new(&self.device).map(std::sync::Arc::new);
        }
        self.kernel_times.is_some()
    }

    /// The device's time per kernel since the last reading (waits for the device); `None`
    /// unless kernel times are on.
    pub fn read_kernel_times(&self) -> Result<Option<Vec<KernelFigure>>, GpuError> {
        match &self.kernel_times {
            None => Ok(None),
            Some(times) => times
                .read(&self.device, &self.queue)
                .map(Some)
                .map_err(|e| GpuError::Device(format!("cannot read the kernel times: {e}"))),
        }
    }

    /// Waits until all submitted work is done (the time counts as the host's wait). Each wait
    /// is logged at debug level with its caller and the stage, so that `RUST_LOG=debug` lists
    /// where a frame waits.
    #[track_caller]
    pub fn wait_idle(&self) -> Result<(), GpuError> {
        self.wait(None)
    }

    /// Waits until the submission `index` and those before it are done, not the ones submitted
    /// after it (which the device goes on with meanwhile). Counted and logged as
    /// [`GpuContext::wait_idle`].
    #[track_caller]
    pub fn wait_for(&self, index: wgpu::SubmissionIndex) -> Result<(), GpuError> {
        self.wait(Some(index))
    }

    #[track_caller]
    fn wait(&self, submission_index: Option<wgpu::SubmissionIndex>) -> Result<(), GpuError> {
        log::debug!(
            "wait for the device at {} during {}",
            std::panic::Location::caller(),
            self.stage()
        );
        let start = std::time::Instant::now();
        let result = self
            .device
            .poll(wgpu::PollType::Wait {
                submission_index,
                timeout: None,
            })
            .map(|_| ())
            .map_err(|e| GpuError::Device(e.to_string()));
        let waited = start.elapsed();
        self.host_clock.waited(waited);
        Traffic::add(&self.traffic.waits, 1);
        Traffic::add(&self.traffic.wait_ns, waited.as_nanos() as u64);
        result
    }
}

/// Whether the environment demands a GPU (`CAUSTICA_REQUIRE_GPU=1`, as CI sets it).
pub fn gpu_required() -> bool {
    std::env::var("CAUSTICA_REQUIRE_GPU").is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
}

/// A GPU context for tests, honouring `CAUSTICA_REQUIRE_GPU`: with it set, a missing adapter is
/// a test failure (panic with the reason); without it, `None` after printing why the test skips.
pub fn test_context() -> Option<GpuContext> {
    let required = gpu_required();
    match GpuContext::open(required) {
        Ok(ctx) => Some(ctx),
        Err(e) if required => {
            panic!("CAUSTICA_REQUIRE_GPU is set but no GPU context could be opened: {e}")
        }
        Err(e) => {
            eprintln!("skipping GPU test: {e} (set CAUSTICA_REQUIRE_GPU=1 to make this a failure)");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn adapter(
        index: usize,
        name: &str,
        backend: &str,
        device_type: wgpu::DeviceType,
    ) -> AdapterSummary {
        AdapterSummary {
            index,
            name: name.into(),
            backend: backend.into(),
            device_type: format!("{device_type:?}"),
            driver: String::new(),
        }
    }

    fn machine() -> Vec<AdapterSummary> {
        vec![
            adapter(0, "NVIDIA H200", "Vulkan", wgpu::DeviceType::DiscreteGpu),
            adapter(
                1,
                "llvmpipe (LLVM 15.0.6, 256 bits)",
                "Vulkan",
                wgpu::DeviceType::Cpu,
            ),
            adapter(2, "NVIDIA H200", "Vulkan", wgpu::DeviceType::DiscreteGpu),
            adapter(3, "NVIDIA H200", "Gl", wgpu::DeviceType::DiscreteGpu),
        ]
    }

    #[test]
    fn auto_devices_are_the_discrete_gpus_of_the_first_ones_backend() {
        let list = resolve_devices(&DeviceList::Auto, &machine()).unwrap();
        assert_eq!(list, Some(vec![0, 2]));
        let software_only = vec![adapter(0, "llvmpipe", "Vulkan", wgpu::DeviceType::Cpu)];
        assert_eq!(
            resolve_devices(&DeviceList::Auto, &software_only).unwrap(),
            None,
            "without a discrete GPU, auto opens the one adapter --device picks"
        );
    }

    #[test]
    fn listed_devices_are_indices_or_name_fragments_in_the_order_given() {
        let parse = |t: &str| DeviceList::parse(t).unwrap();
        assert_eq!(
            resolve_devices(&parse("2,0"), &machine()).unwrap(),
            Some(vec![2, 0])
        );
        assert_eq!(
            resolve_devices(&parse("llvm"), &machine()).unwrap(),
            Some(vec![1])
        );
        assert_eq!(
            resolve_devices(&parse("1,1"), &machine()).unwrap(),
            Some(vec![1, 1]),
            "an index named twice opens two logical devices"
        );
        assert_eq!(
            resolve_devices(&DeviceList::All, &machine()).unwrap(),
            Some(vec![0, 1, 2, 3])
        );
    }

    #[test]
    fn unknown_devices_are_errors_that_list_the_adapters() {
        let e = resolve_devices(&DeviceList::parse("7").unwrap(), &machine()).unwrap_err();
        assert!(e.contains("no GPU adapter 7"), "{e}");
        assert!(e.contains("2  NVIDIA H200 (Vulkan, DiscreteGpu)"), "{e}");
        let e = resolve_devices(&DeviceList::parse("A100").unwrap(), &machine()).unwrap_err();
        assert!(e.contains("contains \"A100\""), "{e}");
        let e = resolve_devices(&DeviceList::All, &[]).unwrap_err();
        assert!(e.contains("no adapter was found"), "{e}");
    }
}
