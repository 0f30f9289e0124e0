//! Output files written atomically, and khmer's record formatting.

use super::compress::{Compression, Encoder};
use super::fastx::Record;
use crate::run::RunContext;
use crate::{Error, Result};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// Buffer size between the (compressing) writer and the file or stdout.
const WRITE_BUFFER: usize = 1 << 20;

/// The destination under the encoder.
enum Sink {
    File(BufWriter<File>),
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

/// An output destination: a file written under a temporary name in the same directory and
/// renamed on [`OutputFile::finish`] (dropped unfinished, the temporary is removed), or stdout
/// for `-`. Compression is chosen by the caller or, by default, by the name's extension (levels:
/// see [`super::compress`]). Writing to a closed stdout pipe fails with
/// [`io::ErrorKind::BrokenPipe`] (see [`Error::is_broken_pipe`]).
pub struct OutputFile {
    path: String,
    /// `None` once finished.
    writer: Option<Encoder<Sink>>,
    /// The temporary file, for files.
    temp: Option<PathBuf>,
}

/// `dir/.name.tmp-PID` for `dir/name`.
fn temp_path(path: &Path) -> PathBuf {
    let name = path.file_name().map_or_else(Default::default, |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
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
        let (sink, temp) = if path == "-" {
            (Sink::Stdout(BufWriter::with_capacity(WRITE_BUFFER, io::stdout())), None)
        } else {
            let temp = temp_path(Path::new(path));
            let file = File::create(&temp).map_err(|e| Error::io(path, e))?;
            (Sink::File(BufWriter::with_capacity(WRITE_BUFFER, file)), Some(temp))
        };
        let mut out = OutputFile { path: path.to_string(), writer: None, temp };
        out.writer = Some(Encoder::new(sink, compression, ctx).map_err(|e| Error::io(path, e))?);
        Ok(out)
    }

    /// The final path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Flushes, finishes compression and renames the temporary file to its final name.
    pub fn finish(mut self) -> Result<()> {
        let path = self.path.clone();
        let io_err = |e| Error::io(&path, e);
        let Some(writer) = self.writer.take() else {
            return Ok(());
        };
        match writer.finish().map_err(io_err)? {
            Sink::Stdout(mut w) => w.flush().map_err(io_err),
            Sink::File(w) => {
                // Closed without fsync: the rename guards against a run that fails or is
                // killed, as every step of a pipeline needs; making the bytes durable is left
                // to the system (an fsync of a 400 MB table doubled the time to save it).
                drop(w.into_inner().map_err(|e| io_err(e.into_error()))?);
                if let Some(temp) = self.temp.take() {
                    if let Err(e) = std::fs::rename(&temp, &self.path) {
                        let _ = std::fs::remove_file(&temp);
                        return Err(io_err(e));
                    }
                }
                Ok(())
            }
        }
    }
}

impl Drop for OutputFile {
    fn drop(&mut self) {
        drop(self.writer.take());
        if let Some(temp) = self.temp.take() {
            let _ = std::fs::remove_file(temp);
        }
    }
}

fn finished() -> io::Error {
    io::Error::other("output already finished")
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writer.as_mut().ok_or_else(finished)?.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.writer.as_mut().ok_or_else(finished)?.write_all(buf)
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
        let mut out = OutputFile::create(path.to_str().unwrap()).unwrap();
        out.write_all(b">a\nAC\n").unwrap();
        drop(out);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn missing_directory_is_an_error_naming_the_file() {
        let err = OutputFile::create("/nonexistent/dir/out.fa").err().unwrap();
        assert!(err.to_string().starts_with("/nonexistent/dir/out.fa: "), "{err}");
    }
}
