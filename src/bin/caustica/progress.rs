//! Progress on standard error: on a terminal, an indicatif bar per frame in flight (with its
//! phase) under a bar for the sequence (with an ETA); otherwise plain lines, one when a frame
//! enters a phase and one when it is done. Lines for standard output go through
//! [`Bars::println`] so that they do not tear the bars.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use caustica::render::progress::{Progress, Step};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A frame bar's length: per mille of the frame.
const FRAME_UNITS: u64 = 1000;

pub struct Bars {
    /// `None` when standard error is not a terminal: plain lines instead.
    multi: Option<MultiProgress>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    sequence: Option<ProgressBar>,
    frames: HashMap<i64, ProgressBar>,
    /// The last phase and pass each frame in flight reported (plain lines only on a change).
    phases: HashMap<i64, (&'static str, u32)>,
    total: usize,
    done: usize,
    start: Option<Instant>,
}

impl Bars {
    pub fn new() -> Bars {
        let multi = std::io::stderr()
            .is_terminal()
            .then(|| MultiProgress::with_draw_target(ProgressDrawTarget::stderr_with_hz(10)));
        Bars {
            multi,
            state: Mutex::new(State::default()),
        }
    }

    /// Prints a line on standard output without tearing the bars.
    pub fn println(&self, line: &str) {
        match &self.multi {
            Some(multi) => multi.suspend(|| println!("{line}")),
            None => println!("{line}"),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // Only poisoned if a thread panicked while drawing; the counts are still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// `1:02:03` or `2:03`.
fn clock(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    } else {
        format!("{}:{:02}", s / 60, s % 60)
    }
}

fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ")
}

impl Progress for Bars {
    fn sequence(&self, frames: usize) {
        let mut state = self.state();
        state.total = frames;
        state.start = Some(Instant::now());
        if let (Some(multi), true) = (&self.multi, frames > 1) {
            let bar = multi.add(ProgressBar::new(frames as u64));
            bar.set_style(style(
                "{pos}/{len} frames [{bar:30}] {elapsed_precise} elapsed, ETA {eta_precise}",
            ));
            state.sequence = Some(bar);
        }
    }

    fn frame_started(&self, frame: i64) {
        let mut state = self.state();
        if let Some(multi) = &self.multi {
            let bar = multi.add(ProgressBar::new(FRAME_UNITS));
            bar.set_style(style(
                "frame {prefix:>5} {msg:<16} [{bar:30}] {percent:>3}%",
            ));
            bar.set_prefix(frame.to_string());
            bar.set_message("starting");
            // A frame another device gave up is started again: its old bar goes.
            if let Some(old) = state.frames.insert(frame, bar) {
                old.finish_and_clear();
            }
        }
    }

    fn step(&self, frame: i64, step: Step) {
        let phase = step.phase.name();
        // A progressive still under a time limit alone does not know its passes.
        let unbounded = step.passes == u32::MAX;
        let message = if unbounded {
            format!("{phase} {}", step.pass + 1)
        } else if step.passes > 1 {
            format!("{phase} {}/{}", step.pass + 1, step.passes)
        } else {
            phase.to_string()
        };
        let mut state = self.state();
        if self.multi.is_some() {
            if let Some(bar) = state.frames.get(&frame) {
                bar.set_message(message);
                if !unbounded {
                    bar.set_position((step.fraction() * FRAME_UNITS as f32) as u64);
                }
            }
        } else if state.phases.get(&frame) != Some(&(phase, step.pass)) {
            state.phases.insert(frame, (phase, step.pass));
            eprintln!("frame {frame}: {message}");
        }
    }

    fn frame_finished(&self, frame: i64) {
        let mut state = self.state();
        state.done += 1;
        state.phases.remove(&frame);
        if let Some(bar) = state.frames.remove(&frame) {
            bar.finish_and_clear();
        }
        if let Some(bar) = &state.sequence {
            bar.inc(1);
        } else if self.multi.is_none() && state.total > 1 {
            let elapsed = state.start.map_or(Duration::ZERO, |s| s.elapsed());
            let left = elapsed.mul_f64((state.total - state.done) as f64 / state.done as f64);
            eprintln!(
                "{}/{} frames, {} elapsed, ETA {}",
                state.done,
                state.total,
                clock(elapsed),
                clock(left)
            );
        }
    }

    fn frame_skipped(&self, _frame: i64) {
        let mut state = self.state();
        state.total = state.total.saturating_sub(1);
        if let Some(bar) = &state.sequence {
            bar.set_length(state.total as u64);
        }
    }
}

impl Drop for Bars {
    /// Clears every bar, those of frames an error stopped included.
    fn drop(&mut self) {
        let mut state = self.state();
        for (_, bar) in state.frames.drain() {
            bar.finish_and_clear();
        }
        if let Some(bar) = &state.sequence {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_writes_minutes_and_seconds_and_hours_past_one() {
        assert_eq!(clock(Duration::from_secs(0)), "0:00");
        assert_eq!(clock(Duration::from_secs(125)), "2:05");
        assert_eq!(clock(Duration::from_secs(3723)), "1:02:03");
    }
}
