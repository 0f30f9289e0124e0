//! FASTA/FASTQ parsing over chunks: records are borrowed slices, not per-record allocations.

use super::compress::{open_counted, read_error};
use super::limits;
use super::parse::{is_space, show, Position, Scanner, Span};
use super::pump::Pump;
use crate::run::RunContext;
use crate::{Error, Result};
use crossbeam_channel::Sender;

/// The sequence file format, detected from the first non-blank byte (`>` or `@`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// FASTA (`>`), sequences possibly spread over several lines.
    Fasta,
    /// FASTQ (`@`), four lines per record.
    Fastq,
}

/// One sequence record borrowed from a [`RecordBatch`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    /// The whole header line after `>`/`@` (comment included), without the line end.
    pub name: &'a [u8],
    /// The sequence as in the file (multi-line FASTA joined; case and `N`s preserved).
    pub seq: &'a [u8],
    /// FASTQ qualities (same length as `seq`); `None` for FASTA.
    pub qual: Option<&'a [u8]>,
}

impl Record<'_> {
    /// Copies the record into an owned one.
    pub fn to_owned_record(&self) -> OwnedRecord {
        OwnedRecord { name: self.name.to_vec(), seq: self.seq.to_vec(), qual: self.qual.map(<[u8]>::to_vec) }
    }
}

/// An owned record, for the few places that must keep a record beyond its batch.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OwnedRecord {
    /// Header line without `>`/`@`.
    pub name: Vec<u8>,
    /// Sequence.
    pub seq: Vec<u8>,
    /// Qualities for FASTQ.
    pub qual: Option<Vec<u8>>,
}

impl OwnedRecord {
    /// Borrows the record.
    pub fn as_record(&self) -> Record<'_> {
        Record { name: &self.name, seq: &self.seq, qual: self.qual.as_deref() }
    }
}

/// A batch of consecutive records sharing one buffer; records are offsets into it. Dropping a
/// batch hands its buffer back to the reader thread for reuse.
pub struct RecordBatch {
    buf: Vec<u8>,
    spans: Vec<Span>,
    first_record: u64,
    format: Format,
    recycle: Option<Sender<Vec<u8>>>,
}

impl Default for RecordBatch {
    fn default() -> Self {
        RecordBatch::empty(Format::Fasta, 1)
    }
}

impl std::fmt::Debug for RecordBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordBatch")
            .field("format", &self.format)
            .field("first_record", &self.first_record)
            .field("len", &self.spans.len())
            .finish()
    }
}

impl Drop for RecordBatch {
    fn drop(&mut self) {
        if let Some(tx) = &self.recycle {
            let _ = tx.try_send(std::mem::take(&mut self.buf));
        }
    }
}

impl RecordBatch {
    /// Number of records in the batch.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// True when the batch has no records.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `i`-th record of the batch.
    pub fn get(&self, i: usize) -> Record<'_> {
        let s = &self.spans[i];
        let seq = &self.buf[s.seq.0..s.seq.1];
        Record {
            name: &self.buf[s.name.0..s.name.1],
            seq,
            qual: match self.format {
                Format::Fastq => Some(&self.buf[s.qual_start..s.qual_start + seq.len()]),
                Format::Fasta => None,
            },
        }
    }

    /// The records in file order.
    pub fn iter(&self) -> impl Iterator<Item = Record<'_>> + '_ {
        (0..self.len()).map(move |i| self.get(i))
    }

    /// 1-based number (within its file) of the batch's first record.
    pub fn first_record_number(&self) -> u64 {
        self.first_record
    }

    /// 1-based line (within its file) of the `i`-th record's header.
    pub fn line_of(&self, i: usize) -> u64 {
        self.spans[i].line
    }

    /// The format of the records.
    pub fn format(&self) -> Format {
        self.format
    }

    /// A batch without records whose first record will be number `first_record`.
    pub(crate) fn empty(format: Format, first_record: u64) -> Self {
        RecordBatch { buf: Vec::new(), spans: Vec::new(), first_record, format, recycle: None }
    }

    /// Appends a copy of `rec` (which came from line `line` of its file).
    pub(crate) fn push(&mut self, rec: &Record<'_>, line: u64) {
        let span = self.append_bytes(rec, line);
        self.spans.push(span);
    }

    /// Inserts a copy of `rec`, the record just before this batch's first one, at the front.
    pub(crate) fn prepend(&mut self, rec: &Record<'_>, line: u64) {
        let span = self.append_bytes(rec, line);
        self.spans.insert(0, span);
        self.first_record -= 1;
    }

    /// Removes the last record and returns a copy of it with its line.
    pub(crate) fn pop_last(&mut self) -> Option<(OwnedRecord, u64)> {
        let last = self.len().checked_sub(1)?;
        let owned = (self.get(last).to_owned_record(), self.spans[last].line);
        self.spans.pop();
        Some(owned)
    }

    /// Copies the bytes of `rec` to the end of the buffer and returns their span.
    fn append_bytes(&mut self, rec: &Record<'_>, line: u64) -> Span {
        let name_start = self.buf.len();
        self.buf.extend_from_slice(rec.name);
        let seq_start = self.buf.len();
        self.buf.extend_from_slice(rec.seq);
        let qual_start = self.buf.len();
        if let Some(q) = rec.qual {
            self.buf.extend_from_slice(q);
        }
        Span { name: (name_start, seq_start), seq: (seq_start, qual_start), qual_start, line }
    }
}

/// A streaming FASTA/FASTQ reader yielding [`RecordBatch`]es of about 1 MiB of input.
///
/// Each batch owns one chunk from the [`Pump`]; a record cut by the chunk's end is completed by
/// appending the few bytes it needs from the next chunk, whose batch then starts after them.
pub struct FastxReader {
    path: String,
    pump: Pump,
    format: Format,
    /// The chunk being cut into batches and the offset of its unparsed part.
    pending: Option<(Vec<u8>, usize)>,
    pos: Position,
    recycle: Sender<Vec<u8>>,
    /// The longest record accepted, in bytes ([`limits::max_record_bytes`]).
    max_record: u64,
}

impl FastxReader {
    /// Opens `path` (`-` = stdin) outside any run (one thread, its own metrics, its messages
    /// dropped). Compression is sniffed from magic bytes and the format from the content.
    pub fn open(path: &str) -> Result<Self> {
        Self::open_in(path, &RunContext::new())
    }

    /// [`FastxReader::open`] within the run `ctx`: its threads decompress BGZF, its metrics and
    /// progress count the bytes, and waiting for input ends with [`Error::Cancelled`] once it
    /// is cancelled. An input that is empty after decompression (or only whitespace) has no
    /// records: a warning naming the file goes to `ctx`, as khmer prints one, and the run goes on.
    pub fn open_in(path: &str, ctx: &RunContext) -> Result<Self> {
        let (input, counters) = open_counted(path, ctx)?;
        Self::start(path, Pump::spawn_counted(input, counters, ctx.cancel_token().clone()), ctx)
    }

    /// Reads the records of `input`, an already decompressed stream that messages call
    /// `path`, cut into chunks of `chunk_size` bytes, outside any run: the records are the same
    /// for any chunk size, and small ones put chunk boundaries inside records (tests, fuzzing).
    pub fn from_stream(path: &str, input: Box<dyn std::io::Read + Send>, chunk_size: usize) -> Result<Self> {
        let pump = Pump::spawn_sized(input, Default::default(), chunk_size, Default::default());
        Self::start(path, pump, &RunContext::new())
    }

    /// Detects the format from the first non-blank byte the pump delivers; the empty-input
    /// warning goes to `ctx`.
    fn start(path: &str, mut pump: Pump, ctx: &RunContext) -> Result<Self> {
        let max_record = limits::max_record_bytes()?;
        let mut line = 1;
        loop {
            let Some(chunk) = pump.next_chunk().map_err(|e| read_error_at(path, e, Position { record: 1, line }))?
            else {
                ctx.warning(format!("WARNING: {path} is empty (no records)"));
                let recycle = pump.recycler();
                let pos = Position { record: 1, line };
                return Ok(FastxReader {
                    path: path.to_string(),
                    pump,
                    format: Format::Fasta,
                    pending: None,
                    pos,
                    recycle,
                    max_record,
                });
            };
            let first = chunk.iter().position(|&b| !is_space(b));
            let skipped = first.unwrap_or(chunk.len());
            line += memchr::memchr_iter(b'\n', &chunk[..skipped]).count() as u64;
            let Some(first) = first else { continue };
            let format = match chunk[first] {
                b'>' => Format::Fasta,
                b'@' => Format::Fastq,
                other => {
                    return Err(Error::format(
                        path,
                        None,
                        Some(line),
                        format!("not a FASTA or FASTQ file: starts with {} instead of '>' or '@'", show(other)),
                    ))
                }
            };
            let recycle = pump.recycler();
            return Ok(FastxReader {
                path: path.to_string(),
                pump,
                format,
                pending: Some((chunk, first)),
                pos: Position { record: 1, line },
                recycle,
                max_record,
            });
        }
    }

    /// The path as given to [`FastxReader::open`].
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The format detected from the content.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The next batch, `None` at the end of the input. Malformed records are errors naming the
    /// file, the record number and the line.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            let (mut buf, start) = match self.pending.take() {
                Some(pending) => pending,
                None => match self.fetch()? {
                    Some(chunk) => (chunk, 0),
                    None => return Ok(None),
                },
            };
            let first_record = self.pos.record;
            let mut spans = Vec::with_capacity(buf.len() / 256);
            let end = self.scan(&mut buf, start, false, &mut spans)?;
            if end < buf.len() {
                self.complete_tail(&mut buf, end, &mut spans)?;
            }
            if spans.is_empty() {
                let _ = self.recycle.try_send(buf);
                continue;
            }
            return Ok(Some(RecordBatch {
                buf,
                spans,
                first_record,
                format: self.format,
                recycle: Some(self.recycle.clone()),
            }));
        }
    }

    /// Scans `buf[start..]` from the reader's current position (see [`Scanner::scan`]).
    fn scan(&mut self, buf: &mut [u8], start: usize, eof: bool, spans: &mut Vec<Span>) -> Result<usize> {
        let scanner = Scanner { path: &self.path, format: self.format };
        scanner.scan(buf, start, eof, &mut self.pos, spans)
    }

    /// The next chunk. Corrupt data found while reading it is reported at the record being
    /// read (the first one not complete before the damage).
    fn fetch(&mut self) -> Result<Option<Vec<u8>>> {
        let pos = self.pos;
        self.pump.next_chunk().map_err(|e| read_error_at(&self.path, e, pos))
    }

    /// Completes the record cut at `buf[end..]` with the start of the following chunk(s),
    /// scanning it into `spans`; the rest of the last chunk used becomes `pending`.
    fn complete_tail(&mut self, buf: &mut Vec<u8>, mut end: usize, spans: &mut Vec<Span>) -> Result<()> {
        loop {
            let Some(next) = self.fetch()? else {
                self.scan(buf, end, true, spans)?;
                return Ok(());
            };
            let base = buf.len();
            match self.format {
                Format::Fasta => {
                    let cut = next_fasta_header(buf, &next);
                    self.check_length(base + cut.unwrap_or(next.len()) - end)?;
                    let Some(cut) = cut else {
                        self.append(buf, &next)?;
                        let _ = self.recycle.try_send(next);
                        continue;
                    };
                    self.append(buf, &next[..cut])?;
                    // The chunk continues with a header: the tail ends exactly here.
                    self.scan(buf, end, true, spans)?;
                    self.pending = Some((next, cut));
                    return Ok(());
                }
                Format::Fastq => {
                    // FASTQ records cannot be recognised from the middle, so lines are added
                    // one at a time until the cut record is complete. A piece without a line
                    // end cannot complete it: scanning only after line ends keeps a line
                    // longer than many chunks linear, not quadratic.
                    let mut taken = 0;
                    while taken < next.len() {
                        let line_end = memchr::memchr(b'\n', &next[taken..]).map_or(next.len(), |i| taken + i + 1);
                        self.append(buf, &next[taken..line_end])?;
                        taken = line_end;
                        if buf.last() != Some(&b'\n') {
                            self.check_length(buf.len() - end)?;
                            continue;
                        }
                        end = self.scan(buf, end, false, spans)?;
                        if end >= base {
                            buf.truncate(end);
                            self.pending = Some((next, end - base));
                            return Ok(());
                        }
                        self.check_length(buf.len() - end)?;
                    }
                    let _ = self.recycle.try_send(next);
                }
            }
        }
    }

    /// Appends `piece` to the record being assembled in `buf`; memory that cannot be had (a
    /// `ulimit -v` or cgroup limit below the record bound) is an error naming the record, not
    /// an abort.
    fn append(&self, buf: &mut Vec<u8>, piece: &[u8]) -> Result<()> {
        buf.try_reserve(piece.len()).map_err(|_| {
            Error::format(
                &self.path,
                Some(self.pos.record),
                Some(self.pos.line),
                format!(
                    "record too long to hold in memory ({} bytes so far; the record bound, {}, is {} bytes)",
                    buf.len(),
                    limits::MAX_RECORD_ENV,
                    self.max_record
                ),
            )
        })?;
        buf.extend_from_slice(piece);
        Ok(())
    }

    /// An error naming the record being assembled when its `len` bytes exceed the bound.
    fn check_length(&self, len: usize) -> Result<()> {
        if len as u64 <= self.max_record {
            return Ok(());
        }
        Err(Error::format(
            &self.path,
            Some(self.pos.record),
            Some(self.pos.line),
            format!(
                "record longer than {} bytes (the bound set by {}); is the file damaged?",
                self.max_record,
                limits::MAX_RECORD_ENV
            ),
        ))
    }
}

/// The error for a failed read of `path` while record `pos` was being read: corrupt data is
/// reported at that record and line, other errors (OS errors) as they are.
fn read_error_at(path: &str, e: std::io::Error, pos: Position) -> Error {
    match read_error(path, e) {
        Error::Format { location, message } => Error::format(location.path, Some(pos.record), Some(pos.line), message),
        other => other,
    }
}

/// Where `next` (the chunk after `prev`) has its first line starting with `>`.
fn next_fasta_header(prev: &[u8], next: &[u8]) -> Option<usize> {
    if prev.last() == Some(&b'\n') && next.first() == Some(&b'>') {
        return Some(0);
    }
    memchr::memmem::find(next, b"\n>").map(|i| i + 1)
}

/// Reads every record of `path` in order within the run `ctx` and calls `f` on each; returns
/// the number of records.
pub fn for_each_record(path: &str, ctx: &RunContext, mut f: impl FnMut(Record<'_>) -> Result<()>) -> Result<u64> {
    let mut reader = FastxReader::open_in(path, ctx)?;
    let mut n = 0;
    while let Some(batch) = reader.next_batch()? {
        for rec in batch.iter() {
            f(rec)?;
            n += 1;
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn write_temp(content: &[u8]) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(content).unwrap();
        f
    }

    fn read_all(path: &str) -> Result<Vec<OwnedRecord>> {
        let mut out = Vec::new();
        for_each_record(path, &RunContext::new(), |r| {
            out.push(r.to_owned_record());
            Ok(())
        })?;
        Ok(out)
    }

    fn parse(content: &[u8]) -> Result<Vec<OwnedRecord>> {
        let f = write_temp(content);
        read_all(f.path().to_str().unwrap())
    }

    fn error_text(content: &[u8]) -> String {
        let f = write_temp(content);
        let path = f.path().to_str().unwrap().to_string();
        let msg = read_all(&path).unwrap_err().to_string();
        assert!(msg.starts_with(&path), "{msg}");
        msg[path.len()..].to_string()
    }

    #[test]
    fn multi_line_fasta_is_joined_and_stripped() {
        let recs = parse(b"> r1 comment here \r\nACG \r\n\r\ntt\r\n>r2\nGG\n\n>r3\nC").unwrap();
        let got: Vec<_> = recs.iter().map(|r| (r.name.clone(), r.seq.clone(), r.qual.clone())).collect();
        assert_eq!(
            got,
            vec![
                (b"r1 comment here".to_vec(), b"ACGtt".to_vec(), None),
                (b"r2".to_vec(), b"GG".to_vec(), None),
                (b"r3".to_vec(), b"C".to_vec(), None),
            ]
        );
    }

    #[test]
    fn fastq_with_crlf_and_blank_lines() {
        let recs = parse(b"\n@a 1:N\r\nACGT\r\n+a\r\nIIII\r\n\n@b\nA\n+\n#").unwrap();
        assert_eq!(recs.len(), 2);
        assert_eq!(recs[0].name, b"a 1:N");
        assert_eq!(recs[0].seq, b"ACGT");
        assert_eq!(recs[0].qual.as_deref(), Some(&b"IIII"[..]));
        assert_eq!(recs[1].qual.as_deref(), Some(&b"#"[..]));
    }

    /// Wrapped FASTQ as screed reads it: sequence lines up to `+`, quality lines until they are
    /// as long (a quality line may start with `@`).
    #[test]
    fn wrapped_fastq_is_joined() {
        let recs = parse(b"@a\nACG\nTA\n+\n@II\nII\n@b\nGG\n+\n@I\n").unwrap();
        let got: Vec<_> = recs.iter().map(|r| (r.name.clone(), r.seq.clone(), r.qual.clone().unwrap())).collect();
        assert_eq!(
            got,
            vec![
                (b"a".to_vec(), b"ACGTA".to_vec(), b"@IIII".to_vec()),
                (b"b".to_vec(), b"GG".to_vec(), b"@I".to_vec())
            ]
        );
        assert_eq!(
            error_text(b"@a\nACG\nTA\n+\nIII\nIII\n"),
            ": record 1 (line 6): sequence and quality lengths differ (5 vs 6)"
        );
    }

    #[test]
    fn fastq_errors_name_record_and_line() {
        let ok = b"@a\nAC\n+\nII\n";
        let with = |tail: &[u8]| [&ok[..], tail].concat();
        assert_eq!(
            error_text(&with(b"@b\nACG\n+\nII\n")),
            ": record 2 (line 8): sequence and quality lengths differ (3 vs 2)"
        );
        assert_eq!(error_text(&with(b"@b\nAC\n@c\nAC\n+\nII\n")), ": record 2 (line 7): missing '+' line");
        assert_eq!(
            error_text(&with(b"@b\nAC\nII\nII\n")),
            ": record 2 (line 9): truncated record at end of input: missing '+' line"
        );
        assert_eq!(
            error_text(&with(b"b\nAC\n+\nII\n")),
            ": record 2 (line 5): expected '@' at the start of a FASTQ record, found 'b'"
        );
        assert_eq!(
            error_text(&with(b"@b\nAC\n")),
            ": record 2 (line 7): truncated record at end of input: missing '+' line"
        );
        assert_eq!(error_text(&with(b"@b\n\n+\n\n")), ": record 2 (line 6): Sequence is empty");
        assert_eq!(error_text(b">a\nAC\n>b\n>c\nA\n"), ": record 2 (line 3): Sequence is empty");
    }

    #[test]
    fn fastq_records_after_fasta_ones_are_refused_naming_the_line() {
        assert_eq!(
            error_text(b">a\nACGT\n>b\nAC\nGT\n@c\nACGT\n+\nIIII\n"),
            ": record 2 (line 6): a FASTQ record ('@' line) in a FASTA file"
        );
        assert_eq!(error_text(b">a\n@c\nACGT\n"), ": record 1 (line 2): a FASTQ record ('@' line) in a FASTA file");
    }

    #[test]
    fn garbage_and_empty_inputs_are_errors() {
        assert_eq!(
            error_text(b"\x00\x01binary"),
            ": line 1: not a FASTA or FASTQ file: starts with '\\x00' instead of '>' or '@'"
        );
        let missing = read_all("/nonexistent/x.fa").unwrap_err().to_string();
        assert!(missing.starts_with("/nonexistent/x.fa: "), "{missing}");
    }

    #[test]
    fn empty_inputs_have_no_records() {
        for content in [&b""[..], b"\n \n"] {
            assert_eq!(parse(content).unwrap(), vec![]);
        }
    }

    /// A record longer than the bound fails when it reaches the bound, naming its number and
    /// line, however its bytes are spread over lines.
    #[test]
    fn records_longer_than_the_bound_are_refused() {
        let chunk = crate::io::pump::CHUNK_SIZE;
        let long = vec![b'A'; 3 * chunk];
        let fasta = [&b">a\nAC\n>b\n"[..], &long, b"\n"].concat();
        let wrapped: Vec<u8> = long.chunks(70).flat_map(|l| [l, b"\n"].concat()).collect();
        let fastq = [&b"@a\nAC\n+\nII\n@b\n"[..], &long, b"\n+\n", &long, b"\n"].concat();
        for (content, line) in [(fasta.clone(), 3), ([&b">a\nAC\n>b\n"[..], &wrapped].concat(), 3), (fastq, 5)] {
            let f = write_temp(&content);
            let mut reader = FastxReader::open(f.path().to_str().unwrap()).unwrap();
            reader.max_record = 2 * chunk as u64;
            let err = std::iter::from_fn(|| reader.next_batch().transpose()).find_map(Result::err).unwrap();
            let expected = format!(": record 2 (line {line}): record longer than 2097152 bytes");
            assert!(err.to_string().contains(&expected), "{err}");
        }
        let f = write_temp(&fasta);
        let mut reader = FastxReader::open(f.path().to_str().unwrap()).unwrap();
        reader.max_record = 4 * chunk as u64;
        let records: usize = std::iter::from_fn(|| reader.next_batch().unwrap()).map(|b| b.len()).sum();
        assert_eq!(records, 2);
    }

    /// Records of every size straddle chunk boundaries somewhere in a few MiB of input.
    #[test]
    fn records_cut_by_chunk_ends_are_reassembled() {
        for fastq in [false, true] {
            let mut text = Vec::new();
            let mut expected = Vec::new();
            let mut i = 0usize;
            while text.len() < 3 * crate::io::pump::CHUNK_SIZE + 1000 {
                let len = 1 + (i * 7919) % 997;
                let seq: Vec<u8> = (0..len).map(|j| b"ACGT"[(i + j) % 4]).collect();
                if fastq {
                    text.extend_from_slice(format!("@r{i}\n").as_bytes());
                    text.extend_from_slice(&seq);
                    text.extend_from_slice(b"\n+\n");
                    text.extend(std::iter::repeat_n(b'I', len));
                    text.push(b'\n');
                } else {
                    text.extend_from_slice(format!(">r{i}\n").as_bytes());
                    for line in seq.chunks(60) {
                        text.extend_from_slice(line);
                        text.push(b'\n');
                    }
                }
                expected.push((format!("r{i}").into_bytes(), seq));
                i += 1;
            }
            let f = write_temp(&text);
            let mut reader = FastxReader::open(f.path().to_str().unwrap()).unwrap();
            let mut got = Vec::new();
            let mut batches = 0;
            while let Some(batch) = reader.next_batch().unwrap() {
                assert_eq!(batch.first_record_number(), got.len() as u64 + 1);
                got.extend(batch.iter().map(|r| (r.name.to_vec(), r.seq.to_vec())));
                batches += 1;
            }
            assert!(batches >= 3);
            assert_eq!(got, expected, "fastq={fastq}");
        }
    }

    /// A record longer than a chunk is one record.
    #[test]
    fn record_larger_than_a_chunk() {
        let seq = vec![b'A'; 3 * crate::io::pump::CHUNK_SIZE];
        let text = [&b">big\n"[..], &seq, b"\n>small\nC\n"].concat();
        let recs = parse(&text).unwrap();
        assert_eq!(recs.len(), 2);
        assert_eq!(recs[0].seq.len(), seq.len());
        assert_eq!(recs[1].seq, b"C");
    }

    /// Random bytes (also after a valid start) give records or an error, never a panic.
    #[test]
    fn random_input_never_panics() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
        let alphabet = b"@>+ACGT\n\r I#";
        for round in 0..500 {
            let len = rng.random_range(0..200);
            let mut text: Vec<u8> = (0..len)
                .map(|_| if round % 2 == 0 { alphabet[rng.random_range(0..alphabet.len())] } else { rng.random() })
                .collect();
            if round % 3 == 0 {
                text.splice(0..0, b"@a\nAC\n+\nII\n".iter().copied());
            }
            let _ = parse(&text);
        }
    }
}
