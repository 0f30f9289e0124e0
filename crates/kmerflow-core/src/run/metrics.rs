//! Per-stage counters and timers, and a run's registry of them behind `--metrics`.
//!
//! With the `metrics` cargo feature (on by default) each stage thread counts the batches,
//! records and bytes it handled, the time it spent working ("busy"), blocked on a channel
//! ("wait") and its thread CPU time. [`crate::pipeline::run_ordered`], the input reader
//! threads ([`crate::io::pump`]) and the parallel gzip writer report into the run's
//! [`Metrics`] (one per [`super::RunContext`]); [`Metrics::report`] turns it into JSON. Without
//! the feature [`StageMetrics`] is an empty struct, every method is an inlined no-op and
//! [`Metrics::report`] returns `None`.

use std::time::Duration;
#[cfg(feature = "metrics")]
use std::time::Instant;

/// True when the instrumentation is compiled in (cargo feature `metrics`).
pub const ENABLED: bool = cfg!(feature = "metrics");

/// Something the pipeline can count: the records and bytes of a batch.
pub trait Workload {
    /// Number of records in the batch.
    fn records(&self) -> u64;
    /// Number of sequence bytes in the batch (0 when unknown).
    fn bytes(&self) -> u64 {
        0
    }
}

impl<T> Workload for Vec<T> {
    fn records(&self) -> u64 {
        self.len() as u64
    }
}

/// CPU time consumed so far by the calling thread.
pub fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime only writes into the timespec we pass.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0;
    if ok {
        Duration::new(ts.tv_sec.max(0) as u64, ts.tv_nsec.clamp(0, 999_999_999) as u32)
    } else {
        Duration::ZERO
    }
}

/// Counters and timers of one stage thread.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
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
    /// CPU time of the stage's thread.
    #[cfg(feature = "metrics")]
    pub cpu: Duration,
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

    /// Counts `bytes` bytes (for stages that see bytes, not records).
    #[inline]
    pub fn count_bytes(&mut self, bytes: usize) {
        #[cfg(feature = "metrics")]
        {
            self.batches += 1;
            self.bytes += bytes as u64;
        }
        #[cfg(not(feature = "metrics"))]
        let _ = bytes;
    }

    /// Runs `f`, adding its duration to the busy time.
    #[inline]
    pub fn time_busy<R>(&mut self, f: impl FnOnce() -> R) -> R {
        #[cfg(feature = "metrics")]
        return add_elapsed(&mut self.busy, f);
        #[cfg(not(feature = "metrics"))]
        f()
    }

    /// Runs `f`, adding its duration to the waiting time.
    #[inline]
    pub fn time_wait<R>(&mut self, f: impl FnOnce() -> R) -> R {
        #[cfg(feature = "metrics")]
        return add_elapsed(&mut self.wait, f);
        #[cfg(not(feature = "metrics"))]
        f()
    }

    /// Sets the CPU time to the calling thread's CPU time since `since` (a
    /// [`thread_cpu_time`] reading taken on the same thread).
    #[inline]
    pub fn set_cpu_since(&mut self, since: Duration) {
        #[cfg(feature = "metrics")]
        {
            self.cpu = thread_cpu_time().saturating_sub(since);
        }
        #[cfg(not(feature = "metrics"))]
        let _ = since;
    }

    /// The waiting time (zero without the `metrics` feature).
    #[inline]
    pub fn wait_time(&self) -> Duration {
        #[cfg(feature = "metrics")]
        return self.wait;
        #[cfg(not(feature = "metrics"))]
        Duration::ZERO
    }

    /// Adds the counts and times of `other` (a part of this stage's work) to this stage.
    pub fn add(&mut self, other: &StageMetrics) {
        #[cfg(feature = "metrics")]
        {
            self.batches += other.batches;
            self.records += other.records;
            self.bytes += other.bytes;
            self.busy += other.busy;
            self.wait += other.wait;
            self.cpu += other.cpu;
        }
        #[cfg(not(feature = "metrics"))]
        let _ = other;
    }

    /// The stage as JSON (times in seconds).
    #[cfg(feature = "metrics")]
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "batches": self.batches,
            "records": self.records,
            "bytes": self.bytes,
            "busy_s": self.busy.as_secs_f64(),
            "wait_s": self.wait.as_secs_f64(),
            "cpu_s": self.cpu.as_secs_f64(),
        })
    }
}

/// The metrics of one pipeline run: the reader, each worker and the sink.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PipelineMetrics {
    /// The reader thread (source; for record pipelines this is the parser).
    pub reader: StageMetrics,
    /// One entry per worker thread.
    pub workers: Vec<StageMetrics>,
    /// The sink: the calling thread (with one thread, its CPU time covers every stage).
    pub sink: StageMetrics,
    /// Wall time of the whole run.
    #[cfg(feature = "metrics")]
    pub wall: Duration,
}

impl PipelineMetrics {
    /// Empty metrics for `workers` worker threads.
    pub fn new(workers: usize) -> Self {
        PipelineMetrics {
            reader: StageMetrics::default(),
            workers: vec![StageMetrics::default(); workers.max(1)],
            sink: StageMetrics::default(),
            #[cfg(feature = "metrics")]
            wall: Duration::ZERO,
        }
    }

    /// Records processed by all workers together.
    #[cfg(feature = "metrics")]
    pub fn records(&self) -> u64 {
        self.workers.iter().map(|w| w.records).sum()
    }

    /// The run as JSON, with throughput over its wall time.
    #[cfg(feature = "metrics")]
    fn to_json(&self, label: &str) -> serde_json::Value {
        let wall = self.wall.as_secs_f64();
        let bytes: u64 = self.workers.iter().map(|w| w.bytes).sum();
        serde_json::json!({
            "label": label,
            "threads": self.workers.len(),
            "wall_s": wall,
            "records": self.records(),
            "bases": bytes,
            "records_per_s": per_second(self.records() as f64, wall),
            "bases_mb_per_s": per_second(bytes as f64 / 1e6, wall),
            "reader": self.reader.to_json(),
            "workers": self.workers.iter().map(StageMetrics::to_json).collect::<Vec<_>>(),
            "sink": self.sink.to_json(),
        })
    }
}

#[cfg(feature = "metrics")]
fn per_second(amount: f64, secs: f64) -> f64 {
    if secs > 0.0 {
        amount / secs
    } else {
        0.0
    }
}

/// The counters of one opened input, shared by its raw-byte reader and its reader thread.
#[derive(Debug, Default)]
pub struct InputCounters {
    /// Bytes read from the file (compressed when the file is).
    pub compressed: std::sync::atomic::AtomicU64,
    #[cfg(feature = "metrics")]
    inner: std::sync::Mutex<InputDetails>,
}

#[cfg(feature = "metrics")]
#[derive(Debug, Default)]
struct InputDetails {
    path: String,
    compression: &'static str,
    size: Option<u64>,
    decompressed: u64,
    /// The reader (decompression) thread: busy = reading and decompressing.
    pump: StageMetrics,
    /// Time the parser waited for the reader thread.
    parse_wait: Duration,
}

impl InputCounters {
    /// Records what was opened.
    pub fn describe(&self, path: &str, compression: &'static str, size: Option<u64>) {
        #[cfg(feature = "metrics")]
        {
            let mut d = lock(&self.inner);
            d.path = path.to_string();
            d.compression = compression;
            d.size = size;
        }
        #[cfg(not(feature = "metrics"))]
        let _ = (path, compression, size);
    }

    /// Adds the reader thread's metrics and the decompressed bytes it delivered.
    pub fn add_reader(&self, pump: &StageMetrics, decompressed: u64) {
        #[cfg(feature = "metrics")]
        {
            let mut d = lock(&self.inner);
            d.pump = pump.clone();
            d.decompressed += decompressed;
        }
        #[cfg(not(feature = "metrics"))]
        let _ = (pump, decompressed);
    }

    /// Adds time the consumer waited for data.
    pub fn add_parse_wait(&self, wait: Duration) {
        #[cfg(feature = "metrics")]
        {
            lock(&self.inner).parse_wait += wait;
        }
        #[cfg(not(feature = "metrics"))]
        let _ = wait;
    }

    #[cfg(feature = "metrics")]
    fn to_json(&self) -> serde_json::Value {
        use std::sync::atomic::Ordering;
        let d = lock(&self.inner);
        let busy = d.pump.busy.as_secs_f64();
        serde_json::json!({
            "path": d.path,
            "compression": d.compression,
            "size": d.size,
            "bytes_compressed": self.compressed.load(Ordering::Relaxed),
            "bytes_decompressed": d.decompressed,
            "reader_thread": d.pump.to_json(),
            "decompressed_mb_per_busy_s": per_second(d.decompressed as f64 / 1e6, busy),
            "parse_wait_s": d.parse_wait.as_secs_f64(),
        })
    }
}

#[cfg(feature = "metrics")]
fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What the registry holds.
#[cfg(feature = "metrics")]
#[derive(Default)]
struct Registry {
    inputs: Vec<std::sync::Arc<InputCounters>>,
    pipelines: Vec<(&'static str, PipelineMetrics)>,
    groups: Vec<(&'static str, Vec<StageMetrics>)>,
    counters: std::collections::BTreeMap<&'static str, u64>,
}

/// The metrics of one run: its inputs, pipelines, thread groups and named counters.
#[derive(Default)]
pub struct Metrics {
    #[cfg(feature = "metrics")]
    registry: std::sync::Mutex<Registry>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

/// The counter of k-mers hashed from reads (by the counting commands and normalization).
pub const KMERS: &str = "kmers";

impl Metrics {
    /// Registers a newly opened input and returns its counters.
    pub fn register_input(&self) -> std::sync::Arc<InputCounters> {
        let counters = std::sync::Arc::new(InputCounters::default());
        #[cfg(feature = "metrics")]
        lock(&self.registry).inputs.push(counters.clone());
        counters
    }

    /// Records a finished pipeline run under `label`.
    pub fn record_pipeline(&self, label: &'static str, m: &PipelineMetrics) {
        #[cfg(feature = "metrics")]
        lock(&self.registry).pipelines.push((label, m.clone()));
        #[cfg(not(feature = "metrics"))]
        let _ = (label, m);
    }

    /// Records the threads of a stage outside the pipelines (for example the counting owners)
    /// under `label`.
    pub fn record_threads(&self, label: &'static str, threads: Vec<StageMetrics>) {
        #[cfg(feature = "metrics")]
        lock(&self.registry).groups.push((label, threads));
        #[cfg(not(feature = "metrics"))]
        let _ = (label, threads);
    }

    /// Adds `n` to the named counter (for example [`KMERS`]).
    #[inline]
    pub fn add_count(&self, name: &'static str, n: u64) {
        #[cfg(feature = "metrics")]
        {
            *lock(&self.registry).counters.entry(name).or_default() += n;
        }
        #[cfg(not(feature = "metrics"))]
        let _ = (name, n);
    }

    /// Everything recorded as JSON: `inputs`, `pipelines`, `thread_groups`, `counters` and
    /// `totals`; `None` without the `metrics` feature.
    pub fn report(&self) -> Option<serde_json::Value> {
        #[cfg(feature = "metrics")]
        {
            use std::sync::atomic::Ordering;
            let r = lock(&self.registry);
            let compressed: u64 = r.inputs.iter().map(|i| i.compressed.load(Ordering::Relaxed)).sum();
            let decompressed: u64 = r.inputs.iter().map(|i| lock(&i.inner).decompressed).sum();
            let records: u64 = r.pipelines.iter().filter(|(l, _)| *l == RECORDS_LABEL).map(|(_, p)| p.records()).sum();
            Some(serde_json::json!({
                "inputs": r.inputs.iter().map(|i| i.to_json()).collect::<Vec<_>>(),
                "pipelines": r.pipelines.iter().map(|(l, p)| p.to_json(l)).collect::<Vec<_>>(),
                "thread_groups": r.groups.iter().map(|(label, threads)| serde_json::json!({
                    "label": label,
                    "threads": threads.iter().map(StageMetrics::to_json).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
                "counters": r.counters,
                "totals": {
                    "bytes_in_compressed": compressed,
                    "bytes_in_decompressed": decompressed,
                    "records": records,
                },
            }))
        }
        #[cfg(not(feature = "metrics"))]
        None
    }
}

/// The label of pipelines run by [`crate::pipeline::run_ordered`] (records through workers).
pub const RECORDS_LABEL: &str = "records";

/// Runs `f`, adding its duration to `total`.
#[cfg(feature = "metrics")]
#[inline]
fn add_elapsed<R>(total: &mut Duration, f: impl FnOnce() -> R) -> R {
    let t = Instant::now();
    let r = f();
    *total += t.elapsed();
    r
}
