//! Compression: detection by magic bytes on input, choice by file extension on output.
//!
//! Output levels favour speed, since outputs usually feed further pipeline steps: gzip level 3
//! (zlib-rs), bzip2 level 9 (the block size; bzip2 speed barely depends on it), xz level 3 and
//! zstd level 3. The same levels apply whether the compression comes from the name's extension
//! or from an explicit `--gzip`/`--bzip`.

use super::bgzf::{self, BgzfWriter};
use super::gzip::GzipMembers;
use super::interruptible::{self, is_cancelled, Interruptible};
use super::pump::advise_sequential;
use crate::run::metrics::InputCounters;
use crate::run::RunContext;
use crate::{Error, Result};
use std::io::{self, Cursor, Read, Write};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A compression format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Uncompressed.
    None,
    /// gzip, including multi-member and BGZF files.
    Gzip,
    /// bzip2 (possibly multi-stream).
    Bzip2,
    /// xz / LZMA2.
    Xz,
    /// Zstandard.
    Zstd,
}

/// Bytes read to recognise every format and a BGZF header.
const MAGIC_LEN: usize = bgzf::HEADER_LEN;

impl Compression {
    /// Detects the compression from the first bytes of a stream (at least 6 bytes when the
    /// stream is that long).
    pub fn sniff(magic: &[u8]) -> Self {
        if magic.starts_with(&[0x1f, 0x8b]) {
            Compression::Gzip
        } else if magic.starts_with(b"BZh") {
            Compression::Bzip2
        } else if magic.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]) {
            Compression::Xz
        } else if magic.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Compression::Zstd
        } else {
            Compression::None
        }
    }

    /// The compression named by an output file's extension: `.gz`, `.bz2`, `.xz`, `.zst`;
    /// anything else is [`Compression::None`].
    pub fn from_path(path: &str) -> Self {
        let ext = path.rsplit_once('.').map_or("", |(_, ext)| ext);
        match ext {
            "gz" => Compression::Gzip,
            "bz2" => Compression::Bzip2,
            "xz" => Compression::Xz,
            "zst" => Compression::Zstd,
            _ => Compression::None,
        }
    }

    /// A short name for messages.
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "plain",
            Compression::Gzip => "gzip",
            Compression::Bzip2 => "bzip2",
            Compression::Xz => "xz",
            Compression::Zstd => "zstd",
        }
    }
}

/// Opens `path` (`-` = stdin) and returns the decompressed byte stream, the compression being
/// detected from magic bytes. Errors name the path. Opening a FIFO and every wait for the
/// bytes of a FIFO, terminal or stdin (the compression sniff included) give up once the run is
/// cancelled ([`super::interruptible`]). BGZF files are decompressed in parallel on
/// the threads of `ctx`, whose metrics and progress count the bytes read.
pub fn open_input(path: &str, ctx: &RunContext) -> Result<Box<dyn Read + Send>> {
    open_counted(path, ctx).map(|(r, _)| r)
}

/// [`open_input`], also returning the input's counters in the run's metrics (the bytes read
/// from the file are counted there and in the run's progress).
pub(crate) fn open_counted(path: &str, ctx: &RunContext) -> Result<(Box<dyn Read + Send>, Arc<InputCounters>)> {
    let counters = ctx.metrics().register_input();
    let file = if path == "-" { interruptible::stdin_file() } else { interruptible::open_read(path) };
    let file = file.map_err(|e| Error::io(path, e))?;
    advise_sequential(&file);
    let size = (path != "-").then(|| file.metadata().ok().filter(|m| m.is_file()).map(|m| m.len())).flatten();
    let file: Box<dyn Read + Send> = Box::new(Interruptible::new(file, ctx.cancel_token().clone()));
    if let Some(size) = size {
        ctx.progress().add_input_size(size);
    }
    let mut raw: Box<dyn Read + Send> = Box::new(Counted { inner: file, counters: counters.clone(), ctx: ctx.clone() });
    let mut magic = [0u8; MAGIC_LEN];
    let n = read_up_to(&mut raw, &mut magic).map_err(|e| Error::io(path, e))?;
    let compression = Compression::sniff(&magic[..n]);
    let parallel = compression == Compression::Gzip && bgzf::is_bgzf(&magic[..n]);
    let kind = if parallel { "bgzf" } else { compression.name() };
    counters.describe(path, kind, size);
    ctx.files().add_input(path, size, kind);
    let stream = Cursor::new(magic[..n].to_vec()).chain(raw);
    // The decoders read through their own buffer; wrapping the raw file in a large BufReader
    // keeps system calls few.
    let buffered = io::BufReader::with_capacity(1 << 20, stream);
    let decoded: Box<dyn Read + Send> = match compression {
        Compression::None => return Ok((Box::new(buffered), counters)),
        Compression::Gzip if parallel => bgzf::decoder(Box::new(buffered), path, ctx),
        Compression::Gzip => Box::new(GzipMembers::new(buffered, path, ctx)),
        Compression::Bzip2 => Box::new(bzip2::bufread::MultiBzDecoder::new(buffered)),
        Compression::Xz => Box::new(liblzma::bufread::XzDecoder::new_multi_decoder(buffered)),
        Compression::Zstd => {
            Box::new(zstd::stream::read::Decoder::with_buffer(buffered).map_err(|e| read_error(path, e))?)
        }
    };
    Ok((Box::new(Corruption { inner: decoded, compression }), counters))
}

/// The raw file under the decoders, counting the bytes read from it.
struct Counted {
    inner: Box<dyn Read + Send>,
    counters: Arc<InputCounters>,
    ctx: RunContext,
}

impl Read for Counted {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.counters.compressed.fetch_add(n as u64, Ordering::Relaxed);
        self.ctx.progress().add_read(n as u64);
        Ok(n)
    }
}

/// Reads until `buf` is full or the stream ends; returns the number of bytes read.
pub(crate) fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    match read_until_error(r, buf) {
        (n, None) => Ok(n),
        (_, Some(e)) => Err(e),
    }
}

/// Reads until `buf` is full, the stream ends or a read fails; returns the number of bytes
/// read (valid even when followed by the error).
pub(crate) fn read_until_error(r: &mut impl Read, buf: &mut [u8]) -> (usize, Option<io::Error>) {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted && !is_cancelled(&e) => {}
            Err(e) => return (n, Some(e)),
        }
    }
    (n, None)
}

/// Rewords decoder errors so that a truncated or corrupt stream says so. Errors of the
/// decoder itself (no OS error number) become [`io::ErrorKind::InvalidData`], which
/// [`read_error`] reports as a format error; OS errors of the underlying file pass unchanged.
struct Corruption<R> {
    inner: R,
    compression: Compression,
}

impl<R: Read> Read for Corruption<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf).map_err(|e| {
            if e.kind() == io::ErrorKind::Interrupted || e.raw_os_error().is_some() || is_cancelled(&e) {
                return e;
            }
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("truncated or corrupt {} data ({e})", self.compression.name()),
            )
        })
    }
}

/// The error for a failed read of input `path`: corrupt data (`InvalidData`) is a format
/// error, a read given up because the run was cancelled is [`Error::Cancelled`], anything else
/// an I/O error.
pub(crate) fn read_error(path: &str, e: io::Error) -> Error {
    if e.kind() == io::ErrorKind::InvalidData {
        Error::format(path, None, None, e.to_string())
    } else {
        Error::io(path, e)
    }
}

/// A compressing writer whose end can be checked (see [`Encoder::finish`]).
pub(crate) enum Encoder<W: Write> {
    Plain(W),
    Gzip(flate2::write::GzEncoder<W>),
    Bzip2(bzip2::write::BzEncoder<W>),
    Xz(liblzma::write::XzEncoder<W>),
    Zstd(zstd::stream::write::Encoder<'static, W>),
    /// gzip compressed in parallel (BGZF), when the run has more than one thread.
    Bgzf(BgzfWriter<W>),
}

impl<W: Write> Encoder<W> {
    /// Wraps `inner` for `compression`, compressing gzip on the threads of `ctx`.
    pub(crate) fn new(inner: W, compression: Compression, ctx: &RunContext) -> io::Result<Self> {
        Ok(match compression {
            Compression::None => Encoder::Plain(inner),
            Compression::Gzip if ctx.threads() > 1 => Encoder::Bgzf(BgzfWriter::new(inner, ctx)?),
            Compression::Gzip => Encoder::Gzip(flate2::write::GzEncoder::new(inner, flate2::Compression::new(3))),
            Compression::Bzip2 => Encoder::Bzip2(bzip2::write::BzEncoder::new(inner, bzip2::Compression::best())),
            Compression::Xz => Encoder::Xz(liblzma::write::XzEncoder::new(inner, 3)),
            Compression::Zstd => Encoder::Zstd(zstd::stream::write::Encoder::new(inner, 3)?),
        })
    }

    /// Writes the compressed stream's end and returns the inner writer (not flushed).
    pub(crate) fn finish(self) -> io::Result<W> {
        match self {
            Encoder::Plain(w) => Ok(w),
            Encoder::Gzip(e) => e.finish(),
            Encoder::Bzip2(e) => e.finish(),
            Encoder::Xz(e) => e.finish(),
            Encoder::Zstd(e) => e.finish(),
            Encoder::Bgzf(e) => e.finish(),
        }
    }

    fn writer(&mut self) -> &mut dyn Write {
        match self {
            Encoder::Plain(w) => w,
            Encoder::Gzip(e) => e,
            Encoder::Bzip2(e) => e,
            Encoder::Xz(e) => e,
            Encoder::Zstd(e) => e,
            Encoder::Bgzf(e) => e,
        }
    }
}

impl<W: Write> Write for Encoder<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writer().write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.writer().write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.writer().flush()
    }
}

/// A boxed encoder that completes its stream when dropped (errors at that point are lost;
/// [`super::OutputFile`] finishes explicitly instead).
struct FinishOnDrop<W: Write>(Option<Encoder<W>>);

impl<W: Write> Write for FinishOnDrop<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.as_mut().map_or(Ok(0), |e| e.write(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.as_mut().map_or(Ok(()), Encoder::flush)
    }
}

impl<W: Write> Drop for FinishOnDrop<W> {
    fn drop(&mut self) {
        if let Some(e) = self.0.take() {
            if let Ok(mut w) = e.finish() {
                let _ = w.flush();
            }
        }
    }
}

/// Wraps `inner` in an encoder for `compression` (fast levels suited to pipelines; one
/// thread); the compressed stream is completed when the returned writer is dropped.
pub fn encoder(inner: Box<dyn Write + Send>, compression: Compression) -> io::Result<Box<dyn Write + Send>> {
    Ok(Box::new(FinishOnDrop(Some(Encoder::new(inner, compression, &RunContext::new())?))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::File;

    #[test]
    fn sniffs_magic_bytes() {
        assert_eq!(Compression::sniff(&[0x1f, 0x8b, 8, 0, 0, 0]), Compression::Gzip);
        assert_eq!(Compression::sniff(b"BZh91AY"), Compression::Bzip2);
        assert_eq!(Compression::sniff(&[0xfd, b'7', b'z', b'X', b'Z', 0]), Compression::Xz);
        assert_eq!(Compression::sniff(&[0x28, 0xb5, 0x2f, 0xfd, 0, 0]), Compression::Zstd);
        assert_eq!(Compression::sniff(b">read\nACGT"), Compression::None);
        assert_eq!(Compression::sniff(b""), Compression::None);
    }

    #[test]
    fn corrupt_stream_is_a_format_error_and_os_errors_stay_io() {
        let mut gz = Vec::new();
        let mut enc = flate2::write::GzEncoder::new(&mut gz, flate2::Compression::fast());
        enc.write_all(b"@r\nACGT\n+\nIIII\n").unwrap();
        enc.finish().unwrap();
        let path = std::env::temp_dir().join(format!("kmerflow-trunc-{}.gz", std::process::id()));
        std::fs::write(&path, &gz[..gz.len() - 6]).unwrap();
        let name = path.to_str().unwrap();
        let mut out = Vec::new();
        let err = open_input(name, &RunContext::new()).unwrap().read_to_end(&mut out).unwrap_err();
        std::fs::remove_file(&path).unwrap();
        let err = read_error(name, err);
        assert!(matches!(err, Error::Format { .. }), "{err:?}");
        assert!(err.to_string().starts_with(&format!("{name}: truncated or corrupt gzip")), "{err}");

        let os = io::Error::from_raw_os_error(libc::EIO);
        assert!(matches!(read_error(name, os), Error::Io { .. }));
    }

    #[test]
    fn compression_from_extension() {
        assert_eq!(Compression::from_path("a/out.fq.gz"), Compression::Gzip);
        assert_eq!(Compression::from_path("out.bz2"), Compression::Bzip2);
        assert_eq!(Compression::from_path("out.xz"), Compression::Xz);
        assert_eq!(Compression::from_path("out.zst"), Compression::Zstd);
        assert_eq!(Compression::from_path("out.fa"), Compression::None);
        assert_eq!(Compression::from_path("-"), Compression::None);
    }

    #[test]
    fn boxed_encoder_round_trips_every_format() {
        for c in [Compression::Gzip, Compression::Bzip2, Compression::Xz, Compression::Zstd] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("x");
            let file = File::create(&path).unwrap();
            let mut w = encoder(Box::new(file), c).unwrap();
            w.write_all(b">a\nACGT\n").unwrap();
            drop(w);
            let mut text = String::new();
            open_input(path.to_str().unwrap(), &RunContext::new()).unwrap().read_to_string(&mut text).unwrap();
            assert_eq!(text, ">a\nACGT\n", "{c:?}");
        }
    }

    #[test]
    fn the_run_counts_the_bytes_of_a_compressed_input() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("in.fq.gz");
        let text = b"@r1\nACGT\n+\nIIII\n@r2\nGG\n+\nII\n".repeat(1000);
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(&text).unwrap();
        let gz = enc.finish().unwrap();
        std::fs::write(&path, &gz).unwrap();
        let name = path.to_str().unwrap();
        let ctx = RunContext::new();
        let mut reader = crate::io::FastxReader::open_in(name, &ctx).unwrap();
        while reader.next_batch().unwrap().is_some() {}
        drop(reader);
        let snapshot = ctx.progress().snapshot();
        assert_eq!((snapshot.read, snapshot.total), (gz.len() as u64, gz.len() as u64));
        let Some(report) = ctx.metrics().report() else { return };
        let input = report["inputs"].as_array().unwrap().iter().find(|i| i["path"] == name).cloned().unwrap();
        assert_eq!(input["compression"], "gzip");
        assert_eq!(input["bytes_compressed"], gz.len() as u64);
        assert_eq!(input["bytes_decompressed"], text.len() as u64);
        assert!(input["reader_thread"]["busy_s"].as_f64().unwrap() > 0.0);
    }

    #[test]
    fn a_cancelled_run_stops_waiting_on_a_stalled_input() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = crate::io::test_fifo(dir.path(), "stalled");
        // A writer that sends one record and then stalls, holding the FIFO open.
        let writer = {
            let fifo = fifo.clone();
            std::thread::spawn(move || {
                let mut w = File::options().write(true).open(&fifo).unwrap();
                w.write_all(b"@r\nACGTACGTACGT\n+\nIIIIIIIIIIII\n").unwrap();
                std::thread::sleep(std::time::Duration::from_secs(3));
            })
        };
        let ctx = RunContext::new();
        let canceller = {
            let ctx = ctx.clone();
            std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(300));
                ctx.cancel();
            })
        };
        let started = std::time::Instant::now();
        let err = crate::io::FastxReader::open_in(fifo.to_str().unwrap(), &ctx).err().unwrap();
        assert!(err.is_cancelled(), "{err}");
        assert!(started.elapsed() < std::time::Duration::from_secs(2), "{:?}", started.elapsed());
        canceller.join().unwrap();
        writer.join().unwrap();
    }
}
