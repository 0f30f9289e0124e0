//! Ordering, error propagation and shutdown of the pipeline for 1..4 threads.

use super::*;
use std::time::Duration;

/// A run context with `threads` threads.
fn with_threads(threads: usize) -> RunContext {
    RunContext::new().threads_set_to(threads)
}

/// Batches `[i]` for i in 0..n, each a one-element vector.
fn numbered(n: u32) -> impl Iterator<Item = Result<Vec<u32>>> + Send {
    (0..n).map(|i| Ok(vec![i]))
}

/// A worker that doubles values, sleeping a little on some batches to shuffle completion order.
fn jittery_double(batch: Vec<u32>) -> Result<Vec<u32>> {
    if batch[0] % 7 == 3 {
        std::thread::sleep(Duration::from_micros(200));
    }
    Ok(batch.into_iter().map(|x| 2 * x).collect())
}

/// The run of `source` through the workers of `make_worker` with `threads` threads, and the
/// values of the outputs its sink received, in order.
fn run_collecting<W: FnMut(Vec<u32>) -> Result<Vec<u32>>>(
    threads: usize,
    source: impl IntoIterator<Item = Result<Vec<u32>>, IntoIter: Send>,
    make_worker: impl Fn() -> W + Sync,
) -> (Result<PipelineMetrics>, Vec<u32>) {
    let mut seen = Vec::new();
    let sink = |out: Vec<u32>| {
        seen.extend(out);
        Ok(())
    };
    (run_ordered(&with_threads(threads), source, make_worker, sink), seen)
}

#[test]
fn outputs_arrive_in_input_order_for_any_thread_count() {
    for threads in 1..=4 {
        let (m, seen) = run_collecting(threads, numbered(500), || jittery_double);
        let m = m.unwrap();
        let expected: Vec<u32> = (0..500).map(|x| 2 * x).collect();
        assert_eq!(seen, expected, "threads = {threads}");
        assert_eq!(m.workers.len(), threads);
        #[cfg(feature = "metrics")]
        {
            assert_eq!(m.records(), 500);
            assert_eq!(m.reader.batches, 500);
            assert_eq!(m.sink.batches, 500);
        }
    }
}

#[test]
fn empty_source_gives_no_output() {
    for threads in 1..=4 {
        let (m, seen) = run_collecting(threads, numbered(0), || jittery_double);
        m.unwrap();
        assert!(seen.is_empty(), "threads = {threads}");
    }
}

#[test]
fn worker_error_is_the_first_in_input_order_after_all_earlier_outputs() {
    for threads in 1..=4 {
        let (m, seen) = run_collecting(threads, numbered(1000), || {
            |b: Vec<u32>| {
                if b[0] == 137 || b[0] == 600 {
                    Err(Error::invalid(format!("bad batch {}", b[0])))
                } else {
                    jittery_double(b)
                }
            }
        });
        assert_eq!(m.unwrap_err().to_string(), "bad batch 137", "threads = {threads}");
        assert_eq!(seen, (0..137).map(|x| 2 * x).collect::<Vec<_>>());
    }
}

#[test]
fn source_error_stops_the_run() {
    for threads in 1..=4 {
        let source = (0..1000u32).map(|i| {
            if i == 250 {
                Err(Error::format("in.fq", Some(251), Some(1001), "truncated"))
            } else {
                Ok(vec![i])
            }
        });
        let (m, seen) = run_collecting(threads, source, || jittery_double);
        assert_eq!(m.unwrap_err().to_string(), "in.fq: record 251 (line 1001): truncated");
        assert_eq!(seen.len(), 250, "threads = {threads}");
    }
}

#[test]
fn sink_error_stops_an_endless_source_without_deadlock() {
    for threads in 1..=4 {
        let endless = (0u32..).map(|i| Ok(vec![i]));
        let mut n = 0;
        let err = run_ordered(
            &with_threads(threads),
            endless,
            || jittery_double,
            |_| {
                n += 1;
                if n == 40 {
                    Err(Error::io("out.fa", std::io::ErrorKind::BrokenPipe.into()))
                } else {
                    Ok(())
                }
            },
        )
        .unwrap_err();
        assert!(err.is_broken_pipe(), "threads = {threads}");
        assert_eq!(n, 40);
    }
}

#[test]
fn each_worker_gets_its_own_state() {
    use std::sync::atomic::AtomicUsize;
    let made = AtomicUsize::new(0);
    let mut total = 0u64;
    run_ordered(
        &with_threads(3),
        numbered(100),
        || {
            made.fetch_add(1, Ordering::Relaxed);
            let mut scratch = Vec::new();
            move |b: Vec<u32>| {
                scratch.clear();
                scratch.extend(b.iter().map(|&x| u64::from(x)));
                Ok(scratch.iter().sum::<u64>())
            }
        },
        |s| {
            total += s;
            Ok(())
        },
    )
    .unwrap();
    assert_eq!(made.load(Ordering::Relaxed), 3);
    assert_eq!(total, (0..100u64).sum::<u64>());
}

#[test]
fn runs_are_recorded_in_the_run_metrics_with_cpu_time() {
    let ctx = RunContext::new();
    for threads in [1, 3] {
        run_ordered_as(&ctx, "test-registry", numbered(300), threads, || jittery_double, |_| Ok(())).unwrap();
    }
    assert_eq!(ctx.metrics().report().is_some(), metrics::ENABLED);
    let Some(report) = ctx.metrics().report() else { return };
    let runs: Vec<_> =
        report["pipelines"].as_array().unwrap().iter().filter(|p| p["label"] == "test-registry").collect();
    assert_eq!(runs.len(), 2);
    for (run, threads) in runs.iter().zip([1, 3]) {
        assert_eq!(run["records"], 300);
        assert_eq!(run["threads"], threads);
        assert_eq!(run["workers"].as_array().unwrap().len(), threads);
        assert!(run["wall_s"].as_f64().unwrap() > 0.0);
        assert!(run["sink"]["cpu_s"].as_f64().unwrap() > 0.0);
    }
    assert!(RunContext::new().metrics().report().is_none_or(|r| r["pipelines"].as_array().unwrap().is_empty()));
}

#[test]
fn a_cancelled_run_stops_at_the_next_batch() {
    for threads in 1..=4 {
        let ctx = with_threads(threads);
        let endless = (0u32..).map(|i| Ok(vec![i]));
        let mut n = 0;
        let err = run_ordered(
            &ctx,
            endless,
            || jittery_double,
            |_| {
                n += 1;
                if n == 25 {
                    ctx.cancel();
                }
                Ok(())
            },
        )
        .unwrap_err();
        assert!(err.is_cancelled(), "threads = {threads}: {err}");
        assert_eq!(n, 25, "threads = {threads}");
    }
}
