//! Waiting on files that can stall (FIFOs, pipes, terminals, stdin, devices) without holding a
//! cancelled run.
//!
//! A FIFO nobody writes to blocks `open(2)` for reading, and one nobody reads blocks it for
//! writing; a read of a stalled pipe blocks until data comes, and a write to a pipe whose
//! reader stopped reading blocks once the pipe is full. Here a FIFO is opened with
//! `O_NONBLOCK` (which never waits); an input FIFO has the flag cleared once open, and every
//! read of a file that is not a regular file first waits with `poll(2)` in slices of
//! [`CANCEL_POLL`] (on Linux a FIFO opened before any writer polls as "no data" until one
//! writes or closes). An output FIFO without a reader is retried every [`CANCEL_POLL`] and
//! stays non-blocking once open, as does a pipe or FIFO on stdout ([`stdout_pipe`], opened
//! anew so that the flag is this process's own): a write that finds the pipe full waits for
//! room with `poll(2)` in the same slices. Each wait gives up with a cancelled operation
//! ([`is_cancelled`]) once the run's [`CancelToken`] is cancelled; nothing is left blocked
//! behind.

use crate::run::CancelToken;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::time::Duration;

/// How often a wait for a stalled file checks whether its run was cancelled.
pub const CANCEL_POLL: Duration = Duration::from_millis(50);

/// The error of a read, write or open given up because the run was cancelled.
#[derive(Debug)]
struct Cancelled;

impl std::fmt::Display for Cancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted")
    }
}

impl std::error::Error for Cancelled {}

/// A read, write or open given up because the run was cancelled. Its kind is not
/// [`io::ErrorKind::Interrupted`], which callers such as `read_exact` and `write_all` would
/// retry forever.
pub fn cancelled() -> io::Error {
    io::Error::other(Cancelled)
}

/// True when `e` is a read, write or open given up because the run was cancelled.
pub fn is_cancelled(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Cancelled>())
}

/// True when `path` names a FIFO (following links).
fn is_fifo(path: &str) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo())
}

/// Clears `O_NONBLOCK` on `file`, opened with it only so that the opening would not wait.
fn make_blocking(file: &File) -> io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor that `file` keeps open; only the status flags change.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Opens `path` for reading without waiting for a FIFO's writer (the first read waits, see
/// [`Interruptible`]).
pub fn open_read(path: &str) -> io::Result<File> {
    if !is_fifo(path) {
        return File::open(path);
    }
    let file = File::options().read(true).custom_flags(libc::O_NONBLOCK).open(path)?;
    make_blocking(&file)?;
    Ok(file)
}

/// Opens the special file `path` for appending (written in place); a FIFO without a reader is
/// retried every [`CANCEL_POLL`] until one comes or `cancel` is cancelled, and stays
/// non-blocking for [`Interruptible`] writes.
pub fn open_append(path: &str, cancel: &CancelToken) -> io::Result<File> {
    if !is_fifo(path) {
        return File::options().append(true).open(path);
    }
    loop {
        match File::options().append(true).custom_flags(libc::O_NONBLOCK).open(path) {
            Ok(file) => return Ok(file),
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                if cancel.is_cancelled() {
                    return Err(cancelled());
                }
                std::thread::sleep(CANCEL_POLL);
            }
            Err(e) => return Err(e),
        }
    }
}

/// When stdout is a pipe or FIFO with a reader, a non-blocking descriptor of it of this
/// process's own (opened anew through `/proc/self/fd/1`: the flag on the inherited descriptor
/// would be shared with the processes that hold it too), for [`Interruptible`] writes; `None`
/// for anything else, or when it cannot be opened so (stdout is then written as it is).
pub fn stdout_pipe() -> Option<File> {
    const STDOUT: &str = "/proc/self/fd/1";
    if !is_fifo(STDOUT) {
        return None;
    }
    File::options().write(true).custom_flags(libc::O_NONBLOCK).open(STDOUT).ok()
}

/// stdin as a file of its own (a duplicate of descriptor 0), read without the standard
/// library's buffer so that waiting on the descriptor sees every byte not yet read.
pub fn stdin_file() -> io::Result<File> {
    Ok(File::from(io::stdin().as_fd().try_clone_to_owned()?))
}

/// A file whose reads, unless it is a regular file, wait for data in slices of
/// [`CANCEL_POLL`], and whose writes, when it is a non-blocking pipe or FIFO, wait for room in
/// the same slices; both give up with a cancelled operation once the run is cancelled.
pub struct Interruptible {
    file: File,
    cancel: CancelToken,
    /// False for regular files, whose reads never wait on another process.
    may_stall: bool,
}

impl Interruptible {
    /// Wraps `file`, read within the run whose token is `cancel`.
    pub fn new(file: File, cancel: CancelToken) -> Self {
        let may_stall = !file.metadata().is_ok_and(|m| m.is_file());
        Interruptible { file, cancel, may_stall }
    }

    /// Waits until the file is ready for `events` (`POLLIN`: data, end of file or an error;
    /// `POLLOUT`: room, or a reader gone), or the run is cancelled.
    fn wait_for(&self, events: libc::c_short) -> io::Result<()> {
        let timeout = CANCEL_POLL.as_millis() as libc::c_int;
        loop {
            if self.cancel.is_cancelled() {
                return Err(cancelled());
            }
            let mut fds = libc::pollfd { fd: self.file.as_raw_fd(), events, revents: 0 };
            // SAFETY: one pollfd on the stack, valid for the call.
            match unsafe { libc::poll(&mut fds, 1, timeout) } {
                0 => {}
                n if n > 0 => return Ok(()),
                _ => {
                    let e = io::Error::last_os_error();
                    if e.kind() != io::ErrorKind::Interrupted {
                        // Not pollable: let the read or write itself say what is wrong.
                        return Ok(());
                    }
                }
            }
        }
    }
}

impl Read for Interruptible {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.may_stall {
            self.wait_for(libc::POLLIN)?;
        }
        self.file.read(buf)
    }
}

impl Write for Interruptible {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        loop {
            match self.file.write(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.wait_for(libc::POLLOUT)?,
                written => return written,
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn fifo(dir: &std::path::Path) -> String {
        crate::io::test_fifo(dir, "fifo").to_str().unwrap().to_string()
    }

    fn cancel_after(ms: u64) -> CancelToken {
        let cancel = CancelToken::new();
        let token = cancel.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(ms));
            token.cancel();
        });
        cancel
    }

    #[test]
    fn a_fifo_without_writer_opens_at_once_and_its_read_gives_up_when_cancelled() {
        let dir = tempfile::tempdir().unwrap();
        let path = fifo(dir.path());
        let started = Instant::now();
        let mut reader = Interruptible::new(open_read(&path).unwrap(), cancel_after(200));
        let err = reader.read(&mut [0u8; 18]).unwrap_err();
        assert!(is_cancelled(&err), "{err}");
        assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    }

    #[test]
    fn a_fifo_is_read_to_its_end_once_a_writer_comes_and_goes() {
        let dir = tempfile::tempdir().unwrap();
        let path = fifo(dir.path());
        let mut reader = Interruptible::new(open_read(&path).unwrap(), CancelToken::new());
        let writer = {
            let path = path.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(100));
                File::options().write(true).open(path).unwrap().write_all(b"@r\nACGT\n+\nIIII\n").unwrap();
            })
        };
        let mut text = String::new();
        reader.read_to_string(&mut text).unwrap();
        writer.join().unwrap();
        assert_eq!(text, "@r\nACGT\n+\nIIII\n");
    }

    #[test]
    fn an_output_fifo_without_reader_gives_up_when_cancelled() {
        let dir = tempfile::tempdir().unwrap();
        let path = fifo(dir.path());
        let started = Instant::now();
        let err = open_append(&path, &cancel_after(200)).unwrap_err();
        assert!(is_cancelled(&err), "{err}");
        assert!(started.elapsed() < Duration::from_secs(2));
        let reader = std::thread::spawn({
            let path = path.clone();
            move || std::fs::read(path).unwrap()
        });
        open_append(&path, &CancelToken::new()).unwrap().write_all(b"x").unwrap();
        assert_eq!(reader.join().unwrap(), b"x");
    }

    #[test]
    fn a_write_to_a_fifo_whose_reader_stops_reading_gives_up_when_cancelled() {
        let dir = tempfile::tempdir().unwrap();
        let path = fifo(dir.path());
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let reader = std::thread::spawn({
            let path = path.clone();
            move || {
                let mut file = File::open(path).unwrap();
                let mut first = [0u8; 10];
                file.read_exact(&mut first).unwrap();
                let _ = stopped.recv_timeout(Duration::from_secs(10));
                first
            }
        });
        let cancel = cancel_after(300);
        let mut out = Interruptible::new(open_append(&path, &cancel).unwrap(), cancel);
        let started = Instant::now();
        let err = out.write_all(&vec![b'x'; 4 << 20]).unwrap_err();
        assert!(is_cancelled(&err), "{err}");
        assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
        stop.send(()).unwrap();
        assert_eq!(reader.join().unwrap(), [b'x'; 10]);
    }
}
