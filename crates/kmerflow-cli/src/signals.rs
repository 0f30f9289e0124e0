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
//! of stale ones.

use kmerflow_core::run::CancelToken;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::SigId;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long a cancelled run may take to unwind before the watchdog ends the process.
pub const WATCHDOG_GRACE: Duration = Duration::from_millis(1500);

/// How often the watchdog looks at the cancel token.
const WATCH_EVERY: Duration = Duration::from_millis(50);

/// The installed handlers; dropping them uninstalls them and stops the watchdog.
pub struct Handlers {
    ids: Vec<SigId>,
    done: Arc<AtomicBool>,
}

impl Handlers {
    /// Makes SIGINT and SIGTERM cancel through `cancel` (with [`crate::EXIT_INTERRUPTED`] and
    /// [`crate::EXIT_TERMINATED`] as the reason) and starts the watchdog. A signal that cannot
    /// be caught keeps its default action.
    pub fn install(cancel: &CancelToken) -> Self {
        let codes = [(SIGINT, crate::EXIT_INTERRUPTED), (SIGTERM, crate::EXIT_TERMINATED)];
        let ids = codes
            .into_iter()
            .filter_map(|(signal, code)| signal_hook::flag::register_usize(signal, cancel.flag(), code as usize).ok())
            .collect();
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
                eprintln!("kmerflow: interrupted");
                std::process::exit(i32::try_from(token.reason()).unwrap_or(crate::EXIT_INTERRUPTED));
            }
        });
        Handlers { ids, done }
    }
}

impl Drop for Handlers {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        for id in self.ids.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}
