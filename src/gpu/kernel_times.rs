//! The device's time per kernel, asked for with `CAUSTICA_KERNEL_TIMES=1` (a developer's tool:
//! the frames bench prints them). The device clock (`gpu::clock`) says how long each stage kept
//! the device busy; this says which of a stage's kernels did. With it on, every dispatch gets a
//! compute pass of its own between two timestamps written in the encoder (wgpu-profiler keeps
//! the query sets and reads them back; the adapter needs timestamps inside encoders), so the
//! frame is a little slower than without (a pass costs the device a few microseconds): the
//! times attribute a frame's device time, they do not replace it.

use std::collections::BTreeMap;
use std::sync::Mutex;

use wgpu_profiler::{GpuProfiler, GpuProfilerQuery, GpuProfilerSettings};

use crate::render::stats::KernelFigure;

/// The environment variable that turns kernel times on.
pub const KERNEL_TIMES_VAR: &str = "CAUSTICA_KERNEL_TIMES";

/// Between the stage and the kernel in a query's label.
const LABEL_SEPARATOR: char = '|';

pub struct KernelTimes {
    profiler: Mutex<GpuProfiler>,
    /// The stage the dispatches recorded now belong to.
    stage: Mutex<&'static str>,
}

impl KernelTimes {
    /// Kernel times on `device` when `CAUSTICA_KERNEL_TIMES` is set to anything but `0` and the
    /// adapter has timestamps inside encoders; `None` otherwise.
    pub fn from_env(device: &wgpu::Device, timestamps: bool) -> Option<KernelTimes> {
        let on = std::env::var(KERNEL_TIMES_VAR).is_ok_and(|v| v != "0" && !v.is_empty());
        if !(on && timestamps) {
            return None;
        }
        KernelTimes::new(device)
    }

    /// Kernel times on `device` (whose adapter must have timestamps inside encoders).
    pub fn new(device: &wgpu::Device) -> Option<KernelTimes> {
        let settings = GpuProfilerSettings {
            enable_timer_queries: true,
            enable_debug_groups: false,
            max_num_pending_frames: 2,
        };
        match GpuProfiler::new(device, settings) {
            Ok(profiler) => Some(KernelTimes {
                profiler: Mutex::new(profiler),
                stage: Mutex::new(""),
            }),
            Err(e) => {
                log::warn!("kernel times are off: {e}");
                None
            }
        }
    }

    fn profiler(&self) -> std::sync::MutexGuard<'_, GpuProfiler> {
        // Only poisoned if a thread panicked while recording; the profiler stays usable.
        self.profiler.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Names the stage whose dispatches follow.
    pub fn set_stage(&self, stage: &'static str) {
        *self.stage.lock().unwrap_or_else(|e| e.into_inner()) = stage;
    }

    /// Writes the timestamp before one dispatch of `kernel` (in a pass of its own).
    pub fn begin(&self, kernel: &str, encoder: &mut wgpu::CommandEncoder) -> GpuProfilerQuery {
        let stage = *self.stage.lock().unwrap_or_else(|e| e.into_inner());
        self.profiler()
            .begin_query(format!("{stage}{LABEL_SEPARATOR}{kernel}"), encoder)
    }

    /// Writes the timestamp after the dispatch's pass.
    pub fn end(&self, encoder: &mut wgpu::CommandEncoder, query: GpuProfilerQuery) {
        self.profiler().end_query(encoder, query);
    }

    /// Every dispatch timed since the last reading, summed per stage and kernel and sorted by
    /// time, the longest first. Waits for the device.
    pub fn read(
        &self,
        device: &wgpu::Device,
        queue: &wgpu::Queue,
    ) -> Result<Vec<KernelFigure>, String> {
        let mut profiler = self.profiler();
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("kernel times"),
        });
        profiler.resolve_queries(&mut encoder);
        // Only the profiler's own query buffers: no pooled buffer waits for a clear.
        #[allow(clippy::disallowed_methods)]
        queue.submit([encoder.finish()]);
        profiler.end_frame().map_err(|e| e.to_string())?;
        device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| e.to_string())?;
        let results = profiler
            .process_finished_frame(queue.get_timestamp_period())
            .unwrap_or_default();
        let mut per_kernel: BTreeMap<String, (u32, f64)> = BTreeMap::new();
        for result in results {
            let Some(time) = result.time else { continue };
            let entry = per_kernel.entry(result.label).or_default();
            entry.0 += 1;
            entry.1 += (time.end - time.start) * 1e3;
        }
        let mut out: Vec<KernelFigure> = per_kernel
            .into_iter()
            .map(|(label, (dispatches, ms))| {
                let (stage, kernel) = label.split_once(LABEL_SEPARATOR).unwrap_or(("", &label));
                KernelFigure {
                    stage: stage.to_string(),
                    kernel: kernel.to_string(),
                    dispatches,
                    ms,
                }
            })
            .collect();
        out.sort_by(|a, b| b.ms.total_cmp(&a.ms));
        Ok(out)
    }
}
