//! What a render reports while it runs, so that a front end can show one bar per frame across
//! all its phases and one bar for the sequence. The library draws nothing: it calls a
//! [`Progress`] that the caller hands in (`caustica` draws indicatif bars, or plain lines when
//! standard error is not a terminal).

use std::fmt;
use std::sync::Arc;

/// The phases of a frame's pass, in the order a pass goes through them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Photon tracing into the global and caustic maps, and their kd-trees.
    Photons,
    /// Camera rays, shadow rays and specular paths (the Whitted shade trees).
    Shading,
    /// Irradiance seeding, final gather and interpolation (photon mapping only).
    Gather,
    /// The extra layers (albedo, normal, depth, photon views) and the film's accumulation.
    Layers,
}

impl Phase {
    /// Every phase, in order.
    pub const ALL: [Phase; 4] = [Phase::Photons, Phase::Shading, Phase::Gather, Phase::Layers];

    /// The word a progress bar shows.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Photons => "photons",
            Phase::Shading => "shading",
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
}
