//! The device's buffer pool: every buffer the pipeline asks for comes from here, so that a
//! frame after the first allocates nothing new on the device.
//!
//! - **Leases.** A [`GpuBuffer`] is a lease on a device buffer of a size class (the requested
//!   size rounded up to three significant bits, at most 12.5% more) with its *logical* size: the
//!   size it was asked for, which [`GpuBuffer::size`] reports and which every binding covers (so
//!   a shader's `arrayLength` sees the size asked for, never the class). Leases are shared
//!   (`Clone`); the buffer goes back to the pool when the last one is dropped.
//! - **Retired, then free.** A dropped buffer is *retired*, not free: an encoder still being
//!   recorded, or work already submitted, may use it. Retired buffers become free only at
//!   [`BufferPool::recycle`], which the caller makes where every encoder it recorded has been
//!   submitted and the device is idle (`GpuContext::recycle_buffers` waits for that): the frame
//!   driver's pass and frame ends, and the loops of benchmarks.
//! - **Zeroed like new.** wgpu gives a new buffer's first use zeros; a reused buffer asked for
//!   zeroed gets a clear, recorded here and submitted ahead of the next submission's commands
//!   (`GpuContext::submit`). A write into a buffer whose clear is still pending flushes the
//!   clears first (`GpuContext::write_buffer`), so the clear never lands on the data.
//! - **Oldest first.** Every device buffer gets a serial when it is made, and a request takes
//!   the free buffer of lowest serial on its shelf, so a frame that asks for what the last one
//!   asked for, in the same order, is handed the same buffers (and `GpuContext` finds the bind
//!   groups it made of them).
//! - **Trimmed.** [`BufferPool::end_frame`] drops free buffers that no frame has taken for
//!   [`IDLE_FRAMES_KEPT`] frames, so sizes a scene no longer uses do not stay on the device.

use std::collections::BTreeMap;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// The smallest size class, in bytes.
const MIN_CLASS: u64 = 256;
/// Frames a free buffer may go untaken before [`BufferPool::end_frame`] drops it.
pub const IDLE_FRAMES_KEPT: u32 = 2;

/// The size class of a request of `size` bytes: `size` rounded up to `m · 2^e` with `m` in
/// 8..16, at least [`MIN_CLASS`], and never above `max` (the device's largest buffer) unless
/// `size` itself is.
pub fn size_class(size: u64, max: u64) -> u64 {
    let s = size.max(MIN_CLASS);
    let shift = (63 - s.leading_zeros()).saturating_sub(3);
    let class = s.div_ceil(1 << shift) << shift;
    class.min(max).max(size)
}

/// Which shelf a buffer sits on: its usages and its class (ordered so that the shelves of one
/// usage follow each other by size).
type Key = (u32, u64);

/// A request may take a free buffer of up to this many times its own class.
const MAX_OVERSIZE: u64 = 2;

/// A buffer that no lease holds, its serial, and how many frame ends it has stayed so.
struct Idle {
    buffer: wgpu::Buffer,
    serial: u64,
    idle_frames: u32,
}

#[derive(Default)]
struct Shelves {
    /// Each shelf by decreasing serial: a request takes the oldest buffer of its shelf, so a
    /// frame that asks for what the last one asked for, in the same order, gets the same
    /// buffers (and `GpuContext`'s cached bind groups of them).
    free: BTreeMap<Key, Vec<Idle>>,
    retired: Vec<(Key, u64, wgpu::Buffer)>,
    /// Serials handed out so far (the buffer made last has this one).
    next_serial: u64,
    /// Clears of reused buffers asked for zeroed, not yet submitted.
    clears: Vec<(wgpu::Buffer, u64, Arc<AtomicBool>)>,
    counters: PoolCounters,
}

/// What the pool has done since it was made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolCounters {
    /// Buffers created on the device, and their bytes (size classes).
    pub created: u64,
    pub created_bytes: u64,
    /// Requests served by a buffer from the free shelves.
    pub reused: u64,
    /// Bytes of the buffers that [`BufferPool::end_frame`] dropped.
    pub dropped_bytes: u64,
    /// Bytes of the buffers on the device that the pool owns (leased, retired or free).
    pub held_bytes: u64,
}

/// The pool; `GpuContext` owns one.
#[derive(Default)]
pub struct BufferPool {
    shelves: Arc<Mutex<Shelves>>,
}

/// A lease on a pooled buffer (or a plain wrapper of a buffer made elsewhere): derefs to the
/// `wgpu::Buffer` for copies and clears; [`GpuBuffer::binding`] binds its logical size.
#[derive(Clone)]
pub struct GpuBuffer(Arc<Lease>);

struct Lease {
    buffer: wgpu::Buffer,
    serial: u64,
    size: u64,
    pending_clear: Arc<AtomicBool>,
    home: Option<(Key, Arc<Mutex<Shelves>>)>,
    /// Set by [`GpuBuffer::leave_pool`]: the buffer is freed, not shelved, when the last lease
    /// drops.
    leaving: AtomicBool,
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some((key, shelves)) = &self.home {
            let mut shelves = lock(shelves);
            if self.leaving.load(Ordering::Acquire) {
                shelves.counters.dropped_bytes += key.1;
                shelves.counters.held_bytes -= key.1;
            } else {
                shelves
                    .retired
                    .push((*key, self.serial, self.buffer.clone()));
            }
        }
    }
}

impl std::ops::Deref for GpuBuffer {
    type Target = wgpu::Buffer;

    fn deref(&self) -> &wgpu::Buffer {
        &self.0.buffer
    }
}

impl std::fmt::Debug for GpuBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuBuffer")
            .field("size", &self.0.size)
            .field("class", &self.0.buffer.size())
            .finish()
    }
}

impl GpuBuffer {
    /// A buffer made outside the pool, leased whole; it is freed when the last lease drops.
    pub fn unpooled(buffer: wgpu::Buffer) -> GpuBuffer {
        GpuBuffer(Arc::new(Lease {
            size: buffer.size(),
            serial: 0,
            buffer,
            pending_clear: Arc::new(AtomicBool::new(false)),
            home: None,
            leaving: AtomicBool::new(false),
        }))
    }

    /// Frees the buffer when its last lease drops instead of giving it back to the pool: for a
    /// buffer kept from frame to frame (a scratch role's) that a larger one replaces. Back on a
    /// shelf, it would serve some later request of its class in the next frame, instead of the
    /// buffer that request had, and every bind group made for that one would be made again.
    pub fn leave_pool(&self) {
        self.0.leaving.store(true, Ordering::Release);
    }

    /// The logical size: the bytes asked for (the device buffer may be larger).
    pub fn size(&self) -> u64 {
        self.0.size
    }

    /// The binding of the logical size (what kernels bind).
    pub fn binding(&self) -> wgpu::BindingResource<'_> {
        wgpu::BindingResource::Buffer(wgpu::BufferBinding {
            buffer: &self.0.buffer,
            offset: 0,
            size: NonZeroU64::new(self.0.size),
        })
    }

    /// The bytes of the device buffer behind the lease (its size class).
    pub fn class_size(&self) -> u64 {
        self.0.buffer.size()
    }

    /// Whether a clear of this buffer waits for the next submission.
    pub fn clear_pending(&self) -> bool {
        self.0.pending_clear.load(Ordering::Acquire)
    }
}

/// Only poisoned if a thread panicked while holding it; no code below can.
fn lock(shelves: &Mutex<Shelves>) -> MutexGuard<'_, Shelves> {
    shelves.lock().unwrap_or_else(|e| e.into_inner())
}

impl BufferPool {
    /// A lease on a buffer of at least `size` bytes (a multiple of 4) with `usage`: the
    /// smallest free one with those usages whose class is at least the request's and at most
    /// [`MAX_OVERSIZE`] times it (cleared before its next use when `zeroed`), else a new one
    /// (which wgpu zeroes). The second value is true when the buffer was created.
    /// `max_buffer` is the device's largest buffer.
    pub fn take(
        &self,
        device: &wgpu::Device,
        max_buffer: u64,
        label: &str,
        size: u64,
        usage: wgpu::BufferUsages,
        zeroed: bool,
    ) -> (GpuBuffer, bool) {
        let class = size_class(size, max_buffer);
        let wanted = (usage.bits(), class);
        let mut shelves = lock(&self.shelves);
        let fit = shelves
            .free
            .range(wanted..=(usage.bits(), class.saturating_mul(MAX_OVERSIZE)))
            .find(|(_, v)| !v.is_empty())
            .map(|(k, _)| *k);
        let key = fit.unwrap_or(wanted);
        let reused = fit.and_then(|k| shelves.free.get_mut(&k).and_then(|v| v.pop()));
        let pending_clear = Arc::new(AtomicBool::new(false));
        let (buffer, serial, created) = match reused {
            Some(idle) => {
                shelves.counters.reused += 1;
                if zeroed {
                    pending_clear.store(true, Ordering::Release);
                    shelves
                        .clears
                        .push((idle.buffer.clone(), size, pending_clear.clone()));
                }
                (idle.buffer, idle.serial, false)
            }
            None => {
                shelves.counters.created += 1;
                shelves.counters.created_bytes += class;
                shelves.counters.held_bytes += class;
                let start = std::time::Instant::now();
                let buffer = device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(label),
                    size: class,
                    usage,
                    mapped_at_creation: false,
                });
                log::trace!(
                    "buffer {label}: {:.1} MB made in {:.2} ms",
                    class as f64 / 1e6,
                    start.elapsed().as_secs_f64() * 1e3
                );
                shelves.next_serial += 1;
                (buffer, shelves.next_serial, true)
            }
        };
        let lease = Lease {
            buffer,
            serial,
            size,
            pending_clear,
            home: Some((key, self.shelves.clone())),
            leaving: AtomicBool::new(false),
        };
        (GpuBuffer(Arc::new(lease)), created)
    }

    /// The pending clears as one command buffer (`None` when there are none); their buffers
    /// count as cleared from here on.
    pub fn record_clears(&self, device: &wgpu::Device) -> Option<wgpu::CommandBuffer> {
        let clears = std::mem::take(&mut lock(&self.shelves).clears);
        if clears.is_empty() {
            return None;
        }
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("pool clears"),
        });
        for (buffer, size, pending) in clears {
            encoder.clear_buffer(&buffer, 0, Some(size));
            pending.store(false, Ordering::Release);
        }
        Some(encoder.finish())
    }

    /// Moves every retired buffer to the free shelves. Only where no encoder being recorded
    /// uses a dropped lease and the device has finished all submitted work.
    pub fn recycle(&self) {
        let mut shelves = lock(&self.shelves);
        let retired = std::mem::take(&mut shelves.retired);
        for (key, serial, buffer) in retired {
            let shelf = shelves.free.entry(key).or_default();
            let at = shelf.partition_point(|idle| idle.serial > serial);
            shelf.insert(
                at,
                Idle {
                    buffer,
                    serial,
                    idle_frames: 0,
                },
            );
        }
    }

    /// [`BufferPool::recycle`], then drops the free buffers that have stayed free for
    /// [`IDLE_FRAMES_KEPT`] frame ends.
    pub fn end_frame(&self) {
        self.recycle();
        let mut shelves = lock(&self.shelves);
        let mut dropped = 0u64;
        for (key, idle) in shelves.free.iter_mut() {
            idle.retain_mut(|b| {
                b.idle_frames += 1;
                let keep = b.idle_frames <= IDLE_FRAMES_KEPT;
                if !keep {
                    dropped += key.1;
                }
                keep
            });
        }
        shelves.free.retain(|_, v| !v.is_empty());
        shelves.counters.dropped_bytes += dropped;
        shelves.counters.held_bytes -= dropped;
    }

    /// What the pool has done so far.
    pub fn counters(&self) -> PoolCounters {
        lock(&self.shelves).counters
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes_waste_at_most_an_eighth_and_keep_the_request() {
        for size in (4..100_000u64)
            .step_by(4)
            .chain([1 << 30, (1 << 30) + 4, 3 << 29])
        {
            let class = size_class(size, u64::MAX);
            assert!(class >= size && class >= MIN_CLASS, "{size} -> {class}");
            assert!(
                class <= MIN_CLASS.max(size + size / 8),
                "{size} -> {class} wastes more than 12.5%"
            );
            assert_eq!(class % 4, 0);
        }
        // Sizes of one class share a shelf.
        assert_eq!(size_class(1000, u64::MAX), size_class(1024, u64::MAX));
        // The device's largest buffer caps the class, never the request.
        assert_eq!(size_class(1000, 1010), 1010);
        assert_eq!(size_class(1000, 900), 1000);
    }
}
