//! Output files, and khmer's record formatting.
//!
//! A regular file (or a new name) is written under a temporary name in its directory and
//! renamed over the target only when complete: a run that fails or is killed never leaves a
//! half-written file under the final name. The temporary is `.NAME.tmp-PID-RANDOM`, created
//! with `O_CREAT|O_EXCL` (a file or symbolic link already at that name is never opened or
//! followed); it gets the mode of the file it replaces. Temporaries of the same output left by
//! a process that no longer runs (killed with SIGKILL, say) are removed by the next run writing
//! that output. Where the target cannot be replaced without harm it is written in place: a
//! FIFO, a character or block device or a socket, and a process's open file (`/dev/stdout`,
//! `/dev/stderr`, `/dev/fd/3`, anything under `/proc/`, or a symbolic link to them), which is
//! opened for appending without truncating; a FIFO, and stdout when it is a pipe, are written
//! without blocking, so that a reader that stops reading never holds a cancelled run (see
//! [`super::interruptible`]). A temporary left unfinished is removed without waiting for the
//! kernel to free its blocks (see [`super::discard`]). An existing target whose owner-write bit is unset (or that
//! the process may not write) is refused with "Permission denied" before anything is read, even
//! for root, as khmer refuses it for users. A symbolic link to a regular file is followed: the
//! file it points to is replaced and the link stays.

use super::compress::{Compression, Encoder};
use super::discard;
use super::fastx::Record;
use super::interruptible::{open_append, stdout_pipe, Interruptible};
use crate::run::files::OutputKind;
use crate::run::RunContext;
use crate::{Error, Result};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Buffer size between the (compressing) writer and the file or stdout.
const WRITE_BUFFER: usize = 1 << 20;

/// Random characters in a temporary name.
const TEMP_RANDOM: usize = 8;

/// The destination under the encoder: a file (a pipe or FIFO written without blocking a
/// cancelled run, see [`Interruptible`]), or stdout when it is not a pipe.
enum Sink {
    File(BufWriter<Interruptible>),
    Stdout(BufWriter<io::Stdout>),
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sink::File(w) => w.write(buf),
            Sink::Stdout(w) => w.write(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Sink::File(w) => w.write_all(buf),
            Sink::Stdout(w) => w.write_all(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::File(w) => w.flush(),
            Sink::Stdout(w) => w.flush(),
        }
    }
}

/// How an output path other than `-` (stdout) is written.
enum Target {
    /// Opened for appending where it is (special files, `/dev/*`, `/proc/*`).
    InPlace,
    /// Written under a temporary name in the directory of `path` (the file itself when the
    /// name is a symbolic link to one) and renamed over it; `mode` is the replaced file's.
    Replace { path: PathBuf, mode: Option<u32> },
}

/// True when `path`, or a symbolic link on the way to the file it names, is an open file of a
/// process: `/dev/stdout`, `/dev/stderr`, `/dev/fd/N` or under `/proc/` (`/dev/stdout` ->
/// `/proc/self/fd/1` -> the file the shell opened, which must not be replaced).
fn reaches_open_file(path: &Path) -> bool {
    let mut current = path.to_path_buf();
    for _ in 0..40 {
        let std = ["/dev/stdout", "/dev/stderr", "/dev/stdin"].iter().any(|s| current == Path::new(s));
        if std || current.starts_with("/dev/fd") || current.starts_with("/proc") {
            return true;
        }
        match std::fs::read_link(&current) {
            Ok(next) => current = current.parent().unwrap_or(Path::new("/")).join(next),
            Err(_) => return false,
        }
    }
    false
}

/// The owner-write bit of `mode`, which khmer (as a user) needs and kmerflow needs of everyone.
fn owner_may_write(mode: u32) -> bool {
    mode & 0o200 != 0
}

/// Decides how `path` (not `-`) is written; refuses a directory and a write-protected file.
fn target_of(path: &str) -> Result<Target> {
    let p = Path::new(path);
    if reaches_open_file(p) {
        return Ok(Target::InPlace);
    }
    let meta = match std::fs::metadata(p) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(Target::Replace { path: p.to_path_buf(), mode: None });
        }
        Err(e) => return Err(Error::io(path, e)),
    };
    let kind = meta.file_type();
    if kind.is_fifo() || kind.is_char_device() || kind.is_block_device() || kind.is_socket() {
        return Ok(Target::InPlace);
    }
    if kind.is_dir() {
        return Err(Error::io(path, io::Error::from_raw_os_error(libc::EISDIR)));
    }
    let mode = meta.permissions().mode() & 0o7777;
    if !owner_may_write(mode) || !may_write(p) {
        return Err(Error::io(path, io::Error::from_raw_os_error(libc::EACCES)));
    }
    let real = if std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink()) {
        std::fs::canonicalize(p).map_err(|e| Error::io(path, e))?
    } else {
        p.to_path_buf()
    };
    Ok(Target::Replace { path: real, mode: Some(mode) })
}

/// Refuses, before anything is read, an output `path` of `kind` that cannot be written where it
/// is named (the errors name `path`): a file that is a folder or write-protected, a new name
/// under `/proc` or `/dev/fd` (only open files are there), a folder given for a file or a file
/// for a folder, stdout for a folder, and a missing or unwritable folder to put it in. A
/// folder output is created by its writer when missing, but only its last component: its
/// parent must exist. `made_by_run(dir)` tells whether folder `dir` is itself an output of the
/// run (a file inside is then checked with that folder).
pub fn check_writable(path: &str, kind: OutputKind, made_by_run: &dyn Fn(&Path) -> bool) -> Result<()> {
    // The OS's words for `errno`, then what exactly is wrong.
    let refuse = |errno: i32, detail: String| {
        let os = io::Error::from_raw_os_error(errno);
        let words = os.to_string();
        let words = words.split(" (os error").next().unwrap_or_default().to_string();
        let text = if detail.is_empty() { words } else { format!("{words} ({detail})") };
        Err(Error::io(path, io::Error::new(os.kind(), text)))
    };
    if path == "-" {
        return match kind {
            OutputKind::File => Ok(()),
            OutputKind::Folder => refuse(libc::EINVAL, "a folder is needed, not stdout".into()),
        };
    }
    let place = match kind {
        OutputKind::File if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) => {
            return refuse(libc::EISDIR, "a file is needed, not a folder".into())
        }
        OutputKind::File => match target_of(path)? {
            Target::InPlace if std::fs::metadata(path).is_err() => {
                return refuse(libc::ENOENT, "only files already open can be written there".into())
            }
            Target::InPlace => return Ok(()),
            Target::Replace { path: real, .. } => real,
        },
        OutputKind::Folder => match std::fs::metadata(path) {
            Ok(meta) if meta.is_dir() && may_write(Path::new(path)) => return Ok(()),
            Ok(meta) if meta.is_dir() => return refuse(libc::EACCES, "the folder is not writable".into()),
            Ok(_) => return refuse(libc::ENOTDIR, "a folder is needed, not a file".into()),
            Err(_) => PathBuf::from(path),
        },
    };
    let dir = match place.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if made_by_run(dir) {
        return Ok(());
    }
    let created = match kind {
        OutputKind::File => "",
        OutputKind::Folder => "; only the last folder of the path is created",
    };
    match std::fs::metadata(dir) {
        Ok(meta) if !meta.is_dir() => refuse(libc::ENOTDIR, format!("{} is not a folder", dir.display())),
        Ok(_) if !may_write(dir) => refuse(libc::EACCES, format!("folder {} is not writable", dir.display())),
        Ok(_) => Ok(()),
        Err(_) => refuse(libc::ENOENT, format!("folder {} does not exist{created}", dir.display())),
    }
}

/// `access(W_OK)`: whether this process may write the existing file `path`.
fn may_write(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated string for the duration of the call.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// The start of the temporary names of `path` (`.NAME.tmp-`), and its directory.
fn temp_prefix(path: &Path) -> (PathBuf, String) {
    let name = path.file_name().map_or_else(Default::default, |n| n.to_string_lossy().into_owned());
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    (dir, format!(".{name}.tmp-"))
}

/// True when no process `pid` exists.
fn process_is_gone(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    pid > 0 && unsafe { libc::kill(pid, 0) } != 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

/// Removes the regular files `.NAME.tmp-PID[-RANDOM]` next to `path` whose process is gone.
fn remove_stale_temporaries(path: &Path) {
    let (dir, prefix) = temp_prefix(path);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(&prefix)) else {
            continue;
        };
        let pid = rest.split('-').next().and_then(|p| p.parse::<i32>().ok());
        let regular = entry.file_type().is_ok_and(|t| t.is_file());
        if regular && pid.is_some_and(process_is_gone) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The message of an error from the `tempfile` crate without the temporary's path it appends
/// (errors name the output as the user gave it).
fn without_temp_path(e: io::Error) -> io::Error {
    if e.raw_os_error().is_some() {
        return e;
    }
    let text = e.to_string();
    let message = text.split(" at path ").next().unwrap_or(&text).to_string();
    io::Error::new(e.kind(), message)
}

/// A new temporary file for `path` (see the module documentation), with `mode` when given.
fn create_temporary(path: &Path, mode: Option<u32>) -> io::Result<(File, tempfile::TempPath)> {
    remove_stale_temporaries(path);
    let (dir, prefix) = temp_prefix(path);
    let prefix = format!("{prefix}{}-", std::process::id());
    let temp = tempfile::Builder::new()
        .prefix(&prefix)
        .rand_bytes(TEMP_RANDOM)
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)
        .map_err(without_temp_path)?;
    let (file, temp) = temp.into_parts();
    if let Some(mode) = mode {
        file.set_permissions(std::fs::Permissions::from_mode(mode))?;
    }
    Ok((file, temp))
}

/// A temporary and the name it is renamed to once complete; dropped unrenamed, it is removed
/// without waiting for the kernel to free its blocks (see [`discard`]): a cancelled run with a
/// large partial output exits at once.
struct Rename {
    /// `None` once renamed.
    temp: Option<tempfile::TempPath>,
    target: PathBuf,
}

impl Rename {
    fn new(temp: tempfile::TempPath, target: PathBuf) -> Self {
        Rename { temp: Some(temp), target }
    }

    /// The temporary's path.
    fn temp_path(&self) -> &Path {
        self.temp.as_deref().unwrap_or(&self.target)
    }

    /// Renames the temporary over the target.
    fn persist(mut self) -> io::Result<()> {
        match self.temp.take() {
            Some(temp) => temp.persist(&self.target).map_err(|e| e.error),
            None => Ok(()),
        }
    }
}

impl Drop for Rename {
    fn drop(&mut self) {
        if let Some(path) = self.temp.take().and_then(|temp| temp.keep().ok()) {
            let _ = discard::remove_file(&path);
        }
    }
}

/// A complete output under its temporary name, renamed into place by [`Staged::commit`] (or
/// removed when dropped uncommitted), so that a command can finish all its outputs and check
/// its results before any appears. Outputs written in place and stdout have nothing to rename.
#[must_use = "a staged output appears only when committed"]
pub struct Staged {
    path: String,
    /// The temporary and the name it is renamed to.
    rename: Option<Rename>,
    /// The run whose outputs list gets the path once committed.
    run: Option<RunContext>,
}

impl std::fmt::Debug for Staged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Staged").field("path", &self.path).finish_non_exhaustive()
    }
}

impl Staged {
    /// The output path as given.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Where the complete bytes are until committed: the temporary of a replaced file, else the
    /// path as given (for a caller that reads its own output back before committing it).
    pub fn written_path(&self) -> &std::path::Path {
        match &self.rename {
            Some(rename) => rename.temp_path(),
            None => std::path::Path::new(&self.path),
        }
    }

    /// Renames the temporary over the final name; within a run whose commits are held
    /// ([`crate::run::files::Files::hold_commits`]), the output stays staged, held by the run
    /// for its front end to commit.
    pub fn commit(mut self) -> Result<()> {
        let run = self.run.take();
        // Held by its run, an output does not refer to it (the run would hold itself).
        let Some(mut staged) = (match &run {
            Some(run) => run.files().hold(self),
            None => Some(self),
        }) else {
            return Ok(());
        };
        if let Some(rename) = staged.rename.take() {
            rename.persist().map_err(|e| Error::io(&staged.path, e))?;
        }
        if let Some(run) = &run {
            run.files().add_output(&staged.path);
        }
        Ok(())
    }
}

/// True when `path` is written under a temporary name and renamed (a regular file or a new
/// name), false when it is written in place (a FIFO, a device, a process's open file).
pub fn is_replaced(path: &str) -> Result<bool> {
    Ok(matches!(target_of(path)?, Target::Replace { .. }))
}

/// A new regular file to be filled through a map or by hand (a file-backed table): the file
/// under a temporary name, and the [`Staged`] that renames it to `path` once complete. Refused
/// where `path` is not a regular file or a new name.
pub fn create_regular(path: &str) -> Result<(File, Staged)> {
    match target_of(path)? {
        Target::Replace { path: target, mode } => {
            let (file, temp) = create_temporary(&target, mode).map_err(|e| Error::io(path, e))?;
            Ok((file, Staged { path: path.to_string(), rename: Some(Rename::new(temp, target)), run: None }))
        }
        _ => Err(Error::invalid(format!("{path}: needs to be a regular file (it is written through a memory map)"))),
    }
}

/// An output destination: a file written under a temporary name and renamed on
/// [`OutputFile::finish`] (dropped unfinished, the temporary is removed), a special file written
/// in place, or stdout for `-` (see the module documentation). Compression is chosen by the
/// caller or, by default, by the name's extension (levels: see [`super::compress`]). Writing to a
/// closed stdout pipe fails with [`io::ErrorKind::BrokenPipe`] (see [`Error::is_broken_pipe`]).
pub struct OutputFile {
    path: String,
    /// `None` once finished.
    writer: Option<Encoder<Sink>>,
    /// The temporary file and the name it is renamed to, for replaced files.
    rename: Option<Rename>,
    /// The run it belongs to (its outputs list gets the path once the file is in place).
    run: RunContext,
}

impl OutputFile {
    /// Creates `path` (`-` = stdout) with compression by extension.
    pub fn create(path: &str) -> Result<Self> {
        Self::create_with(path, Compression::from_path(path))
    }

    /// Creates `path` with an explicit compression (khmer's `--gzip`/`--bzip`), outside any run
    /// (gzip on one thread).
    pub fn create_with(path: &str, compression: Compression) -> Result<Self> {
        Self::create_in(path, compression, &RunContext::new())
    }

    /// [`OutputFile::create_with`] within the run `ctx`: gzip is compressed on its threads,
    /// which its metrics record.
    pub fn create_in(path: &str, compression: Compression, ctx: &RunContext) -> Result<Self> {
        let io_err = |e| Error::io(path, e);
        let buffered = |file| {
            Sink::File(BufWriter::with_capacity(WRITE_BUFFER, Interruptible::new(file, ctx.cancel_token().clone())))
        };
        let (sink, rename) = if path == "-" {
            match stdout_pipe() {
                Some(pipe) => (buffered(pipe), None),
                None => (Sink::Stdout(BufWriter::with_capacity(WRITE_BUFFER, io::stdout())), None),
            }
        } else {
            let (file, rename) = match target_of(path)? {
                Target::InPlace => (open_append(path, ctx.cancel_token()).map_err(io_err)?, None),
                Target::Replace { path: target, mode } => {
                    let (file, temp) = create_temporary(&target, mode).map_err(io_err)?;
                    (file, Some(Rename::new(temp, target)))
                }
            };
            (buffered(file), rename)
        };
        let writer = Encoder::new(sink, compression, ctx).map_err(io_err)?;
        Ok(OutputFile { path: path.to_string(), writer: Some(writer), rename, run: ctx.clone() })
    }

    /// The final path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Flushes and finishes compression, leaving the file under its temporary name for the
    /// caller to [`Staged::commit`] after its last checks.
    pub fn close(mut self) -> Result<Staged> {
        let path = self.path.clone();
        let io_err = |e| Error::io(&path, e);
        let writer = self.writer.take().ok_or_else(|| io_err(finished()))?;
        match writer.finish().map_err(io_err)? {
            Sink::Stdout(mut w) => w.flush().map_err(io_err)?,
            // Closed without fsync: the rename guards against a run that fails or is killed, as
            // every step of a pipeline needs; making the bytes durable is left to the system
            // (an fsync of a 400 MB table doubled the time to save it).
            Sink::File(w) => drop(w.into_inner().map_err(|e| io_err(e.into_error()))?),
        }
        Ok(Staged { path: self.path.clone(), rename: self.rename.take(), run: Some(self.run.clone()) })
    }

    /// Flushes, finishes compression and renames the temporary file to its final name.
    pub fn finish(self) -> Result<()> {
        self.close()?.commit()
    }
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        // The encoder's own drop may flush into the file; the temporary goes after it.
        drop(self.writer.take());
        drop(self.rename.take());
    }
}

fn finished() -> io::Error {
    io::Error::other("output already finished")
}

impl OutputFile {
    /// The writer, once the run is known not to be cancelled: a write that compresses (or
    /// fills a buffer) without reaching the file for a long time, such as a large table saved
    /// with gzip, still stops soon after a signal, and the temporary goes with the run.
    fn live_writer(&mut self) -> io::Result<&mut Encoder<Sink>> {
        if self.run.cancel_token().is_cancelled() {
            return Err(super::interruptible::cancelled());
        }
        self.writer.as_mut().ok_or_else(finished)
    }
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.live_writer()?.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.live_writer()?.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.writer.as_mut().ok_or_else(finished)?.flush()
    }
}

/// Appends `rec` to `out` as khmer writes it: FASTQ `@name\nseq\n+\nqual\n`, FASTA
/// `>name\nseq\n` (one line).
pub fn write_record(out: &mut Vec<u8>, rec: &Record<'_>) {
    match rec.qual {
        Some(q) => {
            out.push(b'@');
            out.extend_from_slice(rec.name);
            out.push(b'\n');
            out.extend_from_slice(rec.seq);
            out.extend_from_slice(b"\n+\n");
            out.extend_from_slice(q);
            out.push(b'\n');
        }
        None => {
            out.push(b'>');
            out.extend_from_slice(rec.name);
            out.push(b'\n');
            out.extend_from_slice(rec.seq);
            out.push(b'\n');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::fastx::for_each_record;
    use std::io::Read;

    fn records() -> Vec<u8> {
        let mut out = Vec::new();
        write_record(&mut out, &Record { name: b"a 1:N", seq: b"ACGT", qual: Some(b"IIII") });
        write_record(&mut out, &Record { name: b"b", seq: b"GG", qual: Some(b"##") });
        out
    }

    #[test]
    fn writes_atomically_and_round_trips_every_compression() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["out.fq", "out.fq.gz", "out.fq.bz2", "out.fq.xz", "out.fq.zst"] {
            let path = dir.path().join(name);
            let path = path.to_str().unwrap();
            let mut out = OutputFile::create(path).unwrap();
            out.write_all(&records()).unwrap();
            assert!(!Path::new(path).exists(), "{name} visible before finish");
            out.finish().unwrap();
            let mut text = Vec::new();
            let n = for_each_record(path, &RunContext::new(), |r| {
                write_record(&mut text, &r);
                Ok(())
            })
            .unwrap();
            assert_eq!((n, text), (2, records()), "{name}");
        }
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left.len(), 5, "no temporary files remain: {left:?}");
    }

    #[test]
    fn gz_output_is_compressed_in_parallel_with_several_threads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.fq.gz");
        let text = records().repeat(50_000);
        let ctx = RunContext::new().threads_set_to(3);
        let mut out = OutputFile::create_in(path.to_str().unwrap(), Compression::Gzip, &ctx).unwrap();
        for piece in text.chunks(100_003) {
            out.write_all(piece).unwrap();
        }
        out.finish().unwrap();
        let gz = std::fs::read(&path).unwrap();
        assert!(crate::io::bgzf::is_bgzf(&gz), "BGZF members");
        let mut back = Vec::new();
        flate2::read::MultiGzDecoder::new(&gz[..]).read_to_end(&mut back).unwrap();
        assert!(back == text, "decompresses to the bytes written");
    }

    #[test]
    fn explicit_compression_ignores_the_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.fq");
        let mut out = OutputFile::create_with(path.to_str().unwrap(), Compression::Gzip).unwrap();
        out.write_all(&records()).unwrap();
        out.finish().unwrap();
        assert_eq!(&std::fs::read(&path).unwrap()[..2], &[0x1f, 0x8b]);
    }

    #[test]
    fn dropping_unfinished_removes_the_temporary() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.fa");
        let out = one_record_output(&path);
        drop(out);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    /// An output at `path` with one record written, not yet finished.
    fn one_record_output(path: &Path) -> OutputFile {
        let mut out = OutputFile::create(path.to_str().unwrap()).unwrap();
        out.write_all(b">a\nAC\n").unwrap();
        out
    }

    /// The names in `dir`.
    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        names
    }

    /// A file `name` in `dir` holding `text`, with the permissions `mode`.
    fn file_with_mode(dir: &Path, name: &str, text: &str, mode: u32) -> std::path::PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    fn write_whole(path: &Path, bytes: &[u8]) -> Result<()> {
        let mut out = OutputFile::create(path.to_str().unwrap())?;
        out.write_all(bytes).map_err(|e| Error::io("test", e))?;
        out.finish()
    }

    #[test]
    fn a_fifo_is_written_in_place_and_stays_a_fifo() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = crate::io::test_fifo(dir.path(), "out.fa");
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        write_whole(&fifo, b">a\nACGT\n").unwrap();
        assert_eq!(reader.join().unwrap(), b">a\nACGT\n");
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
        assert_eq!(names(dir.path()), ["out.fa"]);
    }

    #[test]
    fn a_full_device_is_an_error_naming_it() {
        let err = write_whole(Path::new("/dev/full"), &[b'A'; 10]).unwrap_err();
        assert!(err.to_string().starts_with("/dev/full: "), "{err}");
        assert!(matches!(&err, Error::Io { source, .. } if source.raw_os_error() == Some(libc::ENOSPC)), "{err}");
        assert!(std::fs::metadata("/dev/full").unwrap().file_type().is_char_device());
    }

    #[test]
    fn a_write_protected_target_is_refused_and_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let path = file_with_mode(dir.path(), "out.fa", "keep me", 0o402);
        let err = OutputFile::create(path.to_str().unwrap()).err().unwrap().to_string();
        assert!(err.contains("out.fa: Permission denied"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), b"keep me");
        assert_eq!(names(dir.path()), ["out.fa"]);
    }

    #[test]
    fn a_replaced_file_keeps_its_mode_and_a_link_to_it_stays_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let real = file_with_mode(dir.path(), "real.fa", "old", 0o640);
        let link = dir.path().join("link.fa");
        std::os::unix::fs::symlink("real.fa", &link).unwrap();
        write_whole(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(&real).unwrap(), b"new");
        assert_eq!(std::fs::metadata(&real).unwrap().permissions().mode() & 0o7777, 0o640);
        assert_eq!(names(dir.path()), ["link.fa", "real.fa"]);
    }

    #[test]
    fn a_link_planted_at_a_temporary_name_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let planted = dir.path().join(format!(".out.fa.tmp-{}", std::process::id()));
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        let path = dir.path().join("out.fa");
        write_whole(&path, b">a\nAC\n").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert!(std::fs::symlink_metadata(&path).unwrap().file_type().is_file());
        assert_eq!(std::fs::read(&path).unwrap(), b">a\nAC\n");
        assert!(std::fs::symlink_metadata(&planted).unwrap().file_type().is_symlink(), "left alone");
    }

    #[test]
    fn stale_temporaries_of_dead_processes_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let stale = dir.path().join(format!(".out.fa.tmp-{dead}-AbC123xy"));
        let alive = dir.path().join(format!(".out.fa.tmp-{}-other", std::process::id()));
        std::fs::write(&stale, "half").unwrap();
        std::fs::write(&alive, "in use").unwrap();
        write_whole(&dir.path().join("out.fa"), b"x").unwrap();
        assert!(!stale.exists() && alive.exists(), "{:?}", names(dir.path()));
    }

    #[test]
    fn a_closed_output_appears_only_when_committed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.fa");
        let out = one_record_output(&path);
        let staged = out.close().unwrap();
        assert!(!path.exists());
        drop(staged);
        assert!(names(dir.path()).is_empty(), "dropped uncommitted: removed");
        let out = one_record_output(&path);
        out.close().unwrap().commit().unwrap();
        assert_eq!(names(dir.path()), ["out.fa"]);
    }

    #[test]
    fn a_regular_file_under_dev_is_replaced_not_appended() {
        let Ok(dir) = tempfile::tempdir_in("/dev/shm") else { return };
        let path = dir.path().join("out.fa");
        write_whole(&path, b"first").unwrap();
        write_whole(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
    }

    #[test]
    fn a_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = OutputFile::create(dir.path().to_str().unwrap()).err().unwrap().to_string();
        assert!(err.contains("Is a directory"), "{err}");
    }

    #[test]
    fn missing_directory_is_an_error_naming_the_file() {
        let err = OutputFile::create("/nonexistent/dir/out.fa").err().unwrap();
        assert!(err.to_string().starts_with("/nonexistent/dir/out.fa: "), "{err}");
    }
}
