//! Work handed out to several devices: the frames of an animation, or the passes of a
//! progressive still. Each device has a thread of its own and takes the next item when it
//! finishes one, so that uneven items and uneven devices still balance.
//!
//! A device whose work fails (an error, or a panic inside the backend) leaves the render: its
//! item goes back to the queue, to the next device that is free, and the failure is reported
//! once. The render fails only when every device has failed with items left. Results reach
//! the caller's thread one at a time, in the order they finish; which device made an item
//! never changes what it is, because an item's seeds follow from its index alone.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{mpsc, Condvar, Mutex};

use super::{Backend, RenderError};

/// Why an item's work stopped.
#[derive(Debug)]
pub enum WorkError<E> {
    /// The device failed: it leaves the render, and the item goes back to the queue.
    Device(RenderError),
    /// Something no other device would do better (an output that cannot be written): the
    /// render stops, after the items in flight.
    Fatal(E),
}

/// The work of one item on one device.
pub type Work<'a, R, E> = dyn Fn(&dyn Backend, usize) -> Result<R, WorkError<E>> + Sync + 'a;

/// A device that failed and left the render.
#[derive(Debug)]
pub struct DeviceFailure {
    /// The backend's name.
    pub device: String,
    /// The item it was working on, now back in the queue.
    pub item: usize,
    pub error: String,
}

/// What the devices share: the next item never handed out, the items handed back by devices
/// that failed, and how many are being worked on.
struct Queue {
    next: usize,
    returned: Vec<usize>,
    in_flight: usize,
    stop: bool,
}

/// The scheduler's view of one finished piece of work.
enum Message<R, E> {
    Done(usize, R),
    Failed(DeviceFailure, RenderError),
    Fatal(E),
}

/// Hands items `0..items` to `devices` one at a time and gives each result to `done`, on the
/// caller's thread, in the order they finish. `may_start(i)` is asked before item `i` is first
/// handed out (a time limit says no, and no later item starts then); an item handed back by a
/// failed device is always taken again, so the items that finish are every item below the first
/// one refused. `on_failure` hears of each device that fails. An error from `done` stops the
/// render like a fatal one.
pub fn hand_out<R, E>(
    devices: &[&dyn Backend],
    items: usize,
    may_start: &(dyn Fn(usize) -> bool + Sync),
    work: &Work<'_, R, E>,
    on_failure: &mut dyn FnMut(&DeviceFailure),
    done: &mut dyn FnMut(usize, R) -> Result<(), E>,
) -> Result<(), E>
where
    R: Send,
    E: Send + From<RenderError>,
{
    if devices.is_empty() {
        return Err(RenderError::DeviceUnavailable("no device to render on".into()).into());
    }
    let queue = Mutex::new(Queue {
        next: 0,
        returned: Vec::new(),
        in_flight: 0,
        stop: false,
    });
    let changed = Condvar::new();
    // Only poisoned if a thread panicked while holding it, which nothing here does.
    let lock = || queue.lock().unwrap_or_else(|e| e.into_inner());
    let take = || -> Option<usize> {
        let mut q = lock();
        loop {
            if q.stop {
                return None;
            }
            if let Some(item) = q.returned.pop() {
                q.in_flight += 1;
                return Some(item);
            }
            if q.next < items && may_start(q.next) {
                q.next += 1;
                q.in_flight += 1;
                return Some(q.next - 1);
            }
            if q.in_flight == 0 {
                return None;
            }
            // An item in flight may still come back from a failing device.
            q = changed.wait(q).unwrap_or_else(|e| e.into_inner());
        }
    };
    let finish = |returned: Option<usize>| {
        let mut q = lock();
        q.in_flight -= 1;
        q.returned.extend(returned);
        changed.notify_all();
    };
    let stop = || {
        lock().stop = true;
        changed.notify_all();
    };
    let mut first_error: Option<E> = None;
    let mut last_device_error: Option<RenderError> = None;
    std::thread::scope(|s| {
        let (sender, receiver) = mpsc::channel::<Message<R, E>>();
        for &device in devices {
            let sender = sender.clone();
            let (take, finish) = (&take, &finish);
            s.spawn(move || {
                while let Some(item) = take() {
                    let outcome = catch_unwind(AssertUnwindSafe(|| work(device, item)))
                        .unwrap_or_else(|panic| {
                            let what = panic
                                .downcast_ref::<String>()
                                .cloned()
                                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                                .unwrap_or_else(|| "a panic".to_string());
                            Err(WorkError::Device(RenderError::DeviceUnavailable(format!(
                                "the backend panicked: {what}"
                            ))))
                        });
                    let message = match outcome {
                        Ok(result) => {
                            finish(None);
                            Message::Done(item, result)
                        }
                        Err(WorkError::Device(error)) => {
                            finish(Some(item));
                            let failure = DeviceFailure {
                                device: device.name(),
                                item,
                                error: error.to_string(),
                            };
                            // A receiver gone means the caller stopped: nothing to tell.
                            let _ = sender.send(Message::Failed(failure, error));
                            return;
                        }
                        Err(WorkError::Fatal(error)) => {
                            finish(None);
                            Message::Fatal(error)
                        }
                    };
                    let fatal = matches!(message, Message::Fatal(_));
                    if sender.send(message).is_err() || fatal {
                        return;
                    }
                }
            });
        }
        drop(sender);
        for message in receiver {
            match message {
                Message::Done(item, result) => {
                    if first_error.is_none() {
                        if let Err(e) = done(item, result) {
                            first_error = Some(e);
                            stop();
                        }
                    }
                }
                Message::Failed(failure, error) => {
                    on_failure(&failure);
                    last_device_error = Some(error);
                }
                Message::Fatal(e) => {
                    if first_error.is_none() {
                        first_error = Some(e);
                    }
                    stop();
                }
            }
        }
    });
    if let Some(e) = first_error {
        return Err(e);
    }
    let q = lock();
    let unfinished = !q.returned.is_empty() || (q.next < items && may_start(q.next));
    match (unfinished, last_device_error) {
        (true, Some(error)) => Err(error.into()),
        (true, None) => Err(RenderError::Cancelled.into()),
        (false, _) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;
    use crate::accel::Prepared;
    use crate::render::{Frame, RenderOptions};
    use crate::scene::Scene;

    /// A device that renders nothing: the tests' work functions only need its name.
    struct Named(&'static str);

    impl Backend for Named {
        fn name(&self) -> String {
            self.0.to_string()
        }
        fn render_frame(
            &self,
            _: &Scene,
            _: &Prepared,
            _: &RenderOptions,
        ) -> Result<Frame, RenderError> {
            Err(RenderError::Cancelled)
        }
    }

    type Run = Result<Vec<(usize, String)>, RenderError>;

    /// Hands out `items` with `work`, returning (item, device) in the order they finished.
    fn run(
        devices: &[&dyn Backend],
        items: usize,
        may_start: &(dyn Fn(usize) -> bool + Sync),
        work: &Work<'_, String, RenderError>,
        failures: &mut Vec<String>,
    ) -> Run {
        let mut finished = Vec::new();
        hand_out(
            devices,
            items,
            may_start,
            work,
            &mut |f| failures.push(format!("{} on {}", f.device, f.item)),
            &mut |item, device| {
                finished.push((item, device));
                Ok(())
            },
        )?;
        Ok(finished)
    }

    #[test]
    fn multi_device_items_go_to_whichever_device_is_free_so_a_slow_device_takes_fewer() {
        let (fast, slow) = (Named("fast"), Named("slow"));
        let devices: [&dyn Backend; 2] = [&fast, &slow];
        let work = |d: &dyn Backend, _item: usize| {
            let ms = if d.name() == "slow" { 100 } else { 1 };
            std::thread::sleep(Duration::from_millis(ms));
            Ok(d.name())
        };
        let mut failures = Vec::new();
        let finished = run(&devices, 24, &|_| true, &work, &mut failures).unwrap();
        let mut items: Vec<usize> = finished.iter().map(|(i, _)| *i).collect();
        items.sort();
        assert_eq!(
            items,
            (0..24).collect::<Vec<_>>(),
            "every item exactly once"
        );
        let by_slow = finished.iter().filter(|(_, d)| d == "slow").count();
        assert!(
            by_slow <= 4,
            "the slow device (100x slower) took {by_slow} of 24 items"
        );
        assert!(failures.is_empty());
    }

    #[test]
    fn multi_device_failure_puts_the_item_back_and_the_render_goes_on_without_the_device() {
        let (good, bad) = (Named("good"), Named("bad"));
        let devices: [&dyn Backend; 2] = [&bad, &good];
        let calls = AtomicUsize::new(0);
        let work = |d: &dyn Backend, _item: usize| {
            calls.fetch_add(1, Ordering::Relaxed);
            if d.name() == "bad" {
                // Let the good device finish a few items first, then fail.
                std::thread::sleep(Duration::from_millis(20));
                return Err(WorkError::Device(RenderError::DeviceUnavailable(
                    "device lost".into(),
                )));
            }
            std::thread::sleep(Duration::from_millis(2));
            Ok(d.name())
        };
        let mut failures = Vec::new();
        let finished = run(&devices, 10, &|_| true, &work, &mut failures).unwrap();
        let mut items: Vec<usize> = finished.iter().map(|(i, _)| *i).collect();
        items.sort();
        assert_eq!(items, (0..10).collect::<Vec<_>>());
        assert!(finished.iter().all(|(_, d)| d == "good"));
        assert_eq!(
            failures.len(),
            1,
            "the failure is reported once: {failures:?}"
        );
        assert!(failures[0].starts_with("bad on "));
        assert_eq!(
            calls.load(Ordering::Relaxed),
            11,
            "the failed item was rendered again, once"
        );
    }

    #[test]
    fn multi_device_panic_in_a_backend_counts_as_a_device_failure() {
        let (good, bad) = (Named("good"), Named("bad"));
        let devices: [&dyn Backend; 2] = [&bad, &good];
        let bad_started = std::sync::atomic::AtomicBool::new(false);
        let work = |d: &dyn Backend, _item: usize| {
            if d.name() == "bad" {
                bad_started.store(true, Ordering::SeqCst);
                panic!("driver exploded");
            }
            // The good device waits (5 s at most) for the bad one to take an item, so that it
            // cannot finish them all first.
            for _ in 0..5000 {
                if bad_started.load(Ordering::SeqCst) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            Ok(d.name())
        };
        let mut failures = Vec::new();
        let finished = run(&devices, 5, &|_| true, &work, &mut failures).unwrap();
        assert_eq!(finished.len(), 5);
        assert_eq!(failures.len(), 1);
    }

    #[test]
    fn multi_device_render_fails_with_the_error_when_every_device_failed() {
        let (a, b) = (Named("a"), Named("b"));
        let devices: [&dyn Backend; 2] = [&a, &b];
        let work = |d: &dyn Backend, _item: usize| -> Result<String, WorkError<RenderError>> {
            Err(WorkError::Device(RenderError::DeviceUnavailable(format!(
                "{} is gone",
                d.name()
            ))))
        };
        let mut failures = Vec::new();
        let e = run(&devices, 3, &|_| true, &work, &mut failures).unwrap_err();
        assert!(e.to_string().ends_with("is gone"), "{e}");
        assert_eq!(failures.len(), 2, "each device reported once: {failures:?}");
    }

    #[test]
    fn multi_device_fatal_error_stops_handing_out_items() {
        let (a, b) = (Named("a"), Named("b"));
        let devices: [&dyn Backend; 2] = [&a, &b];
        let started = AtomicUsize::new(0);
        let work = |_: &dyn Backend, item: usize| {
            started.fetch_add(1, Ordering::Relaxed);
            if item == 3 {
                return Err(WorkError::Fatal(RenderError::Cancelled));
            }
            std::thread::sleep(Duration::from_millis(2));
            Ok(String::new())
        };
        let mut failures = Vec::new();
        let e = run(&devices, 1000, &|_| true, &work, &mut failures).unwrap_err();
        assert!(matches!(e, RenderError::Cancelled));
        assert!(started.load(Ordering::Relaxed) < 10);
    }

    #[test]
    fn multi_device_refused_start_ends_the_items_but_returned_ones_still_run() {
        let (a, b) = (Named("a"), Named("b"));
        let devices: [&dyn Backend; 2] = [&a, &b];
        // Device b fails on its item after the others were handed out and item 4 was refused;
        // its item must still be rendered, by a.
        let work = |d: &dyn Backend, _item: usize| {
            if d.name() == "b" {
                std::thread::sleep(Duration::from_millis(30));
                return Err(WorkError::Device(RenderError::DeviceUnavailable(
                    "lost".into(),
                )));
            }
            std::thread::sleep(Duration::from_millis(5));
            Ok(d.name())
        };
        let mut failures = Vec::new();
        let finished = run(&devices, 100, &|i| i < 4, &work, &mut failures).unwrap();
        let mut items: Vec<usize> = finished.iter().map(|(i, _)| *i).collect();
        items.sort();
        assert_eq!(items, [0, 1, 2, 3]);
    }
}
