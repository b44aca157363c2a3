//! What a render reports while it runs, so that a front end can show one bar per frame across
//! all its phases and one bar for the sequence. The library draws nothing: it calls a
//! [`Progress`] that the caller hands in (`caustica` draws indicatif bars, or plain lines when
//! standard error is not a terminal).

use std::fmt;
use std::sync::Arc;

/// The phases of a frame's pass, in the order a pass goes through them. A backend reports
/// those it can tell apart: the GPU traces the photon maps and builds their trees while the
/// shade trees wait, so without VD patches its `photons` phase holds the kd-trees too.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Photon tracing into the global and caustic maps.
    Photons,
    /// The photon maps' kd-trees.
    KdTrees,
    /// Camera rays, shadow rays and specular paths (the Whitted shade trees).
    Shading,
    /// Adaptive seeding of irradiance samples (photon mapping only).
    Seeding,
    /// The final gather at the seeds, caustics and interpolation (photon mapping only).
    Gather,
    /// The extra layers (albedo, normal, depth, photon views) and the film's accumulation.
    Layers,
}

impl Phase {
    /// Every phase, in order.
    pub const ALL: [Phase; 6] = [
        Phase::Photons,
        Phase::KdTrees,
        Phase::Shading,
        Phase::Seeding,
        Phase::Gather,
        Phase::Layers,
    ];

    /// The word a progress bar shows.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Photons => "photons",
            Phase::KdTrees => "kd-trees",
            Phase::Shading => "shading",
            Phase::Seeding => "seeding",
            Phase::Gather => "gather",
            Phase::Layers => "layers",
        }
    }

    fn index(self) -> u32 {
        self as u32
    }
}

/// Where a frame stands: `phase` of pass `pass` (counted from 0) of `passes`, with `done` of
/// the phase's work done (0 to 1; backends that cannot count it report 0 at the phase's
/// start).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Step {
    pub phase: Phase,
    pub pass: u32,
    pub passes: u32,
    pub done: f32,
}

impl Step {
    /// The share of the frame this step has reached, counting each phase of each pass as an
    /// equal part: it only grows as a frame goes through its passes in order.
    pub fn fraction(&self) -> f32 {
        let parts = (self.passes.max(1) * Phase::ALL.len() as u32) as f32;
        let reached = (self.pass.min(self.passes.max(1) - 1) * Phase::ALL.len() as u32
            + self.phase.index()) as f32
            + self.done.clamp(0.0, 1.0);
        (reached / parts).clamp(0.0, 1.0)
    }
}

/// Receives a render's progress; every method has an empty default. Called from the threads
/// that render (one per device), so implementations synchronise themselves.
pub trait Progress: Send + Sync {
    /// The job will render `frames` frames.
    fn sequence(&self, _frames: usize) {}
    /// A device started rendering `frame`.
    fn frame_started(&self, _frame: i64) {}
    /// `frame` reached `step`.
    fn step(&self, _frame: i64, _step: Step) {}
    /// `frame` is rendered (its file is written on).
    fn frame_finished(&self, _frame: i64) {}
    /// `frame` is left alone (its file exists, or another job claimed it): one frame fewer.
    fn frame_skipped(&self, _frame: i64) {}
}

/// A shared [`Progress`] in [`super::RenderOptions`]: cloned with the options, printed as a
/// name only.
#[derive(Clone)]
pub struct ProgressSink(pub Arc<dyn Progress>);

impl ProgressSink {
    /// Reports `step` of `frame`.
    pub fn step(&self, frame: i64, phase: Phase, pass: u32, passes: u32, done: f32) {
        self.0.step(
            frame,
            Step {
                phase,
                pass,
                passes,
                done,
            },
        );
    }
}

impl ProgressSink {
    /// This sink for the frame of pass `pass` of `passes` of a progressive still (each pass a
    /// frame of its own): its steps are reported as the still's, pass by pass. `passes` is
    /// `u32::MAX` under a time limit alone (the total is not known).
    pub fn for_pass(&self, pass: u32, passes: u32) -> ProgressSink {
        ProgressSink(Arc::new(PassProgress {
            still: self.0.clone(),
            pass,
            passes,
        }))
    }
}

/// A progressive pass's progress, forwarded as the still's ([`ProgressSink::for_pass`]).
struct PassProgress {
    still: Arc<dyn Progress>,
    pass: u32,
    passes: u32,
}

impl Progress for PassProgress {
    fn step(&self, frame: i64, step: Step) {
        // A pass's own frame may be cut into passes too.
        let inner = step.passes.max(1);
        self.still.step(
            frame,
            Step {
                pass: self.pass.saturating_mul(inner).saturating_add(step.pass),
                passes: self.passes.saturating_mul(inner),
                ..step
            },
        );
    }
}

impl fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProgressSink")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frames_fraction_grows_through_its_phases_and_passes_and_ends_at_one() {
        let mut last = -1.0;
        for pass in 0..3 {
            for phase in Phase::ALL {
                for done in [0.0, 0.5, 1.0] {
                    let f = Step {
                        phase,
                        pass,
                        passes: 3,
                        done,
                    }
                    .fraction();
                    assert!(
                        f >= last,
                        "{phase:?} of pass {pass} at {done}: {f} < {last}"
                    );
                    last = f;
                }
            }
        }
        assert_eq!(last, 1.0);
        let first = Step {
            phase: Phase::Photons,
            pass: 0,
            passes: 1,
            done: 0.0,
        };
        assert_eq!(first.fraction(), 0.0);
    }

    /// Records every step it is told.
    #[derive(Default)]
    struct Recorder(std::sync::Mutex<Vec<Step>>);

    impl Progress for Recorder {
        fn step(&self, _frame: i64, step: Step) {
            self.0.lock().unwrap().push(step);
        }
    }

    #[test]
    fn a_progressive_pass_reports_its_steps_as_the_stills_pass_of_all() {
        let recorder = Arc::new(Recorder::default());
        let still = ProgressSink(recorder.clone());
        // Pass 2 of 4, itself cut into 2 plan passes: its second is the still's 6th of 8.
        still.for_pass(2, 4).step(1, Phase::Gather, 1, 2, 0.5);
        let got = recorder.0.lock().unwrap()[0];
        assert_eq!((got.phase, got.pass, got.passes), (Phase::Gather, 5, 8));
    }
}
