//! The context of one run: its threads, metrics, progress counters, cancellation and messages.
//!
//! Every operation ([`crate::ops`]) takes a [`RunContext`] and everything it starts (the
//! pipeline's threads, the input reader threads, parallel compression) works within it, so two
//! runs in one process (two Python threads, a workflow engine running two tasks) never see each
//! other's settings, metrics or progress. A context is cheap to clone: the clones share one
//! state, so a front end keeps a clone to poll progress, cancel the run or read its messages.
//!
//! * threads: the worker threads of the pipelines and of parallel (de)compression;
//! * [`metrics::Metrics`]: the per-stage counters and timers behind `--metrics`;
//! * [`progress::Progress`]: input bytes read against the inputs' total size, records handled,
//!   passes over the inputs;
//! * [`files::Files`]: the inputs opened and the outputs written (for the run's report);
//! * [`CancelToken`]: set by a front end (a signal handler, a Python `KeyboardInterrupt`); the
//!   core checks it between batches and while waiting for input, and stops with
//!   [`crate::Error::Cancelled`];
//! * side outputs: files and folders a front end writes beside the operation's own
//!   (`--metrics`, reports), which the operation's preflight checks with its own outputs
//!   ([`files::preflight`], through [`crate::io::refuse_inputs_as_outputs`]);
//! * messages: the core never prints; it emits [`Message`]s (level and text) that the context
//!   keeps in order and hands, as they come, to the handler a front end installed.
//!
//! A step that runs beside the run's own work on a thread of its own gets a context of its
//! own from [`RunContext::beside`]: its threads, progress and cancellation token are its own,
//! everything else is the run's.

pub mod files;
pub mod metrics;
pub mod progress;

use crate::{Error, Result};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The most worker threads a run uses: far more than any machine's cores, few enough that
/// starting them cannot exhaust the process's memory for thread stacks (100,000 threads did).
pub const MAX_THREADS: usize = 1024;

/// How important a message is; front ends show warnings and errors even when asked to be quiet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// What the run did (khmer's progress and summary lines).
    Info,
    /// Something the user should know about: the result may not be what was wanted.
    Warning,
    /// A problem the run went on past (with `--force`) or that is about to end it.
    Error,
}

/// One message of a run, in khmer's wording.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Message {
    /// Its importance.
    pub level: Level,
    /// The text, one or more lines without the final newline.
    pub text: String,
}

impl Message {
    /// A message of `level`.
    pub fn new(level: Level, text: impl Into<String>) -> Self {
        Message { level, text: text.into() }
    }

    /// An informational message.
    pub fn info(text: impl Into<String>) -> Self {
        Self::new(Level::Info, text)
    }

    /// A warning.
    pub fn warning(text: impl Into<String>) -> Self {
        Self::new(Level::Warning, text)
    }

    /// An error the run reports without (yet) failing.
    pub fn error(text: impl Into<String>) -> Self {
        Self::new(Level::Error, text)
    }
}

/// A shared flag that asks a run to stop. Cloning gives another handle on the same flag.
///
/// The flag holds a number: 0 while the run may go on, anything else once cancelled. The value
/// is for the canceller's own use (the command line stores the exit status of the signal that
/// cancelled the run, through [`CancelToken::flag`]); the core only tests it for zero.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicUsize>);

impl CancelToken {
    /// A token that is not cancelled.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the run to stop (keeping an earlier reason if there is one).
    pub fn cancel(&self) {
        let _ = self.0.compare_exchange(0, 1, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// True once cancelled.
    #[inline]
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed) != 0
    }

    /// The value stored by whoever cancelled (0 = not cancelled).
    pub fn reason(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }

    /// The flag itself, for code that can only store a number into an atomic (a signal
    /// handler): storing a non-zero value cancels.
    pub fn flag(&self) -> Arc<AtomicUsize> {
        self.0.clone()
    }

    /// `Err(Error::Cancelled)` once cancelled.
    #[inline]
    pub fn check(&self) -> Result<()> {
        cancelled_if(self.is_cancelled())
    }
}

/// `Err(Error::Cancelled)` when `cancelled`, the answer of every cancellation check.
#[inline]
fn cancelled_if(cancelled: bool) -> Result<()> {
    if cancelled {
        Err(Error::Cancelled)
    } else {
        Ok(())
    }
}

/// A front end's handler of messages, called on the thread that emits the message.
pub type MessageHandler = Box<dyn Fn(&Message) + Send + Sync>;

/// The shared state of a run.
struct State {
    threads: AtomicUsize,
    metrics: metrics::Metrics,
    progress: Arc<progress::Progress>,
    files: files::Files,
    cancel: CancelToken,
    messages: Mutex<Vec<Message>>,
    handler: Option<MessageHandler>,
    side_outputs: Mutex<Vec<files::Output>>,
    /// The run a context made by [`RunContext::beside`] works within: its metrics, files,
    /// messages and side outputs are that run's, and that run's cancellation stops it too.
    within: Option<RunContext>,
}

/// The context of one run; see the [module documentation](self).
#[derive(Clone)]
pub struct RunContext(Arc<State>);

impl Default for RunContext {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for RunContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunContext")
            .field("threads", &self.threads())
            .field("cancelled", &self.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl RunContext {
    /// A context with one thread, its own cancellation token and no message handler (messages
    /// are only kept, see [`RunContext::messages`]).
    pub fn new() -> Self {
        Self::build(CancelToken::new(), None)
    }

    /// A context that also calls `handler` with each message as it is emitted (the command line
    /// prints them, keeping their order with its progress line).
    pub fn with_handler(handler: impl Fn(&Message) + Send + Sync + 'static) -> Self {
        Self::build(CancelToken::new(), Some(Box::new(handler)))
    }

    /// A context cancelled through `cancel` (shared with the caller), calling `handler` if any.
    pub fn build(cancel: CancelToken, handler: Option<MessageHandler>) -> Self {
        Self::with_state(cancel, handler, None, Arc::default())
    }

    /// [`RunContext::build`] with the progress counters of `shown`, the context a front end
    /// draws its progress line from: what this context reads advances that line (a sharded
    /// run, whose steps run in contexts of their own under one line).
    pub fn build_showing_progress(cancel: CancelToken, handler: Option<MessageHandler>, shown: &RunContext) -> Self {
        Self::with_state(cancel, handler, None, shown.0.progress.clone())
    }

    /// A context for a step run beside this run's own work (on a thread of its own): `threads`
    /// worker threads, stopped through `cancel` (its owner's to share with that work) as well
    /// as by this run's cancellation, and a progress of its own, which no front end shows (the
    /// run's progress line stays that of the run's own work). Its metrics, files, messages and
    /// side outputs are this run's.
    pub fn beside(&self, threads: usize, cancel: CancelToken) -> Self {
        Self::with_state(cancel, None, Some(self.clone()), Arc::default()).threads_set_to(threads)
    }

    fn with_state(
        cancel: CancelToken,
        handler: Option<MessageHandler>,
        within: Option<RunContext>,
        progress: Arc<progress::Progress>,
    ) -> Self {
        RunContext(Arc::new(State {
            threads: AtomicUsize::new(1),
            metrics: metrics::Metrics::default(),
            progress,
            files: files::Files::default(),
            cancel,
            messages: Mutex::new(Vec::new()),
            handler,
            side_outputs: Mutex::new(Vec::new()),
            within,
        }))
    }

    /// The state of the run this context belongs to (its own, or for a context made by
    /// [`RunContext::beside`], that of the run it works within).
    fn run_state(&self) -> &State {
        match &self.0.within {
            Some(run) => run.run_state(),
            None => &self.0,
        }
    }

    /// Sets the number of worker threads (at least 1, at most [`MAX_THREADS`]): the pipelines'
    /// workers, BGZF decompression and `.gz` output compression (with 1, `.gz` outputs are one
    /// streaming gzip member).
    pub fn set_threads(&self, threads: usize) {
        self.0.threads.store(threads.clamp(1, MAX_THREADS), Ordering::Relaxed);
    }

    /// [`RunContext::set_threads`], returning the context.
    pub fn threads_set_to(self, threads: usize) -> Self {
        self.set_threads(threads);
        self
    }

    /// The number of worker threads (1 unless set).
    #[inline]
    pub fn threads(&self) -> usize {
        self.0.threads.load(Ordering::Relaxed)
    }

    /// The run's metrics.
    pub fn metrics(&self) -> &metrics::Metrics {
        &self.run_state().metrics
    }

    /// The run's progress counters.
    pub fn progress(&self) -> &progress::Progress {
        &self.0.progress
    }

    /// The files the run read and wrote.
    pub fn files(&self) -> &files::Files {
        &self.run_state().files
    }

    /// The context's cancellation token (for a context made by [`RunContext::beside`], its own,
    /// not the run's).
    pub fn cancel_token(&self) -> &CancelToken {
        &self.0.cancel
    }

    /// Asks the run to stop.
    pub fn cancel(&self) {
        self.0.cancel.cancel();
    }

    /// True once the run (or, for a context made by [`RunContext::beside`], the step) was
    /// asked to stop.
    #[inline]
    pub fn is_cancelled(&self) -> bool {
        self.0.cancel.is_cancelled() || self.0.within.as_ref().is_some_and(RunContext::is_cancelled)
    }

    /// `Err(Error::Cancelled)` once [`RunContext::is_cancelled`]; the core calls it between
    /// batches.
    #[inline]
    pub fn check_cancelled(&self) -> Result<()> {
        cancelled_if(self.is_cancelled())
    }

    /// Declares `output` as a file or folder the front end will write beside the operation's
    /// outputs (`--metrics`, `--html`, `--plots`): the operation's preflight checks it with its
    /// own outputs ([`files::preflight`]).
    pub fn add_side_output(&self, output: files::Output) {
        self.run_state().side_outputs.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(output);
    }

    /// The side outputs declared so far ([`RunContext::add_side_output`]).
    pub fn side_outputs(&self) -> Vec<files::Output> {
        self.run_state().side_outputs.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// Emits a message: kept in order and handed to the handler, if any.
    pub fn emit(&self, message: Message) {
        let run = self.run_state();
        if let Some(handler) = &run.handler {
            handler(&message);
        }
        run.messages.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(message);
    }

    /// Emits an informational message.
    pub fn info(&self, text: impl Into<String>) {
        self.emit(Message::info(text));
    }

    /// Emits a warning.
    pub fn warning(&self, text: impl Into<String>) {
        self.emit(Message::warning(text));
    }

    /// Emits an error message (the run goes on; errors that end it are returned).
    pub fn error(&self, text: impl Into<String>) {
        self.emit(Message::error(text));
    }

    /// The messages emitted so far, in order.
    pub fn messages(&self) -> Vec<Message> {
        self.run_state().messages.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_threads_cancellation_and_messages() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let ctx = {
            let seen = seen.clone();
            RunContext::with_handler(move |m| seen.lock().unwrap().push(m.text.clone()))
        };
        let other = ctx.clone().threads_set_to(3);
        assert_eq!(ctx.threads(), 3);
        other.info("one");
        ctx.warning("two");
        assert_eq!(*seen.lock().unwrap(), ["one", "two"]);
        assert_eq!(ctx.messages(), [Message::info("one"), Message::warning("two")]);
        assert!(ctx.check_cancelled().is_ok());
        other.cancel();
        assert!(matches!(ctx.check_cancelled(), Err(Error::Cancelled)));
        assert_eq!(RunContext::new().threads(), 1);
        assert!(!RunContext::new().is_cancelled());
    }

    #[test]
    fn a_context_beside_shares_messages_and_files_not_threads_progress_or_its_token() {
        let ctx = RunContext::new().threads_set_to(2);
        let stop = CancelToken::new();
        let beside = ctx.beside(1, stop.clone());
        assert_eq!((ctx.threads(), beside.threads()), (2, 1));
        beside.info("beside");
        beside.files().add_output("out");
        beside.progress().add_read(10);
        assert_eq!(ctx.messages(), [Message::info("beside")]);
        assert_eq!(ctx.files().outputs(), ["out"]);
        assert_eq!((ctx.progress().snapshot().read, beside.progress().snapshot().read), (0, 10));
        stop.cancel();
        assert!(beside.is_cancelled() && !ctx.is_cancelled());
        let beside = ctx.beside(1, CancelToken::new());
        ctx.cancel();
        assert!(matches!(beside.check_cancelled(), Err(Error::Cancelled)));
    }

    #[test]
    fn a_context_showing_progress_shares_only_the_progress() {
        let shown = RunContext::new();
        let step = RunContext::build_showing_progress(CancelToken::new(), None, &shown);
        step.progress().add_read(10);
        step.info("step");
        step.cancel();
        assert_eq!(shown.progress().snapshot().read, 10);
        assert!(shown.messages().is_empty() && !shown.is_cancelled());
    }

    #[test]
    fn a_cancel_reason_is_kept() {
        let token = CancelToken::new();
        token.flag().store(130, Ordering::Relaxed);
        token.cancel();
        assert_eq!(token.reason(), 130);
        assert_eq!(serde_json::to_string(&Message::warning("w")).unwrap(), r#"{"level":"warning","text":"w"}"#);
    }
}
