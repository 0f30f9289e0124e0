//! BGZF: gzip made of small independent members, each announcing its size (the `BC` extra
//! field), so that members can be decompressed, and compressed, in parallel.
//!
//! * [`is_bgzf`] recognises a BGZF member header; [`decoder`] then decompresses the stream
//!   on the run's threads ([`RunContext::threads`]), member groups in parallel with libdeflate, in
//!   order, through [`crate::pipeline::run_ordered_as`].
//! * [`BgzfWriter`] is the parallel `.gz` writer: it cuts its input into blocks of
//!   [`BLOCK_INPUT`] bytes, compresses groups of blocks on worker threads and writes the
//!   members in order, ending with the standard empty end-of-file member. Any gzip reader
//!   decompresses the result (a multi-member gzip file) to exactly the bytes written.

use crate::pipeline::run_ordered_as;
use crate::run::metrics::{self, PipelineMetrics, StageMetrics};
use crate::run::RunContext;
use crate::{Error, Result};
use crossbeam_channel::{bounded, Receiver, Sender};
use std::collections::BTreeMap;
use std::io::{self, Read, Write};

/// Length of a BGZF member header (the gzip header with the 6-byte `BC` extra field).
pub const HEADER_LEN: usize = 18;
/// Length of the member trailer (CRC32 and ISIZE).
const TRAILER_LEN: usize = 8;
/// Uncompressed bytes per written block, so that even incompressible data fits the 16-bit size.
pub const BLOCK_INPUT: usize = 0xff00;
/// Blocks per parallel job (about 1 MiB of uncompressed data).
const BLOCKS_PER_JOB: usize = 16;
/// The empty member that ends a BGZF file.
const EOF_MEMBER: [u8; 28] =
    [0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 0xff, 6, 0, b'B', b'C', 2, 0, 0x1b, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0];
/// gzip output level (a fast one, as for streaming gzip).
const LEVEL: i32 = 3;

/// True when `header` starts a BGZF member: gzip, deflate, an extra field of 6 bytes holding
/// the `BC` subfield.
pub fn is_bgzf(header: &[u8]) -> bool {
    header.len() >= HEADER_LEN && header[..4] == [0x1f, 0x8b, 8, 4] && header[10..16] == [6, 0, b'B', b'C', 2, 0]
}

/// What [`read_member`] found next in the stream.
enum Next {
    /// One whole BGZF member, header included.
    Member(Vec<u8>),
    /// A gzip member without the BGZF size field (plain gzip appended to a BGZF file); its
    /// first bytes, already read, are kept so that a sequential decoder can start there.
    Plain(Vec<u8>),
    /// The end of the stream.
    End,
}

/// Reads the next member from `r`.
fn read_member(r: &mut impl Read, path: &str) -> Result<Next> {
    let mut member = vec![0u8; HEADER_LEN];
    let n = super::compress::read_up_to(r, &mut member).map_err(|e| Error::io(path, e))?;
    if n == 0 {
        return Ok(Next::End);
    }
    if !is_bgzf(&member[..n]) {
        member.truncate(n);
        return Ok(Next::Plain(member));
    }
    let size = usize::from(u16::from_le_bytes([member[16], member[17]])) + 1;
    if size < HEADER_LEN + TRAILER_LEN {
        return Err(corrupt("a BGZF block size too small"));
    }
    member.resize(size, 0);
    let n = super::compress::read_up_to(r, &mut member[HEADER_LEN..]).map_err(|e| Error::io(path, e))?;
    if n < size - HEADER_LEN {
        return Err(corrupt("a truncated BGZF block"));
    }
    Ok(Next::Member(member))
}

/// A corrupt-data error; the caller's [`super::compress`] layer adds the file name and says
/// the gzip data is corrupt.
fn corrupt(what: &str) -> Error {
    Error::invalid(what)
}

/// Groups of whole BGZF members read from `r`. They end at the end of the stream or at the
/// first member that is not BGZF, whose bytes already read are then left in `plain`.
fn member_groups<'a, R: Read + Send>(
    r: &'a mut R,
    path: &'a str,
    plain: &'a mut Option<Vec<u8>>,
) -> impl Iterator<Item = Result<Vec<Vec<u8>>>> + Send + 'a {
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        let mut group = Vec::with_capacity(BLOCKS_PER_JOB);
        while group.len() < BLOCKS_PER_JOB {
            match read_member(r, path) {
                Ok(Next::Member(m)) => group.push(m),
                Ok(next) => {
                    if let Next::Plain(start) = next {
                        *plain = Some(start);
                    }
                    done = true;
                    break;
                }
                Err(e) => {
                    done = true;
                    return Some(Err(e));
                }
            }
        }
        (!group.is_empty()).then_some(Ok(group))
    })
}

/// Decompresses a group of members into one buffer, checking each member's CRC and size.
fn decode_group(d: &mut libdeflater::Decompressor, group: &[Vec<u8>]) -> Result<Vec<u8>> {
    let total: usize = group.iter().map(|m| trailer_u32(m, 4) as usize).sum();
    let mut out = vec![0u8; total];
    let mut at = 0;
    for m in group {
        let size = trailer_u32(m, 4) as usize;
        let data = &m[HEADER_LEN..m.len() - TRAILER_LEN];
        let dest = &mut out[at..at + size];
        match d.deflate_decompress(data, dest) {
            Ok(n) if n == size && libdeflater::crc32(dest) == trailer_u32(m, 0) => {}
            _ => return Err(corrupt("a BGZF block fails to decompress or its CRC differs")),
        }
        at += size;
    }
    Ok(out)
}

/// The little-endian u32 at `offset` within the member's 8-byte trailer.
fn trailer_u32(member: &[u8], offset: usize) -> u32 {
    let t = member.len() - TRAILER_LEN + offset;
    u32::from_le_bytes([member[t], member[t + 1], member[t + 2], member[t + 3]])
}

/// A decompressed BGZF stream over `raw` (positioned at a member start), decompressed on
/// the threads of `ctx` in a background pipeline. Should plain gzip members follow the BGZF ones
/// (files concatenated with `cat`), the rest of the stream is decompressed sequentially.
pub fn decoder(mut raw: Box<dyn Read + Send>, path: &str, ctx: &RunContext) -> Box<dyn Read + Send> {
    let (tx, rx) = bounded::<io::Result<Vec<u8>>>(2);
    let path = path.to_string();
    let ctx = ctx.clone();
    let spawned = std::thread::Builder::new().name("kmerflow-bgzf".into()).spawn({
        let tx = tx.clone();
        move || {
            let mut plain = None;
            let groups = member_groups(&mut raw, &path, &mut plain);
            let make = || {
                let mut d = libdeflater::Decompressor::new();
                move |group: Vec<Vec<u8>>| decode_group(&mut d, &group)
            };
            let sent = |out: Vec<u8>| tx.send(Ok(out)).map_err(|_| Error::invalid("reader gone"));
            let result =
                run_ordered_as(&ctx, "bgzf-decompress", groups, ctx.threads(), make, sent).and_then(|_| match plain {
                    Some(start) => decode_plain(io::Cursor::new(start).chain(raw), &path, &ctx, &tx),
                    None => Ok(()),
                });
            if let Err(e) = result {
                let _ = tx.send(Err(io::Error::new(io::ErrorKind::InvalidData, e.to_string())));
            }
        }
    });
    if let Err(e) = spawned {
        let _ = tx.send(Err(e));
    }
    Box::new(ChunkReader { chunks: rx, current: Vec::new(), at: 0 })
}

/// Decompresses the gzip members of `rest` one after another (zero padding at the end ignored
/// with a warning, as for plain gzip files), sending the output in chunks.
fn decode_plain(rest: impl Read, path: &str, ctx: &RunContext, tx: &Sender<io::Result<Vec<u8>>>) -> Result<()> {
    let mut gz = super::gzip::GzipMembers::new(io::BufReader::new(rest), path, ctx);
    loop {
        let mut chunk = vec![0u8; BLOCK_INPUT * BLOCKS_PER_JOB];
        let n = super::compress::read_up_to(&mut gz, &mut chunk).map_err(|e| Error::invalid(e.to_string()))?;
        if n == 0 {
            return Ok(());
        }
        chunk.truncate(n);
        tx.send(Ok(chunk)).map_err(|_| Error::invalid("reader gone"))?;
    }
}

/// A `Read` over decompressed chunks arriving on a channel.
struct ChunkReader {
    chunks: Receiver<io::Result<Vec<u8>>>,
    current: Vec<u8>,
    at: usize,
}

impl Read for ChunkReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.current.len() {
            match self.chunks.recv() {
                Ok(chunk) => {
                    self.current = chunk?;
                    self.at = 0;
                }
                Err(_) => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len() - self.at);
        buf[..n].copy_from_slice(&self.current[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Compresses `data` into BGZF members of at most [`BLOCK_INPUT`] input bytes each.
fn encode_job(c: &mut libdeflater::Compressor, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() / 2 + 64);
    for block in data.chunks(BLOCK_INPUT) {
        let start = out.len();
        out.extend_from_slice(&EOF_MEMBER[..HEADER_LEN]);
        let bound = c.deflate_compress_bound(block.len());
        out.resize(start + HEADER_LEN + bound, 0);
        let n = c
            .deflate_compress(block, &mut out[start + HEADER_LEN..])
            .expect("the output buffer holds the compression bound");
        out.truncate(start + HEADER_LEN + n);
        out.extend_from_slice(&libdeflater::crc32(block).to_le_bytes());
        out.extend_from_slice(&(block.len() as u32).to_le_bytes());
        let bsize = (out.len() - start - 1) as u16;
        out[start + 16..start + 18].copy_from_slice(&bsize.to_le_bytes());
    }
    out
}

/// A compressed job on its way back from a worker.
type Done = (u64, Vec<u8>, usize, StageMetrics);

/// The parallel BGZF (`.gz`) writer; see the [module documentation](self). Call
/// [`BgzfWriter::finish`] to write the last blocks and the end-of-file member.
pub struct BgzfWriter<W: Write> {
    inner: W,
    buf: Vec<u8>,
    jobs: Option<Sender<(u64, Vec<u8>)>>,
    done: Receiver<Done>,
    workers: Vec<std::thread::JoinHandle<()>>,
    waiting: BTreeMap<u64, Vec<u8>>,
    sent: u64,
    written: u64,
    metrics: PipelineMetrics,
    ctx: RunContext,
    #[cfg(feature = "metrics")]
    started: std::time::Instant,
}

impl<W: Write> BgzfWriter<W> {
    /// A writer compressing into `inner` on the threads of `ctx` (which records its metrics).
    pub fn new(inner: W, ctx: &RunContext) -> io::Result<Self> {
        let threads = ctx.threads();
        let (jobs, job_rx) = bounded::<(u64, Vec<u8>)>(threads);
        let (done_tx, done) = bounded::<Done>(2 * threads);
        let workers = (0..threads)
            .map(|index| {
                let (job_rx, done_tx) = (job_rx.clone(), done_tx.clone());
                std::thread::Builder::new().name("kmerflow-gzip".into()).spawn(move || {
                    compress_jobs(index, &job_rx, &done_tx);
                })
            })
            .collect::<io::Result<Vec<_>>>()?;
        Ok(BgzfWriter {
            inner,
            buf: Vec::with_capacity(BLOCK_INPUT * BLOCKS_PER_JOB),
            jobs: Some(jobs),
            done,
            workers,
            waiting: BTreeMap::new(),
            sent: 0,
            written: 0,
            metrics: PipelineMetrics::new(threads),
            ctx: ctx.clone(),
            #[cfg(feature = "metrics")]
            started: std::time::Instant::now(),
        })
    }

    /// Hands the buffered input to the workers, first writing finished jobs while too many
    /// are in flight.
    fn send_buffer(&mut self) -> io::Result<()> {
        let limit = 2 * self.workers.len() as u64;
        while self.sent - self.written >= limit {
            self.receive_one()?;
        }
        let data = std::mem::replace(&mut self.buf, Vec::with_capacity(BLOCK_INPUT * BLOCKS_PER_JOB));
        self.metrics.reader.count_bytes(data.len());
        let jobs = self.jobs.as_ref().ok_or_else(gone)?;
        self.metrics.reader.time_wait(|| jobs.send((self.sent, data))).map_err(|_| gone())?;
        self.sent += 1;
        Ok(())
    }

    /// Waits for one compressed job and writes every job that is next in order.
    fn receive_one(&mut self) -> io::Result<()> {
        let (seq, data, worker, stage) = self.metrics.sink.time_wait(|| self.done.recv()).map_err(|_| gone())?;
        self.metrics.workers[worker].add(&stage);
        self.waiting.insert(seq, data);
        while let Some(data) = self.waiting.remove(&self.written) {
            self.metrics.sink.count_bytes(data.len());
            self.metrics.sink.time_busy(|| self.inner.write_all(&data))?;
            self.written += 1;
        }
        Ok(())
    }

    /// Compresses and writes everything, writes the end-of-file member and returns the
    /// inner writer (not flushed).
    pub fn finish(mut self) -> io::Result<W> {
        if !self.buf.is_empty() {
            self.send_buffer()?;
        }
        while self.written < self.sent {
            self.receive_one()?;
        }
        self.inner.write_all(&EOF_MEMBER)?;
        self.jobs = None;
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
        #[cfg(feature = "metrics")]
        {
            self.metrics.wall = self.started.elapsed();
        }
        self.ctx.metrics().record_pipeline("gzip-compress", &self.metrics);
        Ok(self.inner)
    }
}

fn gone() -> io::Error {
    io::Error::other("the gzip compression threads stopped")
}

/// Compression worker `index`: compresses jobs until the job channel closes.
fn compress_jobs(index: usize, jobs: &Receiver<(u64, Vec<u8>)>, done: &Sender<Done>) {
    let mut c = libdeflater::Compressor::new(libdeflater::CompressionLvl::new(LEVEL).expect("level 3 is valid"));
    while let Ok((seq, data)) = jobs.recv() {
        let mut m = StageMetrics::default();
        let cpu = metrics::thread_cpu_time();
        m.count_bytes(data.len());
        let out = m.time_busy(|| encode_job(&mut c, &data));
        m.set_cpu_since(cpu);
        if done.send((seq, out, index, m)).is_err() {
            return;
        }
    }
}

impl<W: Write> Write for BgzfWriter<W> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let room = BLOCK_INPUT * BLOCKS_PER_JOB - self.buf.len();
        let n = data.len().min(room);
        self.buf.extend_from_slice(&data[..n]);
        if self.buf.len() == BLOCK_INPUT * BLOCKS_PER_JOB {
            self.send_buffer()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pseudo-random FASTQ-like bytes: compressible but not trivially.
    fn sample(n: usize) -> Vec<u8> {
        let mut x = 12345u64;
        (0..n)
            .map(|i| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                if i % 101 == 100 {
                    b'\n'
                } else {
                    b"ACGT"[(x >> 60) as usize & 3]
                }
            })
            .collect()
    }

    fn bgzf(data: &[u8], threads: usize) -> Vec<u8> {
        let mut w = BgzfWriter::new(Vec::new(), &RunContext::new().threads_set_to(threads)).unwrap();
        for piece in data.chunks(7777) {
            w.write_all(piece).unwrap();
        }
        w.finish().unwrap()
    }

    #[test]
    fn writer_output_is_bgzf_that_any_gzip_reader_decodes() {
        let data = sample(3 * BLOCK_INPUT * BLOCKS_PER_JOB + 12345);
        for threads in [1, 3] {
            let gz = bgzf(&data, threads);
            assert!(is_bgzf(&gz));
            assert!(gz.ends_with(&EOF_MEMBER));
            let mut back = Vec::new();
            flate2::read::MultiGzDecoder::new(&gz[..]).read_to_end(&mut back).unwrap();
            assert_eq!(back, data, "threads = {threads}");
        }
        assert_eq!(bgzf(&data, 1), bgzf(&data, 4), "output independent of thread count");
        assert_eq!(bgzf(b"", 2), EOF_MEMBER);
    }

    #[test]
    fn parallel_decoder_round_trips_and_checks_crcs() {
        let data = sample(2 * BLOCK_INPUT * BLOCKS_PER_JOB + 999);
        let gz = bgzf(&data, 2);
        for threads in [1, 2, 4] {
            let mut back = Vec::new();
            decoder(Box::new(io::Cursor::new(gz.clone())), "x.gz", &RunContext::new().threads_set_to(threads))
                .read_to_end(&mut back)
                .unwrap();
            assert_eq!(back, data, "threads = {threads}");
        }
        let mut bad = gz.clone();
        bad[HEADER_LEN + 100] ^= 0x55;
        let err = decoder(Box::new(io::Cursor::new(bad)), "x.gz", &RunContext::new().threads_set_to(2))
            .read_to_end(&mut Vec::new())
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("CRC"), "{err}");
        let cut = gz[..gz.len() - 40].to_vec();
        let err = decoder(Box::new(io::Cursor::new(cut)), "x.gz", &RunContext::new().threads_set_to(2))
            .read_to_end(&mut Vec::new())
            .unwrap_err();
        assert!(err.to_string().contains("truncated BGZF block"), "{err}");
    }

    #[test]
    fn plain_gzip_members_after_bgzf_ones_are_decoded_in_order() {
        let (first, second) = (sample(BLOCK_INPUT * BLOCKS_PER_JOB + 4321), sample(300_000));
        let mut plain = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        plain.write_all(&second).unwrap();
        let plain = plain.finish().unwrap();
        let mut joined = bgzf(&first, 2);
        joined.extend_from_slice(&plain);
        joined.extend_from_slice(&plain);
        for threads in [1, 2] {
            let mut back = Vec::new();
            decoder(Box::new(io::Cursor::new(joined.clone())), "x.gz", &RunContext::new().threads_set_to(threads))
                .read_to_end(&mut back)
                .unwrap();
            assert_eq!(back, [&first[..], &second, &second].concat(), "threads = {threads}");
        }
        let mut cut = bgzf(&first, 2);
        cut.extend_from_slice(&plain[..plain.len() - 20]);
        let err = decoder(Box::new(io::Cursor::new(cut)), "x.gz", &RunContext::new().threads_set_to(2))
            .read_to_end(&mut Vec::new())
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    }
}
