//! Per-stage counters and timers of the pipeline.
//!
//! With the `metrics` cargo feature (on by default) each stage thread counts the batches,
//! records and bytes it handled and the time it spent working ("busy") and blocked on a
//! channel ("wait"). Without the feature [`StageMetrics`] is an empty struct and every method
//! is an inlined no-op, so the instrumentation costs nothing.

use crate::io::{BundleBatch, RecordBatch};
#[cfg(feature = "metrics")]
use std::time::{Duration, Instant};

/// Something the pipeline can count: the records and bytes of a batch.
pub trait Workload {
    /// Number of records in the batch.
    fn records(&self) -> u64;
    /// Number of sequence bytes in the batch (0 when unknown).
    fn bytes(&self) -> u64 {
        0
    }
}

impl Workload for RecordBatch {
    fn records(&self) -> u64 {
        self.len() as u64
    }
    fn bytes(&self) -> u64 {
        self.iter().map(|r| r.seq.len() as u64).sum()
    }
}

impl Workload for BundleBatch {
    fn records(&self) -> u64 {
        self.batch.records()
    }
    fn bytes(&self) -> u64 {
        self.batch.bytes()
    }
}

impl<T> Workload for Vec<T> {
    fn records(&self) -> u64 {
        self.len() as u64
    }
}

/// Counters and timers of one stage thread.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct StageMetrics {
    /// Batches handled.
    #[cfg(feature = "metrics")]
    pub batches: u64,
    /// Records in those batches.
    #[cfg(feature = "metrics")]
    pub records: u64,
    /// Sequence bytes in those batches.
    #[cfg(feature = "metrics")]
    pub bytes: u64,
    /// Time spent working.
    #[cfg(feature = "metrics")]
    pub busy: Duration,
    /// Time spent waiting on a channel.
    #[cfg(feature = "metrics")]
    pub wait: Duration,
}

impl StageMetrics {
    /// Counts one batch with its records and bytes.
    #[inline]
    pub fn count(&mut self, batch: &impl Workload) {
        #[cfg(feature = "metrics")]
        {
            self.batches += 1;
            self.records += batch.records();
            self.bytes += batch.bytes();
        }
        #[cfg(not(feature = "metrics"))]
        let _ = batch;
    }

    /// Counts one batch whose contents are not known (the sink sees outputs only).
    #[inline]
    pub fn count_batch(&mut self) {
        #[cfg(feature = "metrics")]
        {
            self.batches += 1;
        }
    }

    /// Runs `f`, adding its duration to the busy time.
    #[inline]
    pub fn time_busy<R>(&mut self, f: impl FnOnce() -> R) -> R {
        #[cfg(feature = "metrics")]
        {
            let t = Instant::now();
            let r = f();
            self.busy += t.elapsed();
            r
        }
        #[cfg(not(feature = "metrics"))]
        f()
    }

    /// Runs `f`, adding its duration to the waiting time.
    #[inline]
    pub fn time_wait<R>(&mut self, f: impl FnOnce() -> R) -> R {
        #[cfg(feature = "metrics")]
        {
            let t = Instant::now();
            let r = f();
            self.wait += t.elapsed();
            r
        }
        #[cfg(not(feature = "metrics"))]
        f()
    }
}

/// The metrics of one pipeline run: the reader, each worker and the sink.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct PipelineMetrics {
    /// The reader thread (source).
    pub reader: StageMetrics,
    /// One entry per worker thread.
    pub workers: Vec<StageMetrics>,
    /// The sink (the calling thread).
    pub sink: StageMetrics,
}

impl PipelineMetrics {
    /// Empty metrics for `workers` worker threads.
    pub fn new(workers: usize) -> Self {
        PipelineMetrics {
            reader: StageMetrics::default(),
            workers: vec![StageMetrics::default(); workers.max(1)],
            sink: StageMetrics::default(),
        }
    }

    /// Records processed by all workers together.
    #[cfg(feature = "metrics")]
    pub fn records(&self) -> u64 {
        self.workers.iter().map(|w| w.records).sum()
    }
}
