//! The device clock: a timestamp before and after every submission (`GpuContext::submit`
//! brackets its command buffers), so that a frame can say how long the device worked
//! (`gpu/device_ms` in `--stats`) beside the host's wall time. Submissions run one after
//! another on the one queue, so the sum of their spans is the device's busy time, and the wall
//! time minus it is time the device waited for the host.
//!
//! Each submission is counted under the stage the frame driver named last
//! (`GpuContext::set_stage`), so a frame also says how long the device worked for each stage
//! (`device/<stage>_ms`).
//!
//! Needs the adapter's timestamps inside encoders; without them the clock is absent and the
//! frame reports no device time. A frame with more submissions than the clock has room for
//! times the first ones and counts the rest as untimed.

use std::sync::Mutex;

use crate::render::stats::StageTimes;

/// Submissions one reading can time.
const CAPACITY: u32 = 2048;

/// What the clock read: the device's busy time over the timed submissions, in all and per
/// stage (in the order the stages first submitted).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClockReading {
    pub device_ms: f64,
    pub by_stage: StageTimes,
    /// The device's idle time before each stage's submissions: from the end of the submission
    /// before to the start of the stage's, summed per stage. It says which stage the device
    /// waited for the host to record.
    pub idle_by_stage: StageTimes,
    pub submissions: u32,
    pub untimed: u32,
}

pub struct DeviceClock {
    set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    staging: wgpu::Buffer,
    period_ns: f64,
    state: Mutex<ClockState>,
}

#[derive(Default)]
struct ClockState {
    /// Submissions stamped since the last reading.
    used: u32,
    untimed: u32,
    /// The stage of each stamped submission.
    stages: Vec<&'static str>,
}

impl DeviceClock {
    /// A clock on `device`, whose timestamps tick every `period_ns`.
    pub fn new(device: &wgpu::Device, period_ns: f32) -> DeviceClock {
        let bytes = CAPACITY as u64 * 16;
        DeviceClock {
            set: device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("device clock"),
                ty: wgpu::QueryType::Timestamp,
                count: CAPACITY * 2,
            }),
            resolve: device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("device clock"),
                size: bytes,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            }),
            staging: device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("device clock read-back"),
                size: bytes,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }),
            period_ns: period_ns as f64,
            state: Mutex::new(ClockState::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, ClockState> {
        // Only poisoned if a thread panicked while counting; the counts stay usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The command buffers that stamp the start and the end of one submission of `stage`, or
    /// `None` when the clock is full until its next reading.
    pub fn brackets(
        &self,
        device: &wgpu::Device,
        stage: &'static str,
    ) -> Option<(wgpu::CommandBuffer, wgpu::CommandBuffer)> {
        let mut state = self.state();
        if state.used >= CAPACITY {
            state.untimed += 1;
            return None;
        }
        let index = state.used * 2;
        state.used += 1;
        state.stages.push(stage);
        let stamp = |i: u32| {
            let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("device clock"),
            });
            encoder.write_timestamp(&self.set, i);
            encoder.finish()
        };
        Some((stamp(index), stamp(index + 1)))
    }

    /// Forgets the submissions stamped so far, without reading them (a frame's start).
    pub fn reset(&self) {
        *self.state() = ClockState::default();
    }

    /// The busy time of the submissions stamped since the last reading (waits for the device),
    /// and a fresh start for the next.
    pub fn read(&self, device: &wgpu::Device, queue: &wgpu::Queue) -> Result<ClockReading, String> {
        let (used, untimed, stages) = {
            let mut state = self.state();
            let taken = std::mem::take(&mut *state);
            (taken.used, taken.untimed, taken.stages)
        };
        if used == 0 {
            return Ok(ClockReading {
                untimed,
                ..Default::default()
            });
        }
        let bytes = used as u64 * 16;
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("device clock read-back"),
        });
        encoder.resolve_query_set(&self.set, 0..used * 2, &self.resolve, 0);
        encoder.copy_buffer_to_buffer(&self.resolve, 0, &self.staging, 0, bytes);
        // The read-back itself is not a submission of the frame's work: not bracketed.
        #[allow(clippy::disallowed_methods)]
        queue.submit([encoder.finish()]);
        let slice = self.staging.slice(..bytes);
        let (tx, rx) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| e.to_string())?;
        rx.recv()
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        let ticks: Vec<u64> = {
            let data = slice.get_mapped_range().map_err(|e| e.to_string())?;
            bytemuck::cast_slice(&data[..]).to_vec()
        };
        self.staging.unmap();
        let ms = |ticks: u64| ticks as f64 * self.period_ns / 1e6;
        let mut by_stage = StageTimes::default();
        let mut idle_by_stage = StageTimes::default();
        let mut busy = 0u64;
        let mut previous_end: Option<u64> = None;
        for (pair, stage) in ticks.chunks_exact(2).zip(stages) {
            let span = pair[1].saturating_sub(pair[0]);
            busy += span;
            by_stage.add(stage, ms(span));
            if let Some(end) = previous_end {
                idle_by_stage.add(stage, ms(pair[0].saturating_sub(end)));
            }
            previous_end = Some(pair[1]);
        }
        Ok(ClockReading {
            device_ms: ms(busy),
            by_stage,
            idle_by_stage,
            submissions: used,
            untimed,
        })
    }
}

/// The host's own time per stage, its waits for the device left out: the time from one
/// naming of a stage (`GpuContext::set_stage`) to the next, less the waits in it
/// (`GpuContext::wait_idle`), counts under the first (`host/busy/<stage>_ms` in `--stats`). Beside
/// the device clock it says which stage's recording keeps the device waiting.
#[derive(Debug, Default)]
pub struct HostClock(Mutex<HostClockState>);

#[derive(Debug)]
struct HostClockState {
    stage: &'static str,
    since: std::time::Instant,
    waited: std::time::Duration,
    by_stage: StageTimes,
}

impl Default for HostClockState {
    fn default() -> Self {
        HostClockState {
            stage: "other",
            since: std::time::Instant::now(),
            waited: std::time::Duration::ZERO,
            by_stage: StageTimes::default(),
        }
    }
}

impl HostClockState {
    /// Counts the time since the stage was named (less its waits) under it, and starts anew.
    fn close(&mut self) {
        let now = std::time::Instant::now();
        let ms = now
            .duration_since(self.since)
            .saturating_sub(self.waited)
            .as_secs_f64()
            * 1e3;
        self.by_stage.add(self.stage, ms);
        self.since = now;
        self.waited = std::time::Duration::ZERO;
    }
}

impl HostClock {
    fn state(&self) -> std::sync::MutexGuard<'_, HostClockState> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Names the stage that follows.
    pub fn switch(&self, stage: &'static str) {
        let mut s = self.state();
        s.close();
        s.stage = stage;
    }

    /// The stage named last.
    pub fn stage(&self) -> &'static str {
        self.state().stage
    }

    /// A wait for the device of `d` during the current stage.
    pub fn waited(&self, d: std::time::Duration) {
        self.state().waited += d;
    }

    /// The host's milliseconds per stage since the last reading (in the order the stages were
    /// first named), the current stage's so far included; starts afresh.
    pub fn read(&self) -> StageTimes {
        let mut s = self.state();
        s.close();
        std::mem::take(&mut s.by_stage)
    }

    /// Forgets what was counted, and starts counting under "other".
    pub fn reset(&self) {
        *self.state() = HostClockState::default();
    }
}
