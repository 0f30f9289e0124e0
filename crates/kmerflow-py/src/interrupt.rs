//! Long calls that Ctrl-C interrupts: the work runs on a scoped thread with the GIL released
//! while the calling thread checks for Python signals every 50 ms; on `KeyboardInterrupt` (or
//! any exception a signal handler raises) the run's cancellation token is set, the work is
//! awaited (the core stops within a batch) and the exception is raised.

use crate::errors::warn_messages;
use kmerflow_core::run::RunContext;
use pyo3::prelude::*;
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// How often the calling thread looks for a pending signal.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// Runs `work` with a fresh run context (see the module documentation); the run's warnings
/// (an empty input, say) are then issued as `kmerflow.KmerflowWarning`s.
pub fn interruptible<T: Send>(py: Python<'_>, work: impl FnOnce(&RunContext) -> T + Send) -> PyResult<T> {
    let ctx = RunContext::new();
    let result = interruptible_in(py, &ctx, work)?;
    warn_messages(py, &ctx)?;
    Ok(result)
}

/// [`interruptible`] within `ctx`, leaving the run's messages to the caller.
pub fn interruptible_in<T: Send>(
    py: Python<'_>,
    ctx: &RunContext,
    work: impl FnOnce(&RunContext) -> T + Send,
) -> PyResult<T> {
    // Set (and notified) when the work is done.
    let done = (Mutex::new(false), Condvar::new());
    let is_done = || {
        let guard = done.0.lock().unwrap_or_else(|e| e.into_inner());
        let (guard, _) = done.1.wait_timeout_while(guard, SIGNAL_POLL, |d| !*d).unwrap_or_else(|e| e.into_inner());
        *guard
    };
    std::thread::scope(|scope| {
        let worker = scope.spawn(|| {
            let result = work(ctx);
            *done.0.lock().unwrap_or_else(|e| e.into_inner()) = true;
            done.1.notify_all();
            result
        });
        let mut interrupted = None;
        while !py.detach(is_done) {
            if interrupted.is_none() {
                if let Err(e) = py.check_signals() {
                    ctx.cancel();
                    interrupted = Some(e);
                }
            }
        }
        let result = worker.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        match interrupted {
            Some(e) => Err(e),
            None => Ok(result),
        }
    })
}
