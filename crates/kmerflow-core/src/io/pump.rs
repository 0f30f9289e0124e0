//! Large-chunk sequential reading on a dedicated reader thread (the "data pump").
//!
//! The reader thread reads the (decompressed) input in chunks of at least 1 MiB, with
//! `posix_fadvise(SEQUENTIAL)` on regular files, and hands them over a bounded channel so that
//! decompression and I/O overlap with parsing and processing. Consumers give finished buffers
//! back through [`Pump::recycler`], so that steady-state reading allocates nothing.
//!
//! The reader thread reports its busy (reading and decompressing), waiting and CPU time and
//! the bytes it delivered to the input's [`InputCounters`] (cargo feature `metrics`).
//!
//! Cancellation: the consumer waits for chunks in slices of [`CANCEL_POLL`] and gives up with a
//! cancelled read (see [`super::interruptible::is_cancelled`]) once its run is cancelled,
//! so that a reader thread stuck in a `read` never holds the run (reads of FIFOs, terminals and
//! stdin give up by themselves, see [`super::interruptible`]); a thread still stuck is left
//! behind and ends at its next read, when it finds the pump gone.

use super::compress::read_until_error;
use super::interruptible::{cancelled, is_cancelled, CANCEL_POLL};
use crate::run::metrics::{thread_cpu_time, InputCounters, StageMetrics};
use crate::run::CancelToken;
use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender};
use std::fs::File;
use std::io::{self, Read};
use std::sync::Arc;

/// Size of the chunks read by the pump.
pub const CHUNK_SIZE: usize = 1 << 20;

/// Chunks read ahead of the consumer.
const READ_AHEAD: usize = 4;

/// Tells the kernel that a regular file will be read sequentially (larger read-ahead).
pub(crate) fn advise_sequential(file: &File) {
    use std::os::unix::io::AsRawFd;
    if file.metadata().is_ok_and(|m| m.is_file()) {
        // SAFETY: the descriptor is open for the lifetime of `file`; the call only sets a hint.
        unsafe {
            libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_SEQUENTIAL);
        }
    }
}

/// A reader thread delivering a byte stream in chunks of [`CHUNK_SIZE`] bytes (the last one
/// possibly shorter, never empty).
pub struct Pump {
    chunks: Receiver<io::Result<Vec<u8>>>,
    recycle: Sender<Vec<u8>>,
    counters: Arc<InputCounters>,
    cancel: CancelToken,
    /// The consumer's time spent waiting for chunks.
    starved: StageMetrics,
}

impl Pump {
    /// Starts the reader thread on `reader`. The thread ends at the end of the stream, on an
    /// error, or when the pump is dropped.
    pub fn spawn(reader: Box<dyn Read + Send>) -> Self {
        Self::spawn_counted(reader, Arc::default(), CancelToken::new())
    }

    /// [`Pump::spawn`], reporting the reader thread's metrics to `counters`; waiting for a
    /// chunk ends once `cancel` is cancelled.
    pub fn spawn_counted(reader: Box<dyn Read + Send>, counters: Arc<InputCounters>, cancel: CancelToken) -> Self {
        Self::spawn_sized(reader, counters, CHUNK_SIZE, cancel)
    }

    /// [`Pump::spawn_counted`] with chunks of `chunk_size` bytes (at least 1) instead of
    /// [`CHUNK_SIZE`]: small chunks put record boundaries everywhere (tests, fuzzing).
    pub fn spawn_sized(
        reader: Box<dyn Read + Send>,
        counters: Arc<InputCounters>,
        chunk_size: usize,
        cancel: CancelToken,
    ) -> Self {
        let chunk_size = chunk_size.max(1);
        let (chunk_tx, chunks) = bounded(READ_AHEAD);
        let (recycle, recycled) = bounded(READ_AHEAD * 2);
        let failure_tx = chunk_tx.clone();
        let thread_counters = counters.clone();
        let spawned = std::thread::Builder::new().name("kmerflow-pump".into()).spawn(move || {
            let cpu = thread_cpu_time();
            let mut m = StageMetrics::default();
            let delivered = read_chunks(reader, chunk_size, &chunk_tx, &recycled, &mut m);
            m.set_cpu_since(cpu);
            thread_counters.add_reader(&m, delivered);
        });
        if let Err(e) = spawned {
            // No thread: the failure is the stream's only item.
            let _ = failure_tx.send(Err(e));
        }
        Pump { chunks, recycle, counters, cancel, starved: StageMetrics::default() }
    }

    /// The next chunk, `None` at the end of the stream; a cancelled read (see
    /// [`is_cancelled`]) once the run is cancelled.
    pub fn next_chunk(&mut self) -> io::Result<Option<Vec<u8>>> {
        let (chunks, cancel) = (&self.chunks, &self.cancel);
        let received = self.starved.time_wait(|| loop {
            if cancel.is_cancelled() {
                return Err(cancelled());
            }
            match chunks.recv_timeout(CANCEL_POLL) {
                Ok(chunk) => return Ok(Some(chunk)),
                // A reader thread that gave up because the run was cancelled sends nothing.
                Err(RecvTimeoutError::Disconnected) if cancel.is_cancelled() => return Err(cancelled()),
                Err(RecvTimeoutError::Disconnected) => return Ok(None),
                Err(RecvTimeoutError::Timeout) => {}
            }
        })?;
        received.map_or(Ok(None), |chunk| chunk.map(Some))
    }

    /// A channel on which consumed chunk buffers can be handed back for reuse.
    pub fn recycler(&self) -> Sender<Vec<u8>> {
        self.recycle.clone()
    }
}

impl Drop for Pump {
    fn drop(&mut self) {
        self.counters.add_parse_wait(self.starved.wait_time());
    }
}

/// The reader thread's loop; returns the number of bytes delivered.
fn read_chunks(
    mut reader: Box<dyn Read + Send>,
    chunk_size: usize,
    chunks: &Sender<io::Result<Vec<u8>>>,
    recycled: &Receiver<Vec<u8>>,
    m: &mut StageMetrics,
) -> u64 {
    let mut delivered = 0u64;
    loop {
        let mut buf = recycled.try_recv().unwrap_or_else(|_| Vec::with_capacity(chunk_size));
        // Keeping the old length (usually >= chunk_size) avoids re-zeroing recycled buffers.
        buf.resize(chunk_size, 0);
        // The bytes read before a failure are delivered first, so that the consumer can say
        // where in its input the damage is.
        let (filled, failure) = m.time_busy(|| read_until_error(&mut reader, &mut buf));
        if failure.as_ref().is_some_and(is_cancelled) {
            // The run is cancelled: its consumer stops by itself; a partial chunk handed over
            // now could be taken for input that came before the cancellation.
            return delivered;
        }
        buf.truncate(filled);
        m.count_bytes(filled);
        delivered += filled as u64;
        if filled > 0 && m.time_wait(|| chunks.send(Ok(buf))).is_err() {
            return delivered;
        }
        if let Some(e) = failure {
            let _ = chunks.send(Err(e));
            return delivered;
        }
        if filled < chunk_size {
            return delivered;
        }
    }
}
