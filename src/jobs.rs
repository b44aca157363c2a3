//! A render job, the whole of `caustica render`: every frame evaluated first, then the frames
//! handed out to the job's devices (or, for one progressive still, its passes), and the files
//! written on threads of their own while the devices go on rendering.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Mutex};
use std::time::Instant;

use crate::api::{
    evaluate_frame, load_scene_scoped, prepare_for, select_backends, Device, Error, Overrides,
};
use crate::render::progress::ProgressSink;
use crate::render::schedule::WorkError;
use crate::render::{self, Backend, Frame, RenderOptions};
use crate::scene::{self, Scene};
use crate::{accel, io};

/// What to render and how: the whole of `caustica render`.
#[derive(Clone, Debug)]
pub struct RenderJob {
    pub scene_path: PathBuf,
    /// Frames to render, each within the scene's `frames` range; the whole range when `None`.
    pub frames: Option<Vec<i64>>,
    pub overrides: Overrides,
    /// `-D NAME=VALUE` overrides of top-level `let`s, applied in order.
    pub defines: Vec<String>,
    pub device: Device,
    /// The GPUs to render on, instead of the scene's `film { devices }` (`--devices`).
    pub devices: Option<scene::DeviceList>,
    /// Also write a tone-mapped PNG here (`####` becomes the frame number).
    pub preview: Option<String>,
    /// Exposure in stops of the PNGs (the preview, and an output path ending in `.png`).
    pub exposure: f32,
    /// Where the frames report their phases and the sequence its frames (`render::progress`).
    pub progress: Option<ProgressSink>,
    /// Progressive rendering stops starting passes after this many seconds per frame
    /// (`--time`); with no passes set it runs as many as fit.
    pub time_limit: Option<f64>,
    /// Only this shard's frames (`--shard I/N`): independent jobs, one per shard, render every
    /// frame of the range exactly once between them.
    pub shard: Option<Shard>,
    /// Leave frames whose EXR exists alone (`--skip-existing`, Blender's no-overwrite).
    pub skip_existing: bool,
    /// Claim a frame by creating its EXR empty, exclusively, before rendering it, and skip a
    /// frame whose EXR exists: finished, or claimed by another job sharing the folder
    /// (`--placeholders`, as Blender's). The render then renames the whole file over it.
    pub placeholders: bool,
    /// Time the GPU's Whitted phases (`RenderOptions::phase_times`, `--stats`).
    pub phase_times: bool,
    /// Where the scene's includes may come from (`--allow-includes-outside`: anywhere).
    pub includes: crate::api::IncludeScope,
}

impl RenderJob {
    /// A job that renders every frame of `scene_path` as the file says, on `device`: no
    /// overrides, no preview, no progress bar, no shard; the other fields are set on top of it.
    pub fn new(scene_path: impl Into<PathBuf>, device: Device) -> RenderJob {
        RenderJob {
            scene_path: scene_path.into(),
            frames: None,
            overrides: Overrides::default(),
            defines: Vec::new(),
            device,
            devices: None,
            preview: None,
            exposure: 0.0,
            progress: None,
            time_limit: None,
            shard: None,
            skip_existing: false,
            placeholders: false,
            phase_times: false,
            includes: crate::api::IncludeScope::SceneFolder,
        }
    }
}

/// One of `count` independent jobs that share a frame range (`--shard I/N`): it renders the
/// range's frames number `index`, `index + count`, `index + 2·count`, … (counting from 0), so
/// that a Slurm job array or a Kubernetes indexed job can pass its index straight through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl Shard {
    /// Parses `I/N` with `0 <= I < N`.
    pub fn parse(text: &str) -> Result<Shard, String> {
        let bad = || format!("bad shard \"{text}\": expected I/N with 0 <= I < N, e.g. 0/4");
        let (i, n) = text.split_once('/').ok_or_else(bad)?;
        let index: u64 = i.trim().parse().map_err(|_| bad())?;
        let count: u64 = n.trim().parse().map_err(|_| bad())?;
        if index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    /// How many of `total` frames are this shard's ([`Shard::of`]), without counting them.
    pub fn count_of(self, total: u64) -> u64 {
        if total <= self.index {
            0
        } else {
            (total - self.index - 1) / self.count.max(1) + 1
        }
    }

    /// This shard's share of `frames`: the `index`-th, then every `count`-th after it.
    pub fn of(self, frames: impl Iterator<Item = i64>) -> impl Iterator<Item = i64> {
        frames
            .skip(self.index.try_into().unwrap_or(usize::MAX))
            .step_by(self.count.try_into().unwrap_or(usize::MAX))
    }
}

/// What happened to one frame.
#[derive(Clone, Debug)]
pub struct FrameReport {
    pub frame: i64,
    /// "cpu", or the GPU adapter and its backend.
    pub device: String,
    pub exr: PathBuf,
    pub preview: Option<PathBuf>,
    pub build_seconds: f64,
    pub render_seconds: f64,
    /// The frame's statistics, its hierarchy's included.
    pub stats: render::FrameStats,
    /// Not rendered: its EXR existed (`--skip-existing`) or another job claimed it
    /// (`--placeholders`). Nothing else is filled in.
    pub skipped: bool,
}

impl FrameReport {
    fn skipped(scene: &Scene) -> FrameReport {
        FrameReport {
            frame: scene.frame,
            device: String::new(),
            exr: scene.output.path_for_frame(scene.frame),
            preview: None,
            build_seconds: 0.0,
            render_seconds: 0.0,
            stats: render::FrameStats::default(),
            skipped: true,
        }
    }
}

/// Whether a frame is to be rendered, as `--skip-existing` and `--placeholders` decide; with
/// placeholders, a frame this job renders is claimed on disk first. The claims of a job are
/// remembered, so that a frame handed back by a failed device is still this job's.
struct Claims {
    skip_existing: bool,
    placeholders: bool,
    claimed: Mutex<BTreeSet<usize>>,
    /// The locks of the frames being rendered, without placeholders (which claim by creating
    /// the EXR itself).
    locks: Mutex<BTreeMap<usize, io::OutputLock>>,
}

impl Claims {
    fn of(job: &RenderJob) -> Claims {
        Claims {
            skip_existing: job.skip_existing,
            placeholders: job.placeholders,
            claimed: Mutex::new(BTreeSet::new()),
            locks: Mutex::new(BTreeMap::new()),
        }
    }

    /// Whether frame `i` (whose EXR is `path`) is this job's to render.
    fn take(&self, i: usize, path: &Path) -> Result<bool, Error> {
        let mut claimed = self.claimed.lock().unwrap_or_else(|e| e.into_inner());
        if claimed.contains(&i) {
            return Ok(true);
        }
        if !self.placeholders {
            if self.skip_existing && path.exists() {
                return Ok(false);
            }
            // Another render writing this frame's file is an error, not a race.
            let lock = io::OutputLock::acquire(path)?;
            self.locks
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(i, lock);
            claimed.insert(i);
            return Ok(true);
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| io::IoError::write(dir, e))?;
        }
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
        {
            Ok(_) => {
                io::note_placeholder(path, false);
                claimed.insert(i);
                Ok(true)
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(io::IoError::write(path, e).into()),
        }
    }

    /// Frame `i` (whose EXR is `path`) was written: its claim is fulfilled, its lock released.
    fn fulfilled(&self, i: usize, path: &Path) {
        self.claimed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&i);
        io::note_placeholder(path, true);
        self.locks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&i);
    }

    /// Removes the placeholders this job made and did not fill (a render that stopped).
    fn release(&self, scenes: &[Scene]) {
        for &i in self
            .claimed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            let path = scenes[i].output.path_for_frame(scenes[i].frame);
            // Only an empty file is a placeholder; a whole frame is never removed.
            if self.placeholders && std::fs::metadata(&path).is_ok_and(|m| m.len() == 0) {
                let _ = std::fs::remove_file(&path);
            }
            io::note_placeholder(&path, true);
        }
        self.locks.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}

/// Renders every frame of a job and writes its outputs. Each file is written whole or not at
/// all; the scene is checked for every frame before anything is rendered. The frames go to the
/// job's devices ([`select_backends`]) as in [`render_animation_on`].
pub fn render_animation(
    job: &RenderJob,
    on_frame: impl FnMut(&FrameReport),
) -> Result<Vec<FrameReport>, Error> {
    let (scenes, job) = evaluate_job(job)?;
    let job = &job;
    // A shard of a range shorter than the shards has nothing to render.
    let Some(first) = scenes.first() else {
        return Ok(Vec::new());
    };
    // Every frame's `film { devices }` is the first's: a job opens its devices once.
    let devices = job
        .devices
        .clone()
        .unwrap_or_else(|| first.film.devices.clone());
    let backends = select_backends(job.device, &devices)?;
    let devices: Vec<&dyn Backend> = backends.iter().map(|b| b.as_ref()).collect();
    render_scenes(&scenes, &devices, job, on_frame)
}

/// [`render_animation`] on the given backends (`job.device` and `job.devices` are not
/// consulted). With several, each takes the next frame when it finishes one, or, for a job of
/// one progressive frame, the next pass. A backend that fails leaves the render and its frame
/// or pass goes to another (the failure is logged once); the frames are the ones one backend
/// renders. `on_frame` is called in frame order.
pub fn render_animation_on(
    job: &RenderJob,
    devices: &[&dyn Backend],
    on_frame: impl FnMut(&FrameReport),
) -> Result<Vec<FrameReport>, Error> {
    let (scenes, job) = evaluate_job(job)?;
    render_scenes(&scenes, devices, &job, on_frame)
}

/// Evaluates every frame of a job, up front, so that an error in frame 40 stops the run before
/// frame 1 is written; files are loaded once through the cache and shared by the frames.
/// A job of several frames whose output (or preview) pattern has no `#` writes each frame to
/// its own file: `_####` goes before the extension (`shot.exr` → `shot_0001.exr`); the job
/// comes back with its preview pattern so numbered.
fn evaluate_job(job: &RenderJob) -> Result<(Vec<Scene>, RenderJob), Error> {
    let file = load_scene_scoped(&job.scene_path, &job.defines, job.includes)?;
    let range = file.frame_range()?;
    if let Some(f) = job
        .frames
        .iter()
        .flatten()
        .find(|&&f| f < range.first || f > range.last)
    {
        return Err(Error::Usage(format!(
            "frame {f} is outside the scene's frames {}..{}",
            range.first, range.last
        )));
    }
    let whole = Shard { index: 0, count: 1 };
    if job.frames.is_none() {
        // The whole range, evaluated up front: bounded before anything is evaluated.
        let count = job.shard.unwrap_or(whole).count_of(range.len());
        if count > crate::api::MAX_LISTED_FRAMES {
            return Err(Error::Usage(format!(
                "the scene's frames {}..{} are {} frames{}, and one render takes at most {}: \
                 choose some with --frames (e.g. --frames {}..{}) or split them with --shard",
                range.first,
                range.last,
                range.len(),
                if count < range.len() {
                    format!(" ({count} in this shard)")
                } else {
                    String::new()
                },
                crate::api::MAX_LISTED_FRAMES,
                range.first,
                range.first + 99
            )));
        }
    }
    // Several frames in the job (before sharding: shards of one job share its files).
    let several = job
        .frames
        .as_ref()
        .map_or(range.last > range.first, |f| f.len() > 1);
    let frames: Box<dyn Iterator<Item = i64>> = match &job.frames {
        Some(frames) => Box::new(frames.iter().copied()),
        None => Box::new(range.first..=range.last),
    };
    let assets = io::AssetCache::default();
    let mut scenes = job
        .shard
        .unwrap_or(whole)
        .of(frames)
        .map(|frame| evaluate_frame(&file, frame, &assets, &job.overrides))
        .collect::<Result<Vec<Scene>, Error>>()?;
    if let Some([x0, y0, x1, y1]) = scenes.first().and_then(|s| s.film.crop_pixels()) {
        if x0 >= x1 || y0 >= y1 {
            let film = &scenes[0].film;
            return Err(Error::Usage(format!(
                "--crop: the window holds no pixel of the {}x{} image",
                film.width, film.height
            )));
        }
    }
    let mut job = job.clone();
    if several {
        for scene in &mut scenes {
            scene.output.path = with_frame_number(&scene.output.path);
        }
        job.preview = job.preview.as_deref().map(with_frame_number);
    }
    if let Some(pattern) = &job.preview {
        if let Some(scene) = scenes.iter().find(|s| {
            scene::expand_frame_pattern(pattern, s.frame) == s.output.path_for_frame(s.frame)
        }) {
            return Err(Error::Usage(format!(
                "--preview: \"{}\" is the frame's output image as well; give the preview a path of its own",
                scene.output.path_for_frame(scene.frame).display()
            )));
        }
    }
    Ok((scenes, job))
}

/// `pattern` with `_####` before its extension when it has no `#` (`shot.exr` → `shot_####.exr`).
fn with_frame_number(pattern: &str) -> String {
    if pattern.contains('#') {
        return pattern.to_string();
    }
    let path = std::path::Path::new(pattern);
    match (path.file_stem(), path.extension()) {
        (Some(stem), Some(ext)) => path
            .with_file_name(format!(
                "{}_####.{}",
                stem.to_string_lossy(),
                ext.to_string_lossy()
            ))
            .to_string_lossy()
            .into_owned(),
        _ => format!("{pattern}_####"),
    }
}

/// Logs a device that failed and left the render, and what goes to another device.
fn report_failure(failure: &render::schedule::DeviceFailure, work: &str) {
    log::warn!(
        "{} failed and leaves the render ({}); {work} goes to another device",
        failure.device,
        failure.error,
    );
}

/// How many threads write a job's files beside `devices` devices: writing a frame takes about
/// as long as rendering it (a 1080p EXR of seven channels, mostly the file itself), so the
/// files are written while the devices go on rendering.
fn writer_threads(devices: usize) -> usize {
    devices + 2
}

/// Renders and writes evaluated frames on `devices` (see [`render_animation_on`]). Each device
/// hands its rendered frame to the writers and takes the next; at most one frame per device
/// waits for a writer, so a slow disk holds the devices back instead of filling memory.
fn render_scenes(
    scenes: &[Scene],
    devices: &[&dyn Backend],
    job: &RenderJob,
    mut on_frame: impl FnMut(&FrameReport),
) -> Result<Vec<FrameReport>, Error> {
    let meshes = accel::MeshBuildCache::default();
    let options = RenderOptions {
        progress: job.progress.clone(),
        phase_times: job.phase_times,
        ..Default::default()
    };
    if let Some(p) = &job.progress {
        p.0.sequence(scenes.len());
    }
    let claims = Claims::of(job);
    let outcome = render_claimed(
        scenes,
        devices,
        job,
        &claims,
        &options,
        &meshes,
        &mut on_frame,
    );
    if outcome.is_err() {
        claims.release(scenes);
    }
    outcome
}

/// [`render_scenes`] with the job's claims.
fn render_claimed(
    scenes: &[Scene],
    devices: &[&dyn Backend],
    job: &RenderJob,
    claims: &Claims,
    options: &RenderOptions,
    meshes: &accel::MeshBuildCache,
    on_frame: &mut dyn FnMut(&FrameReport),
) -> Result<Vec<FrameReport>, Error> {
    let exr = |i: usize| scenes[i].output.path_for_frame(scenes[i].frame);
    if let [scene] = scenes {
        if render::progressive::Progression::of(scene, job.time_limit).passes > 1 {
            // One progressive still: its passes go to the devices.
            let report = if claims.take(0, &exr(0))? {
                started(job, scene.frame);
                let frame = render_scene(scene, meshes, devices, options, job)?;
                finished(job, scene.frame);
                let report = write_outputs(scene, frame, job)?;
                claims.fulfilled(0, &exr(0));
                report
            } else {
                skipped(job, scene.frame);
                FrameReport::skipped(scene)
            };
            on_frame(&report);
            return Ok(vec![report]);
        }
    }
    // Frames (a single one included) go to the first device free, one at a time.
    let mut reports: Vec<FrameReport> = Vec::new();
    // Frames written before an earlier one wait for their turn to be reported.
    let mut waiting: BTreeMap<usize, FrameReport> = BTreeMap::new();
    let mut deliver = |(i, written): (usize, Result<FrameReport, Error>)| -> Result<(), Error> {
        waiting.insert(i, written?);
        while let Some(report) = waiting.remove(&reports.len()) {
            on_frame(&report);
            reports.push(report);
        }
        Ok(())
    };
    let (to_write, queue) = mpsc::sync_channel::<(usize, Frame)>(devices.len());
    let queue = Mutex::new(queue);
    let (written_sender, written) = mpsc::channel::<(usize, Result<FrameReport, Error>)>();
    let outcome = std::thread::scope(|s| -> Result<(), Error> {
        for _ in 0..writer_threads(devices.len()) {
            let (queue, written_sender) = (&queue, written_sender.clone());
            s.spawn(move || loop {
                // Only poisoned if a writer panicked while waiting, which recv does not.
                let next = queue.lock().unwrap_or_else(|e| e.into_inner()).recv();
                let Ok((i, frame)) = next else { break };
                let report = write_outputs(&scenes[i], frame, job);
                if report.is_ok() {
                    claims.fulfilled(i, &exr(i));
                }
                if written_sender.send((i, report)).is_err() {
                    break;
                }
            });
        }
        drop(written_sender);
        // Ok(false): the frame is not this job's (skipped).
        let work = |device: &dyn Backend, i: usize| -> Result<bool, WorkError<Error>> {
            if !claims.take(i, &exr(i)).map_err(WorkError::Fatal)? {
                skipped(job, scenes[i].frame);
                return Ok(false);
            }
            started(job, scenes[i].frame);
            let frame =
                render_scene(&scenes[i], meshes, &[device], options, job).map_err(|e| match e {
                    Error::Render(e) => WorkError::Device(e),
                    other => WorkError::Fatal(other),
                })?;
            finished(job, scenes[i].frame);
            // The writers stop only once this sender is dropped, after the last frame.
            to_write
                .send((i, frame))
                .map_err(|_| WorkError::Fatal(render::RenderError::Cancelled.into()))?;
            Ok(true)
        };
        let rendered = render::schedule::hand_out(
            devices,
            scenes.len(),
            &|_| true,
            &work,
            &mut |f| report_failure(f, &format!("frame {}", scenes[f.item].frame)),
            &mut |i, rendered: bool| -> Result<(), Error> {
                if !rendered {
                    deliver((i, Ok(FrameReport::skipped(&scenes[i]))))?;
                }
                // Report what was written meanwhile; a file that failed stops the render.
                while let Ok(written) = written.try_recv() {
                    deliver(written)?;
                }
                Ok(())
            },
        );
        // No more frames: the writers finish the queue and stop.
        drop(to_write);
        let mut outcome = rendered;
        for w in written {
            if outcome.is_ok() {
                outcome = deliver(w);
            }
        }
        outcome
    });
    outcome.map(|()| reports)
}

/// Tells the job's progress that a device took `frame`.
fn started(job: &RenderJob, frame: i64) {
    if let Some(p) = &job.progress {
        p.0.frame_started(frame);
    }
}

/// Tells the job's progress that `frame` is rendered.
fn finished(job: &RenderJob, frame: i64) {
    if let Some(p) = &job.progress {
        p.0.frame_finished(frame);
    }
}

/// Tells the job's progress that `frame` is left alone.
fn skipped(job: &RenderJob, frame: i64) {
    if let Some(p) = &job.progress {
        p.0.frame_skipped(frame);
    }
}

/// Builds and renders one evaluated frame; its progressive passes, if it has any, go to
/// `devices`. A failing device is an [`Error::Render`]; anything else (the hierarchy) is another
/// error.
fn render_scene(
    scene: &Scene,
    meshes: &accel::MeshBuildCache,
    devices: &[&dyn Backend],
    options: &RenderOptions,
    job: &RenderJob,
) -> Result<Frame, Error> {
    let build_start = Instant::now();
    let prepared = prepare_for(scene, meshes, devices)?;
    let build_seconds = build_start.elapsed().as_secs_f64();
    let progression = render::progressive::Progression::of(scene, job.time_limit);
    // With one device its failure is the caller's to report; with several, a failing one
    // leaves and is reported here.
    let on_failure = |failure: &render::schedule::DeviceFailure| {
        if devices.len() > 1 {
            report_failure(
                failure,
                &format!("frame {} (pass {})", scene.frame, failure.item + 1),
            )
        }
    };
    // Several devices share a frame only through its progressive passes
    // (`render_claimed`).
    let mut frame: Frame = match devices {
        [device] if progression.passes == 1 => device.render_frame(scene, &prepared, options)?,
        _ => render::progressive::render_progressive(
            devices,
            scene,
            &prepared,
            options,
            progression,
            |pass, seconds| log::info!("frame {}: pass {pass} done at {seconds:.1} s", scene.frame),
            on_failure,
        )?,
    };
    frame.metadata.build_seconds = build_seconds;
    frame.metadata.stats.bvh = Some(prepared.stats());
    Ok(frame)
}

/// Writes a rendered frame's EXR (or, for an output path ending in `.png`, a tone-mapped PNG
/// of the colour) and its preview, and reports it.
fn write_outputs(scene: &Scene, frame: Frame, job: &RenderJob) -> Result<FrameReport, Error> {
    let stats = frame.metadata.stats.clone();
    let exr = scene.output.path_for_frame(scene.frame);
    let png = exr
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("png"));
    if png {
        io::write_preview_png(&exr, &frame, job.exposure)?;
    } else {
        io::write_frame(&exr, &frame)?;
    }
    let preview = match &job.preview {
        Some(pattern) => {
            let path = scene::expand_frame_pattern(pattern, scene.frame);
            io::write_preview_png(&path, &frame, job.exposure)?;
            Some(path)
        }
        None => None,
    };
    Ok(FrameReport {
        frame: scene.frame,
        device: frame.metadata.device.clone(),
        exr,
        preview,
        build_seconds: frame.metadata.build_seconds,
        render_seconds: frame.metadata.render_seconds,
        stats,
        skipped: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_shards_render_every_frame_of_the_range_exactly_once() {
        let shards: Vec<Vec<i64>> = (0..3)
            .map(|i| Shard { index: i, count: 3 }.of(1..=10).collect())
            .collect();
        assert_eq!(shards[0], [1, 4, 7, 10]);
        assert_eq!(shards[1], [2, 5, 8]);
        assert_eq!(shards[2], [3, 6, 9]);
        let mut union: Vec<i64> = shards.concat();
        union.sort();
        assert_eq!(union, (1..=10).collect::<Vec<_>>());
        assert_eq!(Shard { index: 4, count: 5 }.of(1..=3).count(), 0);
    }

    #[test]
    fn a_pattern_without_hashes_gets_the_frame_number_before_its_extension() {
        assert_eq!(with_frame_number("out/shot.exr"), "out/shot_####.exr");
        assert_eq!(with_frame_number("out/shot_##.exr"), "out/shot_##.exr");
        assert_eq!(with_frame_number("shot"), "shot_####");
    }

    #[test]
    fn shards_are_parsed_as_index_over_count_from_zero() {
        assert_eq!(Shard::parse("0/4").unwrap(), Shard { index: 0, count: 4 });
        assert_eq!(
            Shard::parse(" 3 / 4 ").unwrap(),
            Shard { index: 3, count: 4 }
        );
        for bad in ["4/4", "1/0", "-1/4", "1", "a/b", "1/2/3"] {
            assert!(
                Shard::parse(bad).unwrap_err().contains("0 <= I < N"),
                "{bad}"
            );
        }
    }
}
