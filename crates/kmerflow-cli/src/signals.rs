//! SIGINT and SIGTERM cancel a command-line run: the handlers store the exit status (130 or
//! 143) in the run's cancel token; the core notices it between batches and while waiting for
//! input, the run unwinds (removing temporary files and directories) and the command exits
//! with that status.
//!
//! Waiting on a stalled input or output FIFO, pipe, terminal or stdin (reads, writes to a
//! reader that stopped reading, table files read from a FIFO) notices the cancellation too (see
//! `kmerflow_core::io::interruptible`), and a large unfinished temporary is removed without
//! waiting for the kernel to free its blocks (`kmerflow_core::io::discard`). A watchdog is the
//! last resort for a place that still cannot (a write to a regular file on a hung disk or
//! network file system, say): should the run still be going [`WATCHDOG_GRACE`] after the
//! signal, the process exits with the signal's status and the line `kmerflow: interrupted`
//! (the command's own line names the command), leaving its temporaries to the next run's sweep
//! of stale ones. That line does not wait for stderr's lock, which a thread stuck writing to a
//! terminal nobody reads may hold, nor for long on its own write ([`LAST_LINE_WAIT`]).
//!
//! The handlers are installed for the run only: the ones in place before are put back once it
//! ends, so that a program running commands in-process (a Python program calling the native
//! command line) has its own handling of the signals again after the call (Python's
//! `KeyboardInterrupt`, or the default action that ends the process). Runs of one process at
//! the same time share the handlers (a signal cancels each of them); the last to end puts the
//! previous ones back.

use kmerflow_core::run::CancelToken;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a cancelled run may take to unwind before the watchdog ends the process.
pub const WATCHDOG_GRACE: Duration = Duration::from_millis(1500);

/// How long the watchdog waits for its line to be written before it ends the process.
const LAST_LINE_WAIT: Duration = Duration::from_millis(200);

/// How often the watchdog looks at the cancel token.
const WATCH_EVERY: Duration = Duration::from_millis(50);

/// The signals handled, with the exit status each cancels a run with.
const SIGNALS: [(libc::c_int, i32); 2] =
    [(libc::SIGINT, crate::EXIT_INTERRUPTED), (libc::SIGTERM, crate::EXIT_TERMINATED)];

/// The most runs of one process at the same time that a signal cancels (any more run, but a
/// signal does not cancel them).
const MAX_RUNS: usize = 64;

/// The cancel flags of the runs in progress, one per slot (an empty slot is null); the handler
/// stores the signal's exit status into each.
static RUNS: [AtomicPtr<AtomicUsize>; MAX_RUNS] = [const { AtomicPtr::new(null_mut()) }; MAX_RUNS];

/// Calls of the handler under way: a run's flag, once out of its slot, is freed only when none is.
static HANDLING: AtomicUsize = AtomicUsize::new(0);

/// The runs with handlers installed, and the handlers in place before the first of them.
static INSTALLED: Mutex<Installed> = Mutex::new(Installed { runs: 0, previous: Vec::new() });

/// See [`INSTALLED`].
struct Installed {
    runs: usize,
    /// Each signal whose handler was replaced, with the one it had.
    previous: Vec<(libc::c_int, libc::sigaction)>,
}

// SAFETY: `libc::sigaction` holds a handler address, flags and a signal mask: plain data.
unsafe impl Send for Installed {}

/// The signal handler: cancels every run in progress with the signal's exit status
/// (async-signal-safe: lock-free atomics only).
extern "C" fn cancel_runs(signal: libc::c_int) {
    HANDLING.fetch_add(1, Ordering::SeqCst);
    let code = SIGNALS.iter().find(|&&(s, _)| s == signal).map_or(crate::EXIT_INTERRUPTED, |&(_, code)| code);
    for slot in &RUNS {
        let flag = slot.load(Ordering::SeqCst);
        // SAFETY: a flag in a slot stays alive until it is out of the slot and no call of this
        // handler is under way (`Handlers::drop`).
        if let Some(flag) = unsafe { flag.as_ref() } {
            flag.store(code as usize, Ordering::Relaxed);
        }
    }
    HANDLING.fetch_sub(1, Ordering::SeqCst);
}

/// The installed handlers; dropping them puts back the handlers in place before (once no other
/// run has them installed) and stops the watchdog.
pub struct Handlers {
    /// The run's cancel flag, kept alive while it is in `RUNS[slot]` (no slot: every slot was
    /// taken).
    _flag: Arc<AtomicUsize>,
    slot: Option<usize>,
    done: Arc<AtomicBool>,
}

impl Handlers {
    /// Makes SIGINT and SIGTERM cancel through `cancel` (with [`crate::EXIT_INTERRUPTED`] and
    /// [`crate::EXIT_TERMINATED`] as the reason) and starts the watchdog. A signal that cannot
    /// be caught keeps its previous action.
    pub fn install(cancel: &CancelToken) -> Self {
        let flag = cancel.flag();
        let pointer = Arc::as_ptr(&flag).cast_mut();
        let slot = RUNS
            .iter()
            .position(|slot| slot.compare_exchange(null_mut(), pointer, Ordering::SeqCst, Ordering::SeqCst).is_ok());
        let mut installed = INSTALLED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if installed.runs == 0 {
            installed.previous = SIGNALS.iter().filter_map(|&(signal, _)| replace_handler(signal)).collect();
        }
        installed.runs += 1;
        drop(installed);
        let done = Arc::new(AtomicBool::new(false));
        let (token, finished) = (cancel.clone(), done.clone());
        let _ = std::thread::Builder::new().name("kmerflow-watchdog".into()).spawn(move || {
            while !token.is_cancelled() {
                if finished.load(Ordering::Relaxed) {
                    return;
                }
                std::thread::sleep(WATCH_EVERY);
            }
            std::thread::sleep(WATCHDOG_GRACE);
            if !finished.load(Ordering::Relaxed) {
                say_interrupted();
                std::process::exit(i32::try_from(token.reason()).unwrap_or(crate::EXIT_INTERRUPTED));
            }
        });
        Handlers { _flag: flag, slot, done }
    }
}

/// Writes `kmerflow: interrupted` on stderr straight to the file descriptor, from a thread of
/// its own, and waits at most [`LAST_LINE_WAIT`] for it: not through `eprintln!`, whose lock a
/// thread blocked writing to a stalled terminal or pipe may hold, and not longer than that on a
/// write that blocks too.
fn say_interrupted() {
    const LINE: &[u8] = b"kmerflow: interrupted\n";
    let (said, heard) = std::sync::mpsc::channel();
    let writer = std::thread::Builder::new().name("kmerflow-last-line".into()).spawn(move || {
        // SAFETY: writes LINE, a valid buffer of that length, to the stderr file descriptor.
        unsafe { libc::write(libc::STDERR_FILENO, LINE.as_ptr().cast(), LINE.len()) };
        let _ = said.send(());
    });
    if writer.is_ok() {
        let _ = heard.recv_timeout(LAST_LINE_WAIT);
    }
}

/// Installs [`cancel_runs`] as the handler of `signal`; returns the handler it replaced, or
/// None if the signal cannot be caught.
fn replace_handler(signal: libc::c_int) -> Option<(libc::c_int, libc::sigaction)> {
    // SAFETY: zeroed `sigaction` structs are valid (no handler, no flags, an empty mask), and
    // the handler installed is async-signal-safe.
    unsafe {
        let mut ours: libc::sigaction = std::mem::zeroed();
        ours.sa_sigaction = cancel_runs as extern "C" fn(libc::c_int) as libc::sighandler_t;
        ours.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut ours.sa_mask);
        let mut previous: libc::sigaction = std::mem::zeroed();
        (libc::sigaction(signal, &ours, &mut previous) == 0).then_some((signal, previous))
    }
}

impl Drop for Handlers {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        let mut installed = INSTALLED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        installed.runs -= 1;
        if installed.runs == 0 {
            for (signal, previous) in installed.previous.drain(..) {
                // SAFETY: `previous` is what `sigaction` gave back for this signal.
                unsafe { libc::sigaction(signal, &previous, std::ptr::null_mut()) };
            }
        }
        drop(installed);
        if let Some(slot) = self.slot {
            RUNS[slot].store(null_mut(), Ordering::SeqCst);
            // a handler that read the flag before it left the slot may still be storing into it
            while HANDLING.load(Ordering::SeqCst) != 0 {
                std::thread::yield_now();
            }
        }
    }
}
