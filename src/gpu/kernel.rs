//! Compute kernels with named bindings, and buffer upload/readback helpers.
//!
//! A kernel is one WGSL file under `shaders/` with one entry point. Its resources are bound by
//! the *names* of the WGSL globals (`var<storage, read> keys: array<u32>;`), looked up in naga's
//! reflection of the module, never by the order of calls: a kernel whose declarations are
//! reordered keeps working, and a missing or unknown name is an error that says which.

use std::collections::BTreeMap;

use bytemuck::Pod;

use super::context::{GpuContext, GpuError, Traffic};
use super::encoder::{Encoder, Grid};
use super::pool::GpuBuffer;
use super::shader;

/// How a kernel's module is created.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checks {
    /// naga's bounds checks and loop bounding stay in (the default, for any kernel).
    Checked,
    /// `create_shader_module_trusted` without runtime checks: only for kernels that a test
    /// compares against their CPU twin.
    Unchecked,
}

/// A compute pipeline and the binding slot of each named resource in group 0.
pub struct Kernel {
    pub name: String,
    pub pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
    /// WGSL global name → (binding index, read-only storage?, is uniform?).
    bindings: BTreeMap<String, (u32, bool, bool)>,
    /// `@workgroup_size` x of the entry point.
    pub workgroup_size: u32,
}

impl Kernel {
    /// Assembles `path` with `defines`, validates it, and builds the pipeline for its entry point.
    pub fn new(
        ctx: &GpuContext,
        path: &str,
        defines: &[&str],
        checks: Checks,
    ) -> Result<Kernel, GpuError> {
        let start = std::time::Instant::now();
        let source =
            shader::assemble(path, defines).map_err(|e| GpuError::Device(e.to_string()))?;
        let module_ir =
            shader::validate(path, &source).map_err(|e| GpuError::Device(e.to_string()))?;
        let entry = module_ir
            .entry_points
            .iter()
            .find(|e| e.stage == naga::ShaderStage::Compute)
            .ok_or_else(|| GpuError::Device(format!("{path}: no @compute entry point")))?;
        let workgroup_size = entry.workgroup_size[0];
        let entry_name = entry.name.clone();
        let mut bindings = BTreeMap::new();
        let mut entries = Vec::new();
        for (_, var) in module_ir.global_variables.iter() {
            let (Some(binding), Some(name)) = (&var.binding, &var.name) else {
                continue;
            };
            if binding.group != 0 {
                return Err(GpuError::Device(format!(
                    "{path}: binding \"{name}\" is not in group 0"
                )));
            }
            let (ty, read_only, uniform) = match var.space {
                naga::AddressSpace::Storage { access } => {
                    let ro = !access.contains(naga::StorageAccess::STORE);
                    (
                        wgpu::BufferBindingType::Storage { read_only: ro },
                        ro,
                        false,
                    )
                }
                naga::AddressSpace::Uniform => (wgpu::BufferBindingType::Uniform, true, true),
                other => {
                    return Err(GpuError::Device(format!(
                        "{path}: binding \"{name}\" in unsupported space {other:?}"
                    )))
                }
            };
            bindings.insert(name.clone(), (binding.binding, read_only, uniform));
            entries.push(wgpu::BindGroupLayoutEntry {
                binding: binding.binding,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty,
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            });
        }
        let naga_ms = start.elapsed().as_secs_f64() * 1e3;
        let desc = wgpu::ShaderModuleDescriptor {
            label: Some(path),
            // The module naga has just parsed and validated, so that wgpu does not parse the
            // WGSL a second time (it still validates it).
            source: wgpu::ShaderSource::Naga(std::borrow::Cow::Owned(module_ir)),
        };
        let module = match checks {
            Checks::Checked => ctx.device.create_shader_module(desc),
            // SAFETY: only kernels whose results a test compares against their CPU twin are
            // created without runtime checks (see `Checks::Unchecked`).
            Checks::Unchecked => unsafe {
                ctx.device
                    .create_shader_module_trusted(desc, wgpu::ShaderRuntimeChecks::unchecked())
            },
        };
        let layout = ctx
            .device
            .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                label: Some(path),
                entries: &entries,
            });
        let pipeline_layout = ctx
            .device
            .create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some(path),
                bind_group_layouts: &[Some(&layout)],
                immediate_size: 0,
            });
        let pipeline = ctx
            .device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(path),
                layout: Some(&pipeline_layout),
                module: &module,
                entry_point: Some(&entry_name),
                compilation_options: Default::default(),
                cache: ctx.pipeline_cache.as_ref().map(|c| c.for_new_pipeline()),
            });
        log::debug!(
            "kernel {path} {defines:?}: {:.1} ms ({naga_ms:.1} ms parsing and validating)",
            start.elapsed().as_secs_f64() * 1e3
        );
        Ok(Kernel {
            name: path.to_string(),
            pipeline,
            layout,
            bindings,
            workgroup_size,
        })
    }

    /// Makes a bind group from `(WGSL name, buffer)` pairs; every binding of the kernel must be
    /// named exactly once.
    pub fn bind(
        &self,
        ctx: &GpuContext,
        resources: &[(&str, &GpuBuffer)],
    ) -> Result<wgpu::BindGroup, GpuError> {
        let timer = std::time::Instant::now();
        let mut entries = Vec::new();
        for (name, buffer) in resources {
            let (slot, _, _) = self.bindings.get(*name).ok_or_else(|| {
                GpuError::Device(format!(
                    "{}: no binding named \"{name}\" (it has {:?})",
                    self.name,
                    self.bindings.keys()
                ))
            })?;
            entries.push(wgpu::BindGroupEntry {
                binding: *slot,
                resource: buffer.binding(),
            });
        }
        for name in self.bindings.keys() {
            if !resources.iter().any(|(n, _)| n == name) {
                return Err(GpuError::Device(format!(
                    "{}: binding \"{name}\" was not given a buffer",
                    self.name
                )));
            }
        }
        let mut key: Vec<(u32, wgpu::Buffer, u64)> = resources
            .iter()
            .zip(&entries)
            .map(|((_, buffer), entry)| (entry.binding, (***buffer).clone(), buffer.size()))
            .collect();
        key.sort_unstable_by_key(|(binding, _, _)| *binding);
        let (group, made) = ctx.cached_bind_group((self.layout.clone(), key), || {
            ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(&self.name),
                layout: &self.layout,
                entries: &entries,
            })
        });
        if made {
            Traffic::add(&ctx.traffic.bind_groups, 1);
        } else {
            Traffic::add(&ctx.traffic.bind_groups_reused, 1);
        }
        Traffic::add(&ctx.traffic.bind_ns, timer.elapsed().as_nanos() as u64);
        Ok(group)
    }

    /// Records one dispatch of `workgroups` (x, y, z) with `bind_group` into `encoder`.
    pub fn dispatch(
        &self,
        encoder: &mut Encoder,
        bind_group: &wgpu::BindGroup,
        workgroups: (u32, u32, u32),
    ) {
        encoder.dispatch(&self.name, &self.pipeline, bind_group, workgroups);
    }

    /// [`Kernel::dispatch`] over any [`Grid`], an indirect one too.
    pub fn dispatch_grid(
        &self,
        encoder: &mut Encoder,
        bind_group: &wgpu::BindGroup,
        grid: Grid<'_>,
    ) {
        encoder.dispatch_grid(&self.name, &self.pipeline, bind_group, grid);
    }

    /// Workgroup counts covering `n` invocations in one dimension, spilling into y when `n`
    /// exceeds the per-dimension limit. Kernels recover the linear index as
    /// `gid.x + gid.y * num_workgroups.x * workgroup_size`.
    pub fn grid_for(&self, ctx: &GpuContext, n: u64) -> (u32, u32, u32) {
        let groups = n.div_ceil(self.workgroup_size as u64).max(1);
        let max = ctx.info.max_compute_workgroups_per_dimension.max(1) as u64;
        if groups <= max {
            (groups as u32, 1, 1)
        } else {
            (max as u32, groups.div_ceil(max) as u32, 1)
        }
    }
}

/// The usages of every storage buffer.
pub const STORAGE_USAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_SRC)
    .union(wgpu::BufferUsages::COPY_DST);

/// A lease from the device's pool on `size` bytes (rounded up to 4) with `usage`: zeroed like a
/// new buffer when `zeroed`, else holding whatever it last held. Only a buffer the pool had to
/// create counts as allocated.
pub fn pooled_buffer(
    ctx: &GpuContext,
    label: &str,
    size: u64,
    usage: wgpu::BufferUsages,
    zeroed: bool,
) -> GpuBuffer {
    let size = size.max(4).next_multiple_of(4);
    let max_buffer = ctx.info.max_buffer_size;
    let (buffer, created) = ctx
        .pool
        .take(&ctx.device, max_buffer, label, size, usage, zeroed);
    if created {
        log::trace!("allocate {label}: {size} bytes");
        Traffic::add(&ctx.traffic.allocated_bytes, buffer.class_size());
    }
    buffer
}

/// A timestamp query set of `count` queries and the pooled buffer they resolve into.
pub fn timestamp_queries(ctx: &GpuContext, label: &str, count: u32) -> (wgpu::QuerySet, GpuBuffer) {
    let set = ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
        label: Some(label),
        ty: wgpu::QueryType::Timestamp,
        count,
    });
    let usage = wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC;
    let resolve = pooled_buffer(ctx, label, count as u64 * 8, usage, false);
    (set, resolve)
}

/// A storage buffer holding `data` (at least 4 bytes, so that empty inputs still bind).
pub fn storage_buffer<T: Pod>(
    ctx: &GpuContext,
    label: &str,
    data: &[T],
) -> Result<GpuBuffer, GpuError> {
    let bytes: &[u8] = bytemuck::cast_slice(data);
    ctx.check_binding_size(label, bytes.len() as u64)?;
    let buffer = pooled_buffer(ctx, label, bytes.len() as u64, STORAGE_USAGE, false);
    write_storage(ctx, &buffer, bytes);
    Ok(buffer)
}

/// Writes `bytes` at the start of `buffer`, padded with zeros to a multiple of 4 (at least 4
/// bytes), and counts them as uploaded.
pub fn write_storage(ctx: &GpuContext, buffer: &GpuBuffer, bytes: &[u8]) {
    Traffic::add(&ctx.traffic.uploaded_bytes, bytes.len() as u64);
    let padded = bytes.len().max(4).next_multiple_of(4);
    if padded == bytes.len() {
        ctx.write_buffer(buffer, 0, bytes);
    } else {
        let mut data = bytes.to_vec();
        data.resize(padded, 0);
        ctx.write_buffer(buffer, 0, &data);
    }
}

/// A storage buffer of `size` bytes (at least 4) whose first use reads zeros.
pub fn storage_buffer_sized(
    ctx: &GpuContext,
    label: &str,
    size: u64,
) -> Result<GpuBuffer, GpuError> {
    ctx.check_binding_size(label, size)?;
    Ok(pooled_buffer(ctx, label, size, STORAGE_USAGE, true))
}

/// A uniform buffer holding `value`.
pub fn uniform_buffer<T: Pod>(ctx: &GpuContext, label: &str, value: &T) -> GpuBuffer {
    let bytes = bytemuck::bytes_of(value);
    let usage = wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST;
    let buffer = pooled_buffer(ctx, label, bytes.len() as u64, usage, false);
    write_storage(ctx, &buffer, bytes);
    buffer
}

/// One `u32` from each `(buffer, element)`, with one read-back: the words are copied into one
/// mappable buffer first.
#[track_caller]
pub fn read_words(ctx: &GpuContext, words: &[(&GpuBuffer, u64)]) -> Result<Vec<u32>, GpuError> {
    if words.is_empty() {
        return Ok(Vec::new());
    }
    let mut encoder = Encoder::new(ctx);
    let staged = stage_words(ctx, &mut encoder, words);
    let index = ctx.submit([encoder.finish()]);
    staged.read(ctx, index)
}

/// `u32` words that a caller's encoder copies into a mappable buffer ([`stage_words`]), read
/// once that encoder's submission is done: the host waits for that submission only, while the
/// device goes on with the ones submitted after it (work recorded before the words are needed).
pub struct StagedWords {
    staging: GpuBuffer,
    count: usize,
}

/// Records copies of one `u32` from each `(buffer, element)` into `encoder`, for
/// [`StagedWords::read`] after the encoder is submitted.
pub fn stage_words(
    ctx: &GpuContext,
    encoder: &mut Encoder,
    words: &[(&GpuBuffer, u64)],
) -> StagedWords {
    let staging = readback_buffer(ctx, words.len() as u64 * 4);
    for (k, (buffer, element)) in words.iter().enumerate() {
        encoder.copy_buffer_to_buffer(buffer, element * 4, &staging, k as u64 * 4, 4);
    }
    StagedWords {
        staging,
        count: words.len(),
    }
}

impl StagedWords {
    /// The words, once `index` (the submission of the encoder they were staged in) is done.
    #[track_caller]
    pub fn read(
        self,
        ctx: &GpuContext,
        index: wgpu::SubmissionIndex,
    ) -> Result<Vec<u32>, GpuError> {
        let size = self.count as u64 * 4;
        if size == 0 {
            return Ok(Vec::new());
        }
        Traffic::add(&ctx.traffic.readbacks, 1);
        Traffic::add(&ctx.traffic.readback_bytes, size);
        map_staging(ctx, &self.staging, size, index, |w: &u32| *w)
    }
}

/// Reads every status word deferred with [`GpuContext::defer_status_check`] in one read-back
/// and returns the first error their checks name.
#[track_caller]
pub fn run_deferred_checks(ctx: &GpuContext) -> Result<(), GpuError> {
    let checks = ctx.take_deferred_checks();
    let words: Vec<(&GpuBuffer, u64)> = checks.iter().map(|(b, _)| (b, 0)).collect();
    let values = read_words(ctx, &words)?;
    for ((_, check), value) in checks.iter().zip(values) {
        check(value)?;
    }
    Ok(())
}

/// Copies the first `count` elements of `buffer` back to the host (waits for the GPU).
#[track_caller]
pub fn read_buffer<T: Pod + Send + Sync>(
    ctx: &GpuContext,
    buffer: &GpuBuffer,
    count: usize,
) -> Result<Vec<T>, GpuError> {
    read_buffer_map(ctx, buffer, count, |t: &T| *t)
}

/// Read-backs at least this large are copied out of mapped memory by rayon's threads: one
/// thread read 33 MB of film in about 20 ms on the lent machine (`host/readback_copy_ms`).
const PARALLEL_READ_BYTES: u64 = 1 << 20;

/// The first `count` elements of `buffer` back on the host, each turned into a `U` by `f` as it
/// leaves mapped memory (one pass, on rayon's threads for large read-backs; waits for the GPU).
#[track_caller]
pub fn read_buffer_map<T, U, F>(
    ctx: &GpuContext,
    buffer: &GpuBuffer,
    count: usize,
    f: F,
) -> Result<Vec<U>, GpuError>
where
    T: Pod + Send + Sync,
    U: Send,
    F: Fn(&T) -> U + Send + Sync,
{
    let size = (count * std::mem::size_of::<T>()) as u64;
    if size == 0 {
        return Ok(Vec::new());
    }
    let (staging, index) = copy_for_readback(ctx, buffer, size);
    map_staging(ctx, &staging, size, index, f)
}

/// Copies the first `size` bytes of `buffer` into a mappable buffer from the pool, counted as
/// a read-back, and submits the copy.
fn copy_for_readback(
    ctx: &GpuContext,
    buffer: &GpuBuffer,
    size: u64,
) -> (GpuBuffer, wgpu::SubmissionIndex) {
    Traffic::add(&ctx.traffic.readbacks, 1);
    Traffic::add(&ctx.traffic.readback_bytes, size);
    let staging = readback_buffer(ctx, size);
    let mut encoder = Encoder::new(ctx);
    encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, size.next_multiple_of(4));
    let index = ctx.submit([encoder.finish()]);
    (staging, index)
}

/// A frame's last read-back, in one submission and one wait for the device: the status words
/// deferred with [`GpuContext::defer_status_check`] (checked first: an error returns before any
/// element is read), `more` words (their values are returned), and the first `count` elements
/// of `buffer`, each split by `f` into a pair without an intermediate vector of pairs (a film's
/// colour and the coverage in its w).
#[track_caller]
pub fn read_checked_unzip<T, A, B, F>(
    ctx: &GpuContext,
    more: &[(&GpuBuffer, u64)],
    buffer: &GpuBuffer,
    count: usize,
    f: F,
) -> Result<(Vec<u32>, Unzipped<A, B>), GpuError>
where
    T: Pod + Send + Sync,
    A: Send,
    B: Send,
    F: Fn(&T) -> (A, B) + Send + Sync,
{
    use rayon::prelude::*;
    let checks = ctx.take_deferred_checks();
    let mut words: Vec<(&GpuBuffer, u64)> = checks.iter().map(|(b, _)| (b, 0)).collect();
    words.extend_from_slice(more);
    let size = (count * std::mem::size_of::<T>()) as u64;
    let mut encoder = Encoder::new(ctx);
    let staged = stage_words(ctx, &mut encoder, &words);
    let staging = (size > 0).then(|| {
        Traffic::add(&ctx.traffic.readbacks, 1);
        Traffic::add(&ctx.traffic.readback_bytes, size);
        let staging = readback_buffer(ctx, size);
        encoder.copy_buffer_to_buffer(buffer, 0, &staging, 0, size.next_multiple_of(4));
        staging
    });
    let index = ctx.submit([encoder.finish()]);
    let mut values = staged.read(ctx, index.clone())?;
    let extra = values.split_off(checks.len());
    for ((_, check), value) in checks.iter().zip(values) {
        check(value)?;
    }
    let (a, b) = match staging {
        Some(staging) => with_mapped(ctx, &staging, size, index, |items: &[T]| {
            items.par_iter().map(&f).unzip()
        })?,
        None => (Vec::new(), Vec::new()),
    };
    Ok((extra, (a, b)))
}

/// Elements split into two vectors ([`read_checked_unzip`]).
pub type Unzipped<A, B> = (Vec<A>, Vec<B>);

/// A mappable buffer of `size` bytes from the pool, for read-backs.
fn readback_buffer(ctx: &GpuContext, size: u64) -> GpuBuffer {
    let usage = wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST;
    pooled_buffer(ctx, "readback", size, usage, false)
}

/// Maps `staging` once the submission `index` is done (waiting for it, not for later ones) and
/// turns its first `size` bytes into `U`s with `f` (on rayon's threads when large).
#[track_caller]
fn map_staging<T, U, F>(
    ctx: &GpuContext,
    staging: &GpuBuffer,
    size: u64,
    index: wgpu::SubmissionIndex,
    f: F,
) -> Result<Vec<U>, GpuError>
where
    T: Pod + Send + Sync,
    U: Send,
    F: Fn(&T) -> U + Send + Sync,
{
    use rayon::prelude::*;
    with_mapped(ctx, staging, size, index, |items: &[T]| {
        if size >= PARALLEL_READ_BYTES {
            let mut out = Vec::new();
            items.par_iter().map(&f).collect_into_vec(&mut out);
            out
        } else {
            items.iter().map(&f).collect()
        }
    })
}

/// Maps `staging` once the submission `index` is done and hands its first `size` bytes, as
/// `T`s, to `read`; the buffer is unmapped afterwards whatever happened.
#[track_caller]
fn with_mapped<T, R>(
    ctx: &GpuContext,
    staging: &GpuBuffer,
    size: u64,
    index: wgpu::SubmissionIndex,
    read: impl FnOnce(&[T]) -> R,
) -> Result<R, GpuError>
where
    T: Pod,
{
    let slice = staging.slice(..size.next_multiple_of(4));
    let (tx, rx) = std::sync::mpsc::channel();
    slice.map_async(wgpu::MapMode::Read, move |r| {
        let _ = tx.send(r);
    });
    ctx.wait_for(index)?;
    rx.recv()
        .map_err(|e| GpuError::Device(format!("readback channel closed: {e}")))?
        .map_err(|e| GpuError::Device(format!("cannot map the readback buffer: {e}")))?;
    let copy = std::time::Instant::now();
    let out = match slice.get_mapped_range() {
        Ok(data) => Ok(read(bytemuck::cast_slice::<u8, T>(&data[..size as usize]))),
        Err(e) => Err(GpuError::Device(format!(
            "cannot read the mapped buffer: {e}"
        ))),
    };
    // Unmapped whatever happened, so that the pool never hands out a mapped buffer.
    staging.unmap();
    let out = out?;
    Traffic::add(
        &ctx.traffic.readback_copy_ns,
        copy.elapsed().as_nanos() as u64,
    );
    Ok(out)
}

/// What `cell` holds, made by `make` the first time (kernels compiled when first needed).
pub(crate) fn get_or_make<T>(
    cell: &std::sync::OnceLock<T>,
    make: impl FnOnce() -> Result<T, GpuError>,
) -> Result<&T, GpuError> {
    if let Some(value) = cell.get() {
        return Ok(value);
    }
    let value = make()?;
    Ok(cell.get_or_init(|| value))
}
