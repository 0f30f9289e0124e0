//! The parallel, order-preserving batch engine: reader -> workers -> ordered sink.
//!
//! Every streaming command has the same shape: a *source* yields batches of records (for
//! example the io layer's `PairedReader::next_batch`), a *worker* turns each batch into an
//! output value (typically a formatted byte buffer plus counters), and a *sink* consumes the
//! outputs (writes the buffers, adds up the counters). [`run_ordered`] runs these stages on
//! separate threads connected by bounded crossbeam channels:
//!
//! ```text
//!   source ──(seq, batch)──▶ worker 1 ┐
//!   (reader thread)        ▶ worker 2 ├──(seq, output)──▶ reorder buffer ─▶ sink
//!                          ▶ worker n ┘                    (calling thread)
//! ```
//!
//! * **Order**: the reader numbers batches `0, 1, 2, ...`; the sink side keeps outputs that
//!   arrive early in a reorder buffer and hands them to `sink` strictly by number, so the sink
//!   sees outputs in input order for any thread count and any scheduling.
//! * **Bounded memory**: at most [`in_flight_limit`]`(threads)` batches exist between the
//!   reader and the sink at any time (queued, being processed or waiting in the reorder
//!   buffer); the reader waits for a free slot before reading the next batch.
//! * **Errors**: an error from the source, a worker or the sink ends the run with that error.
//!   Source and worker errors take their place in the batch order, so the error reported is
//!   the first one in input order (deterministic), after the sink has received all earlier
//!   outputs. Every thread notices a closed channel and ends, so an early error never
//!   deadlocks the pipeline; a panicking worker is reported as an error and its panic is
//!   re-raised when the threads are joined.
//! * **One thread**: with `threads <= 1` everything runs inline on the calling thread, with no
//!   channel and no extra thread.
//! * **Cancellation**: the run's [`RunContext`] is checked before every batch is read and
//!   before every output is sunk; once it is cancelled the run ends with
//!   [`Error::Cancelled`] (a source blocked in a read must notice the cancellation itself, as
//!   the io layer's readers do).
//!
//! The engine is generic: it knows batches only through the [`Workload`] trait. Per-thread
//! metrics (batches, records, bytes, busy, waiting and CPU time) are returned by
//! [`run_ordered`] and recorded in the run's [`crate::run::metrics::Metrics`]; without the
//! `metrics` cargo feature they compile to nothing.

use crate::run::metrics::{self, PipelineMetrics, StageMetrics};
use crate::run::RunContext;
use crate::{Error, Result};
use crossbeam_channel::{bounded, Receiver, Sender};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

pub use crate::run::metrics::Workload;

/// How many batches may be in flight (between the reader and the sink) for `threads` workers:
/// one in each worker's hands and one ready behind it. Twice as many were measured no faster
/// (counting, normalize-by-median, filter-abund-single, trim-low-abund at two threads) and cost
/// 15-20 MiB more peak memory.
pub fn in_flight_limit(threads: usize) -> usize {
    2 * threads.max(1)
}

/// The number of worker threads meaning "all available cores".
pub fn available_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Runs `source -> workers -> sink` with the context's number of workers, the sink receiving
/// the workers' outputs in the order of the source's batches. See the
/// [module documentation](self).
///
/// * `source`: the batches in input order; the first `Err` ends the input.
/// * `make_worker`: called once per worker thread to build its processing function (so that a
///   worker can own scratch buffers); the function turns one batch into one output.
/// * `sink`: called on the calling thread with each output, in input order.
///
/// Returns the metrics of the run, or the first error in input order.
pub fn run_ordered<B, O, I, W, M, S>(ctx: &RunContext, source: I, make_worker: M, sink: S) -> Result<PipelineMetrics>
where
    I: IntoIterator<Item = Result<B>>,
    I::IntoIter: Send,
    B: Workload + Send,
    O: Send,
    M: Fn() -> W + Sync,
    W: FnMut(B) -> Result<O>,
    S: FnMut(O) -> Result<()>,
{
    run_ordered_as(ctx, metrics::RECORDS_LABEL, source, ctx.threads(), make_worker, sink)
}

/// [`run_ordered`] with `threads` workers, recording the run's metrics under `label` (for
/// pipelines that are not the command's record processing, such as parallel decompression).
pub fn run_ordered_as<B, O, I, W, M, S>(
    ctx: &RunContext,
    label: &'static str,
    source: I,
    threads: usize,
    make_worker: M,
    mut sink: S,
) -> Result<PipelineMetrics>
where
    I: IntoIterator<Item = Result<B>>,
    I::IntoIter: Send,
    B: Workload + Send,
    O: Send,
    M: Fn() -> W + Sync,
    W: FnMut(B) -> Result<O>,
    S: FnMut(O) -> Result<()>,
{
    #[cfg(feature = "metrics")]
    let started = std::time::Instant::now();
    let cpu = metrics::thread_cpu_time();
    let source = source.into_iter();
    let mut m = if threads <= 1 {
        run_inline(ctx, source, make_worker(), &mut sink)
    } else {
        run_threaded(ctx, source, threads, &make_worker, &mut sink)
    }?;
    m.sink.set_cpu_since(cpu);
    #[cfg(feature = "metrics")]
    {
        m.wall = started.elapsed();
    }
    ctx.metrics().record_pipeline(label, &m);
    Ok(m)
}

/// The single-threaded form: read, process and sink one batch at a time.
fn run_inline<B, O>(
    ctx: &RunContext,
    mut source: impl Iterator<Item = Result<B>>,
    mut worker: impl FnMut(B) -> Result<O>,
    sink: &mut impl FnMut(O) -> Result<()>,
) -> Result<PipelineMetrics>
where
    B: Workload,
{
    let mut m = PipelineMetrics::new(1);
    loop {
        ctx.check_cancelled()?;
        let batch = m.reader.time_busy(|| source.next());
        let Some(batch) = batch else { break };
        let batch = batch?;
        m.reader.count(&batch);
        m.workers[0].count(&batch);
        let out = m.workers[0].time_busy(|| worker(batch))?;
        m.sink.time_busy(|| sink(out))?;
        m.sink.count_batch();
    }
    Ok(m)
}

/// A numbered output (or error) on its way from a worker (or the reader) to the sink.
type Numbered<O> = (u64, Result<O>);

/// The multi-threaded form: one reader thread, `threads` workers, the sink on this thread.
fn run_threaded<B, O, W>(
    ctx: &RunContext,
    source: impl Iterator<Item = Result<B>> + Send,
    threads: usize,
    make_worker: &(impl Fn() -> W + Sync),
    sink: &mut impl FnMut(O) -> Result<()>,
) -> Result<PipelineMetrics>
where
    B: Workload + Send,
    O: Send,
    W: FnMut(B) -> Result<O>,
{
    let limit = in_flight_limit(threads);
    let (batch_tx, batch_rx) = bounded::<(u64, B)>(limit);
    let (out_tx, out_rx) = bounded::<Numbered<O>>(limit);
    // One token per free in-flight slot: the reader takes one per batch, the sink gives it
    // back after consuming that batch's output.
    let (slot_tx, slot_rx) = bounded::<()>(limit);
    for _ in 0..limit {
        slot_tx.send(()).expect("the slot channel has room for every token");
    }
    let stop = AtomicBool::new(false);

    std::thread::scope(|scope| {
        let reader = {
            let out_tx = out_tx.clone();
            let stop = &stop;
            scope.spawn(move || read_stage(ctx, source, batch_tx, out_tx, slot_rx, stop))
        };
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                let batch_rx = batch_rx.clone();
                let out_tx = out_tx.clone();
                scope.spawn(move || work_stage(make_worker(), batch_rx, out_tx))
            })
            .collect();
        drop((batch_rx, out_tx));

        let mut m = PipelineMetrics::new(threads);
        let result = sink_stage(ctx, out_rx, slot_tx, sink, &mut m.sink);
        if result.is_err() {
            stop.store(true, Ordering::Relaxed);
        }
        // The sink's channel ends are dropped by now, so every stage can finish.
        m.reader = reader.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        for (slot, w) in m.workers.iter_mut().zip(workers) {
            *slot = w.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        }
        result.map(|()| m)
    })
}

/// Reader thread: numbers the source's batches and sends them to the workers, one free slot
/// per batch. A source error (or the cancellation of the run) is sent straight to the sink
/// under its batch number.
fn read_stage<B: Workload, O>(
    ctx: &RunContext,
    mut source: impl Iterator<Item = Result<B>>,
    batch_tx: Sender<(u64, B)>,
    out_tx: Sender<Numbered<O>>,
    slot_rx: Receiver<()>,
    stop: &AtomicBool,
) -> StageMetrics {
    let cpu = metrics::thread_cpu_time();
    let mut m = StageMetrics::default();
    for seq in 0u64.. {
        if m.time_wait(|| slot_rx.recv()).is_err() || stop.load(Ordering::Relaxed) {
            break;
        }
        if ctx.is_cancelled() {
            let _ = out_tx.send((seq, Err(Error::Cancelled)));
            break;
        }
        let sent = match m.time_busy(|| source.next()) {
            None => break,
            Some(Err(e)) => {
                let _ = out_tx.send((seq, Err(e)));
                break;
            }
            Some(Ok(batch)) => {
                m.count(&batch);
                m.time_wait(|| batch_tx.send((seq, batch))).is_ok()
            }
        };
        if !sent {
            break;
        }
    }
    m.set_cpu_since(cpu);
    m
}

/// Worker thread: processes batches until the input closes or the sink goes away.
fn work_stage<B: Workload, O>(
    mut worker: impl FnMut(B) -> Result<O>,
    batch_rx: Receiver<(u64, B)>,
    out_tx: Sender<Numbered<O>>,
) -> StageMetrics {
    let cpu = metrics::thread_cpu_time();
    let mut m = StageMetrics::default();
    while let Ok((seq, batch)) = m.time_wait(|| batch_rx.recv()) {
        m.count(&batch);
        let out = m.time_busy(|| worker(batch));
        let failed = out.is_err();
        if m.time_wait(|| out_tx.send((seq, out))).is_err() || failed {
            break;
        }
    }
    m.set_cpu_since(cpu);
    m
}

/// Sink side (calling thread): reorders outputs by batch number and feeds them to `sink`.
fn sink_stage<O>(
    ctx: &RunContext,
    out_rx: Receiver<Numbered<O>>,
    slot_tx: Sender<()>,
    sink: &mut impl FnMut(O) -> Result<()>,
    m: &mut StageMetrics,
) -> Result<()> {
    let mut pending: HashMap<u64, Result<O>> = HashMap::new();
    let mut next = 0u64;
    loop {
        while let Some(out) = pending.remove(&next) {
            ctx.check_cancelled()?;
            m.time_busy(|| sink(out?))?;
            m.count_batch();
            next += 1;
            // The reader may have finished and dropped its end; that is not an error.
            let _ = slot_tx.send(());
        }
        match m.time_wait(|| out_rx.recv()) {
            Ok((seq, out)) => {
                pending.insert(seq, out);
            }
            // Every sender is gone: normal end, unless some batch never came back.
            Err(_) if pending.is_empty() => return Ok(()),
            Err(_) => return Err(Error::invalid("a pipeline worker stopped unexpectedly")),
        }
    }
}

#[cfg(test)]
mod tests;
