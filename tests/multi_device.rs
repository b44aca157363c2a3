//! Several devices in one render (`render::schedule`), on two logical devices of one adapter
//! (lavapipe in CI): the frames of an animation and the passes of a progressive still are
//! handed out to whichever device is free, a device that fails leaves and its work goes to the
//! other, and the output is the one a single device writes, bit for bit.

mod support;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};

use caustica::render::{Backend, Frame};
use caustica::scene::DeviceList;
use caustica::{Device, Overrides, RenderJob};
use support::Watched;

/// A small photon-mapped scene whose glass ball moves from frame to frame (frames 1..4).
const SCENE: &str = r#"
let t = time
camera { position 0 1.6 4  look_at 0 0.4 0  fov 40 }
film   { resolution 24 18 spp 1 max_depth 4 integrator photon_map }
material floor { diffuse 0.7 0.7 0.7 }
material glass { dielectric ior 1.5 }
mesh ground { quad size 10 10 }
mesh ball   { sphere radius 0.45 segments 16 }
instance { mesh ground material floor }
instance { mesh ball material glass translate (2 * t) 0.45 0 }
light point { position 0 2.5 1 power 120 110 100 }
photons { global 3000 caustic 3000 max_bounces 4 knn 16 }
gather  { seeds 32 rays 16 quadtree_levels 4 }
frames 1..4 fps 24
output { path "unused_####.exr" layers albedo depth }
"#;

type Devices = Box<dyn Backend>;

/// Two logical devices on the first adapter, opened once for the whole file (each compiles
/// the kernels, which takes lavapipe a while), with a guard that keeps the tests from sharing
/// them at once; or `None` (after saying why) on a machine without an adapter. Under
/// `CAUSTICA_REQUIRE_GPU=1` a missing adapter fails the test.
fn two_devices() -> Option<(MutexGuard<'static, ()>, &'static [Devices])> {
    static DEVICES: OnceLock<Option<Vec<Box<dyn Backend>>>> = OnceLock::new();
    static TURN: Mutex<()> = Mutex::new(());
    let devices = DEVICES.get_or_init(|| {
        match caustica::select_backends(Device::Gpu, &DeviceList::parse("0,0").unwrap()) {
            Ok(devices) => Some(devices),
            Err(e) if caustica::gpu_required() => {
                panic!("CAUSTICA_REQUIRE_GPU is set but two devices could not be opened: {e}")
            }
            Err(e) => {
                eprintln!("skipping multi-device test: {e} (set CAUSTICA_REQUIRE_GPU=1 to make this a failure)");
                None
            }
        }
    });
    let devices = devices.as_deref()?;
    // A test that failed while holding the turn leaves the devices usable.
    let turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    Some((turn, devices))
}

/// The two devices, counted.
fn watched(devices: &[Devices]) -> (Watched<'_>, Watched<'_>) {
    (
        Watched::new(devices[0].as_ref()),
        Watched::new(devices[1].as_ref()),
    )
}

fn job(dir: &Path, frames: (i64, i64), passes: Option<u32>) -> RenderJob {
    std::fs::create_dir_all(dir).unwrap();
    let scene_path = dir.join("moving_ball.csc");
    std::fs::write(&scene_path, SCENE).unwrap();
    RenderJob {
        frames: Some((frames.0..=frames.1).collect()),
        overrides: Overrides {
            output: Some(dir.join("out_####.exr").to_str().unwrap().to_string()),
            passes,
            ..Default::default()
        },
        ..RenderJob::new(scene_path, Device::Gpu)
    }
}

/// Renders `job` on `devices`, returning the frame numbers in the order `on_frame` heard them
/// and the frames read back from the files.
fn render(job: &RenderJob, devices: &[&dyn Backend]) -> (Vec<i64>, Vec<Frame>) {
    let mut heard = Vec::new();
    let reports = caustica::render_animation_on(job, devices, |r| heard.push(r.frame)).unwrap();
    let frames = reports
        .iter()
        .map(|r| caustica::io::read_frame(&r.exr).unwrap())
        .collect();
    (heard, frames)
}

/// The pixels of every layer, bit for bit.
fn assert_same_pixels(a: &[Frame], b: &[Frame]) {
    assert_eq!(a.len(), b.len());
    for (fa, fb) in a.iter().zip(b) {
        let frame = fa.metadata.frame;
        let bits = |f: &Frame| -> Vec<u32> {
            f.color
                .iter()
                .flat_map(|c| c.to_array())
                .map(f32::to_bits)
                .collect()
        };
        assert!(bits(fa) == bits(fb), "frame {frame}: the colour differs");
        assert_eq!(fa.aovs.len(), fb.aovs.len());
        for (la, lb) in fa.aovs.iter().zip(&fb.aovs) {
            let bits = |l: &caustica::render::Layer| -> Vec<u32> {
                l.pixels.iter().map(|v| v.to_bits()).collect()
            };
            assert!(
                bits(la) == bits(lb),
                "frame {frame}: layer {} differs",
                la.name
            );
        }
    }
}

fn temp_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    (dir, path)
}

#[test]
fn multi_device_animation_gives_each_frame_to_one_device_and_matches_a_single_device() {
    let Some((_turn, devices)) = two_devices() else {
        return;
    };
    let (a, b) = watched(devices);
    let (_keep, dir) = temp_dir();
    let (heard, frames) = render(&job(&dir.join("two"), (1, 4), None), &[&a, &b]);
    assert_eq!(
        heard,
        [1, 2, 3, 4],
        "on_frame hears every frame once, in order"
    );
    assert_eq!(a.calls() + b.calls(), 4, "each frame rendered exactly once");
    assert!(
        a.calls() >= 1 && b.calls() >= 1,
        "both devices took frames: {} and {}",
        a.calls(),
        b.calls()
    );
    let (_, single) = render(&job(&dir.join("one"), (1, 4), None), &[devices[1].as_ref()]);
    assert_same_pixels(&frames, &single);
}

#[test]
fn multi_device_progressive_passes_are_summed_in_order_into_the_single_device_still() {
    let Some((_turn, devices)) = two_devices() else {
        return;
    };
    let (a, b) = watched(devices);
    let (_keep, dir) = temp_dir();
    let (heard, still) = render(&job(&dir.join("two"), (2, 2), Some(5)), &[&a, &b]);
    assert_eq!(heard, [2]);
    assert_eq!(a.calls() + b.calls(), 5, "each pass rendered exactly once");
    assert!(a.calls() >= 1 && b.calls() >= 1, "both devices took passes");
    assert_eq!(still[0].metadata.spp, 5, "5 passes of 1 spp");
    let (_, single) = render(
        &job(&dir.join("one"), (2, 2), Some(5)),
        &[devices[0].as_ref()],
    );
    assert_same_pixels(&still, &single);
}

#[test]
fn multi_device_render_goes_on_when_a_device_fails_and_its_frame_goes_to_the_other() {
    let Some((_turn, devices)) = two_devices() else {
        return;
    };
    let good = Watched::new(devices[0].as_ref());
    // The second device fails on the first frame it takes.
    let failing = Watched::failing_from(devices[1].as_ref(), 0);
    let (_keep, dir) = temp_dir();
    let (heard, frames) = render(&job(&dir.join("two"), (1, 4), None), &[&failing, &good]);
    assert_eq!(
        heard,
        [1, 2, 3, 4],
        "every frame was written despite the failure"
    );
    assert_eq!(
        failing.calls(),
        1,
        "the failed device took no frame after failing"
    );
    assert_eq!(
        good.calls(),
        4,
        "the good device rendered the failed frame too"
    );
    let (_, single) = render(&job(&dir.join("one"), (1, 4), None), &[devices[0].as_ref()]);
    assert_same_pixels(&frames, &single);
}

#[test]
fn multi_device_render_fails_with_the_device_error_when_every_device_fails() {
    let Some((_turn, devices)) = two_devices() else {
        return;
    };
    let a = Watched::failing_from(devices[0].as_ref(), 0);
    let b = Watched::failing_from(devices[1].as_ref(), 0);
    let (_keep, dir) = temp_dir();
    let job = job(&dir.join("two"), (1, 4), None);
    let e = caustica::render_animation_on(&job, &[&a, &b], |_| {}).unwrap_err();
    assert!(e.to_string().contains("injected failure"), "{e}");
    assert_eq!((a.calls(), b.calls()), (1, 1));
    assert!(
        std::fs::read_dir(dir.join("two")).unwrap().all(|e| {
            let name = e.unwrap().file_name();
            !name.to_string_lossy().ends_with(".exr")
        }),
        "nothing was written"
    );
}
