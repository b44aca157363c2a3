//! The command encoder every stage records into: consecutive dispatches share one compute pass,
//! which wgpu still separates with the barriers their buffers need. A compute pass of its own
//! for each dispatch cost the device 6.6–7.4 µs and the host about 10 µs per dispatch on the
//! lent H200, one shared pass 1.9–2.6 µs and 1.1 µs (`cargo bench --bench
//! dispatch_overhead`, docs/performance.md). Any other command (a copy, a clear, a timestamped
//! pass) closes the open pass first, so commands keep their recorded order.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use super::context::{GpuContext, Traffic};
use super::kernel_times::KernelTimes;

/// The workgroups of a dispatch: counts known when it is recorded, or arguments the device
/// writes before it runs (an indirect dispatch: three `u32` at a byte offset of a buffer made
/// with `INDIRECT` usage, such as `gpu::prims::Primitives::dispatch_args` writes).
#[derive(Clone, Copy)]
pub enum Grid<'a> {
    Direct((u32, u32, u32)),
    Indirect(&'a wgpu::Buffer, u64),
}

impl Grid<'_> {
    fn record(self, pass: &mut wgpu::ComputePass<'_>) {
        match self {
            Grid::Direct((x, y, z)) => pass.dispatch_workgroups(x, y, z),
            Grid::Indirect(buffer, offset) => pass.dispatch_workgroups_indirect(buffer, offset),
        }
    }
}

pub struct Encoder {
    inner: wgpu::CommandEncoder,
    /// The compute pass the last dispatches went into, while no other command came between.
    pass: Option<wgpu::ComputePass<'static>>,
    dispatches: u64,
    /// The context's count of dispatches, which the encoder's are added to when it finishes.
    counter: Arc<AtomicU64>,
    /// With kernel times on (`gpu::kernel_times`), each dispatch gets a timed pass of its own.
    kernel_times: Option<Arc<KernelTimes>>,
}

impl Encoder {
    pub fn new(ctx: &GpuContext) -> Encoder {
        Encoder {
            inner: ctx
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None }),
            pass: None,
            dispatches: 0,
            counter: ctx.traffic.dispatches.clone(),
            kernel_times: ctx.kernel_times.clone(),
        }
    }

    /// Records a dispatch of `pipeline` (the kernel called `name`) with `bind_group` over
    /// `workgroups`, in the open pass (in a timed pass of its own with kernel times on).
    pub fn dispatch(
        &mut self,
        name: &str,
        pipeline: &wgpu::ComputePipeline,
        bind_group: &wgpu::BindGroup,
        workgroups: (u32, u32, u32),
    ) {
        self.dispatch_grid(name, pipeline, bind_group, Grid::Direct(workgroups));
    }

    /// [`Encoder::dispatch`] over any [`Grid`], an indirect one too.
    pub fn dispatch_grid(
        &mut self,
        name: &str,
        pipeline: &wgpu::ComputePipeline,
        bind_group: &wgpu::BindGroup,
        grid: Grid<'_>,
    ) {
        if self.kernel_times.is_some() {
            self.dispatch_grid_in_pass(name, pipeline, bind_group, grid, None);
            return;
        }
        self.dispatches += 1;
        let inner = &mut self.inner;
        let pass = self.pass.get_or_insert_with(|| {
            inner
                .begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: None,
                    timestamp_writes: None,
                })
                .forget_lifetime()
        });
        pass.set_pipeline(pipeline);
        pass.set_bind_group(0, bind_group, &[]);
        grid.record(pass);
    }

    /// The encoder for any other command, the open pass closed first.
    pub fn raw(&mut self) -> &mut wgpu::CommandEncoder {
        self.pass = None;
        &mut self.inner
    }

    pub fn clear_buffer(&mut self, buffer: &wgpu::Buffer, offset: u64, size: Option<u64>) {
        self.raw().clear_buffer(buffer, offset, size);
    }

    pub fn copy_buffer_to_buffer(
        &mut self,
        source: &wgpu::Buffer,
        source_offset: u64,
        destination: &wgpu::Buffer,
        destination_offset: u64,
        size: u64,
    ) {
        self.raw().copy_buffer_to_buffer(
            source,
            source_offset,
            destination,
            destination_offset,
            size,
        );
    }

    pub fn resolve_query_set(
        &mut self,
        set: &wgpu::QuerySet,
        range: std::ops::Range<u32>,
        destination: &wgpu::Buffer,
        offset: u64,
    ) {
        self.raw()
            .resolve_query_set(set, range, destination, offset);
    }

    /// A compute pass of its own (for timestamp writes), after the open one.
    pub fn begin_compute_pass<'e>(
        &'e mut self,
        desc: &wgpu::ComputePassDescriptor<'_>,
    ) -> wgpu::ComputePass<'e> {
        self.dispatches += 1;
        self.raw().begin_compute_pass(desc)
    }

    /// Records a dispatch of `pipeline` (the kernel called `name`) in a compute pass of its
    /// own, with `timestamp_writes` at the pass's ends if given; with kernel times on, between
    /// two timestamps of the kernel's too.
    pub fn dispatch_in_pass(
        &mut self,
        name: &str,
        pipeline: &wgpu::ComputePipeline,
        bind_group: &wgpu::BindGroup,
        workgroups: (u32, u32, u32),
        timestamp_writes: Option<wgpu::ComputePassTimestampWrites<'_>>,
    ) {
        let grid = Grid::Direct(workgroups);
        self.dispatch_grid_in_pass(name, pipeline, bind_group, grid, timestamp_writes);
    }

    /// [`Encoder::dispatch_in_pass`] over any [`Grid`], an indirect one too.
    pub fn dispatch_grid_in_pass(
        &mut self,
        name: &str,
        pipeline: &wgpu::ComputePipeline,
        bind_group: &wgpu::BindGroup,
        grid: Grid<'_>,
        timestamp_writes: Option<wgpu::ComputePassTimestampWrites<'_>>,
    ) {
        self.dispatches += 1;
        self.pass = None;
        let query = self
            .kernel_times
            .as_ref()
            .map(|times| times.begin(name, &mut self.inner));
        {
            let mut pass = self.inner.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some(name),
                timestamp_writes,
            });
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, bind_group, &[]);
            grid.record(&mut pass);
        }
        if let (Some(times), Some(query)) = (&self.kernel_times, query) {
            times.end(&mut self.inner, query);
        }
    }

    pub fn finish(mut self) -> wgpu::CommandBuffer {
        self.pass = None;
        Traffic::add(&self.counter, self.dispatches);
        self.inner.finish()
    }
}
