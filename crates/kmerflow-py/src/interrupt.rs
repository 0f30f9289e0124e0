//! Long calls that Ctrl-C interrupts and whose messages reach Python as they come: the work runs
//! on a scoped thread with the GIL released while the calling thread waits for it, waking every
//! 50 ms to check for Python signals and whenever the run emits a message. The calling thread
//! (holding the GIL) hands each message to Python while the emitting thread waits, so Python
//! sees the message before the run goes on (messages are rare: khmer's progress lines); the
//! core's threads never touch Python. On
//! `KeyboardInterrupt` (or any exception a signal handler or the message callback raises, such
//! as a warning turned into an error) the run's cancellation token is set, the work is awaited
//! (the core stops within a batch) and the exception is raised.

use crate::errors::error_class;
use kmerflow_core::run::{CancelToken, Level, Message, MessageHandler, RunContext};
use pyo3::prelude::*;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// How often the calling thread looks for a pending signal.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// What the worker tells the calling thread: the messages not yet forwarded, and whether the
/// work is done; and what the calling thread answers: how many messages it has handed on.
#[derive(Default)]
struct Mailbox {
    messages: Vec<Message>,
    done: bool,
    posted: u64,
    handed: u64,
    /// Set once the calling thread stopped handing messages on (a message emitted by a thread
    /// that outlives the work is then only kept in the run's context).
    closed: bool,
}

/// A [`Mailbox`] with the condition variable the calling thread waits on.
#[derive(Default)]
struct Shared {
    mailbox: Mutex<Mailbox>,
    wake: Condvar,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Mailbox> {
        self.mailbox.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Posts `message` and waits until the calling thread has handed it on.
    fn post_message(&self, message: &Message) {
        let mut mailbox = self.lock();
        mailbox.messages.push(message.clone());
        mailbox.posted += 1;
        let number = mailbox.posted;
        self.wake.notify_all();
        drop(self.wake.wait_while(mailbox, |m| m.handed < number && !m.closed).unwrap_or_else(|e| e.into_inner()));
    }

    /// Tells the calling thread that the work is done.
    fn finish(&self) {
        self.lock().done = true;
        self.wake.notify_all();
    }

    /// Tells the waiting emitters that `n` more messages were handed on, and whether no more
    /// will be.
    fn handed(&self, n: usize, closed: bool) {
        let mut mailbox = self.lock();
        mailbox.handed += n as u64;
        mailbox.closed = closed;
        self.wake.notify_all();
    }

    /// Waits up to [`SIGNAL_POLL`] for a message or the end of the work; returns the messages
    /// that came and whether the work is done.
    fn wait(&self) -> (Vec<Message>, bool) {
        let (mut mailbox, _) = self
            .wake
            .wait_timeout_while(self.lock(), SIGNAL_POLL, |m| m.messages.is_empty() && !m.done)
            .unwrap_or_else(|e| e.into_inner());
        (std::mem::take(&mut mailbox.messages), mailbox.done)
    }
}

/// Tells the calling thread that the work is done when dropped.
struct Finish<'a>(&'a Shared);

impl Drop for Finish<'_> {
    fn drop(&mut self) {
        self.0.finish();
    }
}

/// Runs `work` with a fresh run context (see the module documentation); the run's warnings
/// (an empty input, say) are issued as `kmerflow.KmerflowWarning`s as they come.
pub fn interruptible<T: Send>(py: Python<'_>, work: impl FnOnce(&RunContext) -> T + Send) -> PyResult<T> {
    interruptible_with(py, warn_message, work)
}

/// Issues a warning or error message through `warnings.warn` as a `kmerflow.KmerflowWarning`
/// (informational messages are dropped).
pub fn warn_message(py: Python<'_>, message: &Message) -> PyResult<()> {
    if message.level == Level::Info {
        return Ok(());
    }
    let category = error_class(py, "KmerflowWarning")?;
    py.import("warnings")?.getattr("warn")?.call1((message.text.as_str(), category, 2))?;
    Ok(())
}

/// [`interruptible`], handing every message of the run to `on_message` (on the calling thread,
/// GIL held) while the run goes on; an error from `on_message` cancels the run and is raised.
pub fn interruptible_with<T: Send>(
    py: Python<'_>,
    on_message: impl FnMut(Python<'_>, &Message) -> PyResult<()>,
    work: impl FnOnce(&RunContext) -> T + Send,
) -> PyResult<T> {
    interruptible_showing(py, on_message, None, work)
}

/// [`interruptible_with`], the run's reading counted on the progress counters of `shown` when
/// given (the terminal of a sharded run: [`RunContext::build_showing_progress`]).
pub fn interruptible_showing<T: Send>(
    py: Python<'_>,
    mut on_message: impl FnMut(Python<'_>, &Message) -> PyResult<()>,
    shown: Option<&RunContext>,
    work: impl FnOnce(&RunContext) -> T + Send,
) -> PyResult<T> {
    let shared = Arc::new(Shared::default());
    let ctx = {
        let shared = shared.clone();
        let handler: MessageHandler = Box::new(move |m| shared.post_message(m));
        match shown {
            Some(shown) => RunContext::build_showing_progress(CancelToken::new(), Some(handler), shown),
            None => RunContext::build(CancelToken::new(), Some(handler)),
        }
    };
    std::thread::scope(|scope| {
        let worker = scope.spawn(|| {
            // Finishes when the work returns or panics (the panic is raised on join).
            let _finish = Finish(&shared);
            work(&ctx)
        });
        let mut failed = None;
        loop {
            let (messages, done) = py.detach(|| shared.wait());
            if failed.is_none() {
                failed = messages.iter().find_map(|m| on_message(py, m).err()).or_else(|| py.check_signals().err());
                if failed.is_some() {
                    ctx.cancel();
                }
            }
            shared.handed(messages.len(), done);
            if done {
                break;
            }
        }
        let result = worker.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        match failed {
            Some(e) => Err(e),
            None => Ok(result),
        }
    })
}
