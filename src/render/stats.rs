//! A frame's statistics, typed: each stage fills the fields of its own section
//! ([`WhittedStats`], [`PhotonMapStats`], [`GatherStats`], [`VdStats`], [`GpuFrameStats`], the
//! hierarchy's `accel::BvhStats`), and [`FrameStats::entries`] names every figure in one place:
//! the list that `--stats` prints, the EXR header stores and the benchmarks read by name
//! (`FrameMetadata::stat`). A progressive still joins its passes' statistics with
//! [`FrameStats::join`], each field by its own rule (counts and times add up, means average,
//! facts of the adapter stay). Figures read back from a file's header are known by name only
//! ([`FrameStats::named`]).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::accel::BvhStats;
use crate::render::photons::{PhotonPass, PhotonPassStats};

/// How a figure of one pass joins the same figure of the passes before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Join {
    /// Counts and times: the frame's is the sum.
    Add,
    /// Means and rates: the frame's is the mean over the passes.
    Mean,
    /// Facts that do not change from pass to pass (the adapter's, a buffer's size): the last.
    Last,
}

/// A field of a statistics section: a number, or nothing where the stage did not run.
pub trait Figure {
    fn value(&self) -> Option<f64>;
    /// Joins `other` (one more pass) into `self`, which holds `before` passes.
    fn join(&mut self, other: &Self, how: Join, before: u32);
}

macro_rules! integer_figure {
    ($($t:ty),*) => {$(
        impl Figure for $t {
            fn value(&self) -> Option<f64> {
                Some(*self as f64)
            }
            fn join(&mut self, other: &Self, how: Join, before: u32) {
                *self = match how {
                    Join::Add => self.saturating_add(*other),
                    Join::Mean => {
                        let k = before.max(1) as f64;
                        ((*self as f64 * k + *other as f64) / (k + 1.0)).round() as $t
                    }
                    Join::Last => *other,
                };
            }
        }
    )*};
}
integer_figure!(u32, u64);

impl Figure for f64 {
    fn value(&self) -> Option<f64> {
        Some(*self)
    }
    fn join(&mut self, other: &Self, how: Join, before: u32) {
        *self = match how {
            Join::Add => *self + other,
            Join::Mean => {
                let k = before.max(1) as f64;
                (*self * k + other) / (k + 1.0)
            }
            Join::Last => *other,
        };
    }
}

impl<T: Figure + Clone> Figure for Option<T> {
    fn value(&self) -> Option<f64> {
        self.as_ref().and_then(Figure::value)
    }
    fn join(&mut self, other: &Self, how: Join, before: u32) {
        match (self.as_mut(), other) {
            (Some(a), Some(b)) => a.join(b, how, before),
            (None, Some(b)) => *self = Some(b.clone()),
            (_, None) => {}
        }
    }
}

/// A statistics section: a struct whose fields are figures, each with its name and join rule.
macro_rules! section {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* $field:ident: $ty:ty = $key:literal, $join:ident; )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, Default, PartialEq)]
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        impl $name {
            /// The named figures (those the stage measured), in field order.
            pub fn entries(&self, out: &mut Vec<(String, f64)>) {
                $( if let Some(v) = Figure::value(&self.$field) {
                    out.push(($key.to_string(), v));
                } )*
            }

            /// Joins one more pass's figures into these (of `before` passes).
            pub fn join(&mut self, other: &Self, before: u32) {
                $( Figure::join(&mut self.$field, &other.$field, Join::$join, before); )*
            }
        }
    };
}

section! {
    /// The Whitted part of a frame (both backends): its rays and its wall time (on the CPU, the
    /// whole frame's).
    pub struct WhittedStats {
        primary_rays: u64 = "rays/primary", Add;
        shadow_rays: u64 = "rays/shadow", Add;
        specular_rays: u64 = "rays/specular", Add;
        ms: f64 = "time/whitted_ms", Add;
    }
}

impl WhittedStats {
    /// Millions of rays per second of the frame's wall time.
    pub fn mrays_per_s(&self) -> f64 {
        let rays = (self.primary_rays + self.shadow_rays + self.specular_rays) as f64;
        rays / (self.ms * 1e-3).max(1e-9) / 1e6
    }
}

section! {
    /// The GPU Whitted stages' device times (with the adapter's timestamps).
    pub struct GpuWhittedTimes {
        primary_ms: f64 = "gpu/primary_ms", Add;
        trace_ms: f64 = "gpu/trace_ms", Add;
        /// The part of `trace_ms` spent on camera rays.
        primary_trace_ms: f64 = "gpu/primary_trace_ms", Add;
        shade_ms: f64 = "gpu/shade_ms", Add;
        shadow_ms: f64 = "gpu/shadow_ms", Add;
        spawn_ms: f64 = "gpu/spawn_ms", Add;
        accumulate_ms: f64 = "gpu/accumulate_ms", Add;
    }
}

section! {
    /// What the adapter is and which optional features the pipeline found (1 or 0).
    pub struct AdapterStats {
        subgroups: u32 = "gpu/feature/subgroups", Last;
        int64: u32 = "gpu/feature/int64", Last;
        int64_atomic_min_max: u32 = "gpu/feature/int64_atomic_min_max", Last;
        timestamps: u32 = "gpu/feature/timestamps", Last;
        subgroup_size: u32 = "gpu/subgroup_size", Last;
        max_storage_binding_mib: u64 = "gpu/max_storage_binding_mib", Last;
    }
}

section! {
    /// The host's traffic with the device over a frame (`gpu::context::Traffic`).
    pub struct TrafficStats {
        allocated_bytes: u64 = "gpu/allocated_bytes", Add;
        uploaded_bytes: u64 = "gpu/uploaded_bytes", Add;
        readbacks: u64 = "gpu/readbacks", Add;
        readback_bytes: u64 = "gpu/readback_bytes", Add;
        waits: u64 = "host/waits", Add;
        dispatches: u64 = "gpu/dispatches", Add;
        bind_groups: u64 = "gpu/bind_groups", Add;
        bind_groups_reused: u64 = "gpu/bind_groups_reused", Add;
        submissions: u64 = "gpu/submissions", Add;
        wait_ms: f64 = "host/wait_ms", Add;
        readback_copy_ms: f64 = "host/readback_copy_ms", Add;
        bind_ms: f64 = "host/bind_ms", Add;
        submit_ms: f64 = "host/submit_ms", Add;
    }
}

section! {
    /// A GPU frame's own figures: its shade trees, passes, scene upload, device clock and pool.
    pub struct GpuCounters {
        shade_tree_nodes: u64 = "shade_tree/nodes", Add;
        /// Passes whose shade-tree levels took their room from an earlier frame's (recorded
        /// without reading their counts).
        sized_tree_passes: u64 = "shade_tree/sized_passes", Add;
        /// Frames rendered again because a level outgrew the room an earlier frame gave it.
        shade_tree_retries: u64 = "shade_tree/retries", Add;
        /// Passes cut in two because a buffer outgrew a binding.
        pass_splits: u64 = "frame/pass_splits", Add;
        scene_bytes: u64 = "gpu/scene_bytes", Last;
        scene_uploaded_bytes: u64 = "gpu/scene_uploaded_bytes", Add;
        passes: u32 = "frame/passes", Add;
        /// The device clock's busy time (with timestamps inside encoders).
        device_ms: Option<f64> = "gpu/device_ms", Add;
        timed_submissions: Option<u32> = "gpu/timed_submissions", Add;
        untimed_submissions: Option<u32> = "gpu/untimed_submissions", Add;
        pool_reused: u64 = "gpu/pool_reused", Add;
        pool_held_bytes: u64 = "gpu/pool_held_bytes", Last;
        /// Meshes whose middle level the device built this frame (`--accel wide:gpu_lbvh`).
        device_builds: u32 = "bvh/device_builds", Add;
        device_build_prims: u64 = "bvh/device_build_prims", Add;
        /// Wide nodes those builds made.
        device_build_nodes: u64 = "bvh/device_build_nodes", Add;
        /// The deepest tree they made.
        device_build_depth: u32 = "bvh/device_build_depth", Last;
        /// The host's wall time from recording the builds to their checked results.
        device_build_ms: f64 = "bvh/device_build_ms", Add;
    }
}

/// Milliseconds by stage (the device clock's, the host's), in the order the stages came.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StageTimes(pub Vec<(String, f64)>);

impl StageTimes {
    /// Adds `ms` to `stage`'s time (a new entry after the others when the stage is new).
    pub fn add(&mut self, stage: &str, ms: f64) {
        match self.0.iter_mut().find(|(s, _)| s == stage) {
            Some((_, total)) => *total += ms,
            None => self.0.push((stage.to_string(), ms)),
        }
    }

    fn join(&mut self, other: &StageTimes) {
        for (stage, ms) in &other.0 {
            self.add(stage, *ms);
        }
    }

    fn entries(&self, prefix: &str, out: &mut Vec<(String, f64)>) {
        out.extend(
            self.0
                .iter()
                .map(|(stage, ms)| (format!("{prefix}{stage}_ms"), *ms)),
        );
    }
}

/// One kernel's dispatches in one stage of a frame (`CAUSTICA_KERNEL_TIMES`,
/// `gpu::kernel_times`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KernelFigure {
    /// The stage the frame driver named when the dispatches were recorded
    /// (`GpuContext::set_stage`; empty before any).
    pub stage: String,
    /// The kernel's name (its shader's path).
    pub kernel: String,
    pub dispatches: u32,
    pub ms: f64,
}

/// What a GPU frame adds to the statistics.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GpuFrameStats {
    pub counters: GpuCounters,
    /// With the adapter's timestamps.
    pub whitted_times: Option<GpuWhittedTimes>,
    pub adapter: AdapterStats,
    pub traffic: TrafficStats,
    /// The device's busy time per stage (`device/<stage>_ms`).
    pub device_busy: StageTimes,
    /// The device's idle time before each stage's submissions (`device_idle/<stage>_ms`).
    pub device_idle: StageTimes,
    /// The host's time per stage, its waits left out (`host/busy/<stage>_ms`).
    pub host_busy: StageTimes,
    /// The host's wall time of the driver's steps, waits included (`host/<step>_ms`).
    pub host_steps: StageTimes,
    /// With `CAUSTICA_KERNEL_TIMES`, the device's time per stage and kernel.
    pub kernels: Vec<KernelFigure>,
}

impl GpuFrameStats {
    fn entries(&self, rays: &WhittedStats, out: &mut Vec<(String, f64)>) {
        self.counters.entries(out);
        if let Some(t) = &self.whitted_times {
            t.entries(out);
            let per_ms = |rays: u64, ms: f64| rays as f64 / ms.max(1e-9) / 1e3;
            out.extend([
                (
                    "gpu/primary_mrays_per_s".to_string(),
                    per_ms(rays.primary_rays, t.primary_ms + t.primary_trace_ms),
                ),
                (
                    "gpu/specular_mrays_per_s".to_string(),
                    per_ms(rays.specular_rays, t.trace_ms - t.primary_trace_ms),
                ),
                (
                    "gpu/shadow_mrays_per_s".to_string(),
                    per_ms(rays.shadow_rays, t.shadow_ms),
                ),
            ]);
        }
        self.adapter.entries(out);
        self.traffic.entries(out);
        self.host_busy.entries("host/busy/", out);
        self.device_busy.entries("device/", out);
        self.device_idle.entries("device_idle/", out);
        for k in &self.kernels {
            let name = format!("kernel/{}:{}", k.stage, k.kernel);
            out.push((format!("{name}_ms"), k.ms));
            out.push((format!("{name}_dispatches"), k.dispatches as f64));
        }
        self.host_steps.entries("host/", out);
    }

    fn join(&mut self, other: &GpuFrameStats, before: u32) {
        self.counters.join(&other.counters, before);
        match (&mut self.whitted_times, &other.whitted_times) {
            (Some(a), Some(b)) => a.join(b, before),
            (None, Some(b)) => self.whitted_times = Some(b.clone()),
            _ => {}
        }
        self.adapter.join(&other.adapter, before);
        self.traffic.join(&other.traffic, before);
        self.device_busy.join(&other.device_busy);
        self.device_idle.join(&other.device_idle);
        self.host_busy.join(&other.host_busy);
        self.host_steps.join(&other.host_steps);
        for k in &other.kernels {
            match self
                .kernels
                .iter_mut()
                .find(|m| m.stage == k.stage && m.kernel == k.kernel)
            {
                Some(m) => {
                    m.dispatches += k.dispatches;
                    m.ms += k.ms;
                }
                None => self.kernels.push(k.clone()),
            }
        }
    }
}

/// A photon map's debug layer (`photons_global`, `photons_caustic`) in one pass: the map, its
/// density searches and their rate per second.
pub type ViewSearches = (PhotonPass, u64, f64);

/// One photon map of a frame: its tracing, its kd-tree and the debug layer's searches.
#[derive(Clone, Debug, PartialEq)]
pub struct PhotonMapStats {
    pub pass: PhotonPass,
    pub trace: PhotonPassStats,
    pub tree_build_ms: Option<f64>,
    /// The `photons_*` layer's density searches and their rate (CPU).
    pub view_queries: Option<u64>,
    pub view_queries_per_s: Option<f64>,
}

impl PhotonMapStats {
    pub fn of(pass: PhotonPass, trace: PhotonPassStats) -> PhotonMapStats {
        PhotonMapStats {
            pass,
            trace,
            tree_build_ms: None,
            view_queries: None,
            view_queries_per_s: None,
        }
    }

    fn entries(&self, out: &mut Vec<(String, f64)>) {
        let name = self.pass.name();
        let t = &self.trace;
        out.extend([
            (format!("photons/{name}_emitted"), t.emitted as f64),
            (format!("photons/{name}_stored"), t.stored as f64),
            (format!("photons/{name}_mean_path"), t.mean_path_length()),
            (format!("photons/{name}_trace_ms"), t.trace_ms),
        ]);
        if let Some(ms) = self.tree_build_ms {
            out.push((format!("kdtree/{name}_build_ms"), ms));
        }
        if let Some(q) = self.view_queries {
            out.push((format!("knn/{name}_queries"), q as f64));
        }
        if let Some(rate) = self.view_queries_per_s {
            out.push((format!("knn/{name}_queries_per_s"), rate));
        }
    }

    fn join(&mut self, other: &PhotonMapStats, before: u32) {
        let (a, b) = (&mut self.trace, &other.trace);
        a.emitted += b.emitted;
        a.stored += b.stored;
        a.hits += b.hits;
        a.trace_ms += b.trace_ms;
        self.tree_build_ms
            .join(&other.tree_build_ms, Join::Add, before);
        self.view_queries
            .join(&other.view_queries, Join::Add, before);
        self.view_queries_per_s
            .join(&other.view_queries_per_s, Join::Mean, before);
    }
}

section! {
    /// Photon mapping's second half (each backend measures the stages it has).
    pub struct GatherStats {
        irradiance_photons: Option<u64> = "gather/irradiance_photons", Add;
        precompute_ms: Option<f64> = "gather/precompute_ms", Add;
        shading_points: Option<u64> = "gather/shading_points", Add;
        collect_points_ms: Option<f64> = "gather/collect_points_ms", Add;
        seeds: Option<u64> = "gather/seeds", Add;
        rays: Option<u64> = "gather/rays", Add;
        /// Seeding and the final gather together (CPU).
        seed_and_gather_ms: Option<f64> = "gather/seed_and_gather_ms", Add;
        seeding_ms: Option<f64> = "gather/seeding_ms", Add;
        caustics_ms: Option<f64> = "gather/caustics_ms", Add;
        final_gather_ms: Option<f64> = "gather/final_gather_ms", Add;
        /// The chunks of seeds the final gather was cut into (GPU: its rays fit a binding).
        final_gather_chunks: Option<u64> = "gather/final_gather_chunks", Add;
        irradiance_tree_ms: Option<f64> = "gather/irradiance_tree_ms", Add;
        interpolate_ms: Option<f64> = "gather/interpolate_ms", Add;
        compose_ms: Option<f64> = "gather/compose_ms", Add;
        /// The whole composition's host time (GPU).
        photon_map_ms: Option<f64> = "time/photon_map_ms", Add;
    }
}

impl GatherStats {
    /// Joins one more pass's figures into `frame`'s (`before`: the passes joined already).
    pub fn join_pass(frame: &mut Option<GatherStats>, pass: GatherStats, before: u32) {
        match frame {
            Some(g) => g.join(&pass, before),
            None => *frame = Some(pass),
        }
    }
}

section! {
    /// The VD patches' bottom level in a frame.
    pub struct VdStats {
        /// Patch trees built and their bytes (CPU).
        trees_built: Option<u64> = "vd/trees_built", Add;
        tree_bytes: Option<u64> = "vd/tree_bytes", Add;
        /// The batched bottom level's work (GPU).
        batches: Option<u64> = "vd/batches", Add;
        records: Option<u64> = "vd/records", Add;
        jobs: Option<u64> = "vd/jobs", Add;
        retraces: Option<u64> = "vd/retraces", Add;
        sort_ms: Option<f64> = "vd/sort_ms", Add;
        build_trace_ms: Option<f64> = "vd/build_trace_ms", Add;
        max_level: u32 = "vd/max_level", Last;
        mean_level: f64 = "vd/mean_level", Mean;
        record_queue_bytes: Option<u64> = "vd/record_queue_bytes", Last;
        scratch_bytes: Option<u64> = "vd/scratch_bytes", Last;
        scene_bytes: Option<u64> = "vd/scene_bytes", Last;
        /// What of it the frame sent (GPU): what changed since the last frame.
        scene_uploaded_bytes: Option<u64> = "vd/scene_uploaded_bytes", Add;
    }
}

/// A frame's statistics (see the module docs).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FrameStats {
    /// The hierarchy the frame was rendered with (filled in by the caller that built it).
    pub bvh: Option<BvhStats>,
    pub whitted: WhittedStats,
    pub photon_maps: Vec<PhotonMapStats>,
    pub gather: Option<GatherStats>,
    pub vd: Option<VdStats>,
    pub gpu: Option<GpuFrameStats>,
    /// The passes of a progressive still.
    pub progressive_passes: Option<u32>,
    /// Figures known by name only: those read back from a file's header.
    pub named: Vec<(String, f64)>,
}

impl FrameStats {
    /// Every figure with its name, section by section.
    pub fn entries(&self) -> Vec<(String, f64)> {
        let mut out = Vec::new();
        if let Some(b) = &self.bvh {
            b.entries(&mut out);
        }
        let w = &self.whitted;
        if *w != WhittedStats::default() {
            out.extend([
                ("rays/primary".to_string(), w.primary_rays as f64),
                ("rays/shadow".to_string(), w.shadow_rays as f64),
                ("rays/specular".to_string(), w.specular_rays as f64),
                ("rays/mrays_per_s".to_string(), w.mrays_per_s()),
                ("time/whitted_ms".to_string(), w.ms),
            ]);
        }
        if let Some(v) = &self.vd {
            v.entries(&mut out);
        }
        for m in &self.photon_maps {
            m.entries(&mut out);
        }
        if let Some(g) = &self.gather {
            g.entries(&mut out);
        }
        if let Some(g) = &self.gpu {
            g.entries(w, &mut out);
        }
        if let Some(p) = self.progressive_passes {
            out.push(("progressive/passes".to_string(), p as f64));
        }
        out.extend(self.named.iter().cloned());
        out
    }

    /// The figure called `name`, if the frame has it.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.entries()
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
    }

    /// Whether the frame has no figures.
    pub fn is_empty(&self) -> bool {
        self.entries().is_empty()
    }

    /// The photon map of `pass`, made if the frame has none yet.
    pub fn photon_map(&mut self, pass: PhotonPass) -> &mut PhotonMapStats {
        match self.photon_maps.iter().position(|m| m.pass == pass) {
            Some(i) => &mut self.photon_maps[i],
            None => {
                self.photon_maps
                    .push(PhotonMapStats::of(pass, PhotonPassStats::default()));
                self.photon_maps.last_mut().expect("just pushed")
            }
        }
    }

    /// Joins one more pass's gather figures (`before`: the passes joined already).
    pub fn join_gather(&mut self, pass: GatherStats, before: u32) {
        GatherStats::join_pass(&mut self.gather, pass, before);
    }

    /// The photon maps' debug layers' searches over the frame's passes: per map, the searches
    /// add up and their rates average.
    pub fn add_view_searches(&mut self, searches: &[ViewSearches]) {
        for pass in [PhotonPass::Global, PhotonPass::Caustic] {
            let of_map: Vec<&ViewSearches> = searches.iter().filter(|s| s.0 == pass).collect();
            if of_map.is_empty() {
                continue;
            }
            let map = self.photon_map(pass);
            map.view_queries = Some(of_map.iter().map(|s| s.1).sum());
            map.view_queries_per_s =
                Some(of_map.iter().map(|s| s.2).sum::<f64>() / of_map.len() as f64);
        }
    }

    /// Joins the statistics of one more pass of the frame (`before`: the passes in `self`).
    pub fn join(&mut self, other: &FrameStats, before: u32) {
        if self.bvh.is_none() {
            self.bvh = other.bvh.clone();
        }
        self.whitted.join(&other.whitted, before);
        for m in &other.photon_maps {
            match self.photon_maps.iter_mut().find(|s| s.pass == m.pass) {
                Some(s) => s.join(m, before),
                None => self.photon_maps.push(m.clone()),
            }
        }
        match (&mut self.gather, &other.gather) {
            (Some(a), Some(b)) => a.join(b, before),
            (None, Some(b)) => self.gather = Some(b.clone()),
            _ => {}
        }
        match (&mut self.vd, &other.vd) {
            (Some(a), Some(b)) => a.join(b, before),
            (None, Some(b)) => self.vd = Some(b.clone()),
            _ => {}
        }
        match (&mut self.gpu, &other.gpu) {
            (Some(a), Some(b)) => a.join(b, before),
            (None, Some(b)) => self.gpu = Some(b.clone()),
            _ => {}
        }
        self.progressive_passes
            .join(&other.progressive_passes, Join::Add, before);
        self.named.extend(other.named.iter().cloned());
    }
}

/// A lock-free counter for hot loops.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    #[inline]
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gather(seeds: u64, ms: f64) -> GatherStats {
        GatherStats {
            seeds: Some(seeds),
            seeding_ms: Some(ms),
            ..Default::default()
        }
    }

    #[test]
    fn joined_passes_add_counts_and_times_and_average_means() {
        let mut frame = FrameStats {
            gather: Some(gather(10, 1.0)),
            vd: Some(VdStats {
                mean_level: 2.0,
                max_level: 3,
                ..Default::default()
            }),
            ..Default::default()
        };
        let pass = FrameStats {
            gather: Some(gather(12, 2.5)),
            vd: Some(VdStats {
                mean_level: 4.0,
                max_level: 3,
                ..Default::default()
            }),
            ..Default::default()
        };
        frame.join(&pass, 1);
        assert_eq!(frame.get("gather/seeds"), Some(22.0));
        assert_eq!(frame.get("gather/seeding_ms"), Some(3.5));
        assert_eq!(frame.get("vd/mean_level"), Some(3.0));
        assert_eq!(frame.get("vd/max_level"), Some(3.0));
        // A third pass weighs as much as each of the first two.
        frame.join(&pass, 2);
        assert!((frame.get("vd/mean_level").unwrap() - 10.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn the_debug_layers_searches_add_up_per_map_and_their_rates_average() {
        let mut frame = FrameStats::default();
        frame.add_view_searches(&[
            (PhotonPass::Global, 10, 2.0),
            (PhotonPass::Caustic, 5, 1.0),
            (PhotonPass::Global, 30, 4.0),
        ]);
        assert_eq!(frame.get("knn/global_queries"), Some(40.0));
        assert_eq!(frame.get("knn/global_queries_per_s"), Some(3.0));
        assert_eq!(frame.get("knn/caustic_queries"), Some(5.0));
    }

    #[test]
    fn a_stage_that_did_not_run_has_no_figures() {
        let frame = FrameStats {
            gather: Some(gather(5, 1.0)),
            ..Default::default()
        };
        let names: Vec<String> = frame.entries().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["gather/seeds", "gather/seeding_ms"]);
        assert!(FrameStats::default().is_empty());
    }

    #[test]
    fn stage_times_add_up_by_stage_in_the_order_they_came() {
        let mut a = StageTimes::default();
        a.add("trace", 1.0);
        a.add("shade", 2.0);
        a.add("trace", 0.5);
        let mut out = Vec::new();
        a.entries("device/", &mut out);
        assert_eq!(
            out,
            [
                ("device/trace_ms".to_string(), 1.5),
                ("device/shade_ms".to_string(), 2.0)
            ]
        );
    }
}
