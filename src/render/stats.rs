//! Named statistics counters (`"rays/primary"`, `"bvh/nodes"`, ...), thread-safe.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// A set of named counters that worker threads add to.
#[derive(Debug, Default)]
pub struct Stats {
    counters: Mutex<BTreeMap<&'static str, f64>>,
}

impl Stats {
    pub fn add(&self, name: &'static str, value: f64) {
        // The lock is only poisoned if another thread panicked while holding it, which the
        // two-line critical section below cannot do.
        let mut map = self.counters.lock().unwrap();
        *map.entry(name).or_insert(0.0) += value;
    }

    pub fn set(&self, name: &'static str, value: f64) {
        self.counters.lock().unwrap().insert(name, value);
    }

    /// The counters as (name, value) pairs sorted by name.
    pub fn to_vec(&self) -> Vec<(String, f64)> {
        self.counters
            .lock()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect()
    }
}

/// A lock-free counter for hot loops; fold it into [`Stats`] when done.
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
