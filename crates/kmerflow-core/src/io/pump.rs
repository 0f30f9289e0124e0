//! Large-chunk sequential reading on a dedicated reader thread (the "data pump").
//!
//! The reader thread reads the (decompressed) input in chunks of at least 1 MiB, with
//! `posix_fadvise(SEQUENTIAL)` on regular files, and hands them over a bounded channel so that
//! decompression and I/O overlap with parsing and processing. Consumers give finished buffers
//! back through [`Pump::recycler`], so that steady-state reading allocates nothing.

use crossbeam_channel::{bounded, Receiver, Sender};
use std::fs::File;
use std::io::{self, Read};

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
}

impl Pump {
    /// Starts the reader thread on `reader`. The thread ends at the end of the stream, on an
    /// error, or when the pump is dropped.
    pub fn spawn(reader: Box<dyn Read + Send>) -> Self {
        let (chunk_tx, chunks) = bounded(READ_AHEAD);
        let (recycle, recycled) = bounded(READ_AHEAD * 2);
        let failure_tx = chunk_tx.clone();
        let spawned = std::thread::Builder::new()
            .name("kmerflow-pump".into())
            .spawn(move || read_chunks(reader, &chunk_tx, &recycled));
        if let Err(e) = spawned {
            // No thread: the failure is the stream's only item.
            let _ = failure_tx.send(Err(e));
        }
        Pump { chunks, recycle }
    }

    /// The next chunk, `None` at the end of the stream.
    pub fn next_chunk(&mut self) -> io::Result<Option<Vec<u8>>> {
        self.chunks.recv().map_or(Ok(None), |chunk| chunk.map(Some))
    }

    /// A channel on which consumed chunk buffers can be handed back for reuse.
    pub fn recycler(&self) -> Sender<Vec<u8>> {
        self.recycle.clone()
    }
}

/// The reader thread's loop.
fn read_chunks(
    mut reader: Box<dyn Read + Send>,
    chunks: &Sender<io::Result<Vec<u8>>>,
    recycled: &Receiver<Vec<u8>>,
) {
    loop {
        let mut buf = recycled
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(CHUNK_SIZE));
        // Keeping the old length (usually >= CHUNK_SIZE) avoids re-zeroing recycled buffers.
        buf.resize(CHUNK_SIZE, 0);
        let mut filled = 0;
        while filled < CHUNK_SIZE {
            match reader.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let _ = chunks.send(Err(e));
                    return;
                }
            }
        }
        buf.truncate(filled);
        let at_end = filled < CHUNK_SIZE;
        if filled > 0 && chunks.send(Ok(buf)).is_err() {
            return;
        }
        if at_end {
            return;
        }
    }
}
