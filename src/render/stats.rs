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

/// Joins the counters that several passes of a frame report under one name: counts and times
/// add up, rates (`…_per_s`) and means (`…mean…`) are averaged. The order of first appearance
/// is kept.
pub fn merge_counters(counters: Vec<(String, f64)>) -> Vec<(String, f64)> {
    let mut out: Vec<(String, f64, u32)> = Vec::new();
    for (name, value) in counters {
        match out.iter_mut().find(|(n, _, _)| *n == name) {
            Some((_, v, k)) => {
                *v += value;
                *k += 1;
            }
            None => out.push((name, value, 1)),
        }
    }
    out.into_iter()
        .map(|(name, v, k)| {
            let averaged = name.ends_with("_per_s") || name.contains("mean");
            let value = if averaged { v / k as f64 } else { v };
            (name, value)
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use super::merge_counters;

    #[test]
    fn counters_of_several_passes_add_up_and_rates_average() {
        let merged = merge_counters(vec![
            ("gather/seeds".into(), 10.0),
            ("knn/global_queries_per_s".into(), 4.0),
            ("gather/seeds".into(), 12.0),
            ("knn/global_queries_per_s".into(), 6.0),
            ("photons/global_mean_path".into(), 2.0),
        ]);
        assert_eq!(
            merged,
            vec![
                ("gather/seeds".to_string(), 22.0),
                ("knn/global_queries_per_s".to_string(), 5.0),
                ("photons/global_mean_path".to_string(), 2.0),
            ]
        );
    }
}
