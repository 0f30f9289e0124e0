//! The record scanner behind [`super::FastxReader`]: finds complete FASTA/FASTQ records in a
//! buffer and records them as byte offsets.
//!
//! Whitespace follows screed (what khmer's Python scripts read with): header, sequence and
//! quality lines (FASTQ ones possibly wrapped, as screed reads them) are stripped of surrounding
//! ASCII whitespace (so CRLF files work), FASTA names are stripped on both sides and FASTQ names
//! at the end only, blank lines inside a FASTA sequence are ignored. Unlike screed, blank lines between records are skipped in FASTQ too
//! (screed silently stops reading there).

use super::fastx::Format;
use crate::{Error, Result};
use memchr::memchr;

/// Offsets of one record inside its batch buffer; the qualities (FASTQ only) have the
/// sequence's length.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Span {
    pub name: (usize, usize),
    pub seq: (usize, usize),
    pub qual_start: usize,
    /// 1-based line of the record's header in its file.
    pub line: u64,
}

/// One complete record found by the scanner: its span, the offset just past it and the number
/// of lines it spans.
type Scanned = (Span, usize, u64);

/// The scanner's place in the file: the number of the next record and the line at the scan
/// position. It only advances over complete records.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Position {
    pub record: u64,
    pub line: u64,
}

/// Whitespace as Python's `str.strip()` sees it in ASCII.
pub(crate) fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn trim_end(buf: &[u8], start: usize, mut end: usize) -> usize {
    while end > start && is_space(buf[end - 1]) {
        end -= 1;
    }
    end
}

fn trim(buf: &[u8], mut start: usize, end: usize) -> (usize, usize) {
    let end = trim_end(buf, start, end);
    while start < end && is_space(buf[start]) {
        start += 1;
    }
    (start, end)
}

/// A line looked up at some offset.
enum Line {
    /// Content end (excluding `\n`) and the next line's start.
    Full(usize, usize),
    /// The buffer ends before the line does (more input may follow).
    Incomplete,
    /// The input ended before this line started.
    Missing,
}

fn line_at(buf: &[u8], start: usize, eof: bool) -> Line {
    match memchr(b'\n', &buf[start.min(buf.len())..]) {
        Some(i) => Line::Full(start + i, start + i + 1),
        None if !eof => Line::Incomplete,
        None if start < buf.len() => Line::Full(buf.len(), buf.len()),
        None => Line::Missing,
    }
}

/// Scans records of one file.
pub(crate) struct Scanner<'a> {
    pub path: &'a str,
    pub format: Format,
}

impl Scanner<'_> {
    fn error(&self, record: u64, line: u64, message: impl Into<String>) -> Error {
        Error::format(self.path, Some(record), Some(line), message)
    }

    /// Appends every complete record of `buf[start..]` to `spans` and returns the offset where
    /// the unparsed rest begins. With `eof`, the buffer ends the input and all of it must
    /// parse. Multi-line FASTA sequences are joined in place inside `buf`.
    pub fn scan(
        &self,
        buf: &mut [u8],
        mut start: usize,
        eof: bool,
        pos: &mut Position,
        spans: &mut Vec<Span>,
    ) -> Result<usize> {
        loop {
            while start < buf.len() && is_space(buf[start]) {
                pos.line += u64::from(buf[start] == b'\n');
                start += 1;
            }
            if start == buf.len() {
                return Ok(start);
            }
            let found = match self.format {
                Format::Fastq => self.fastq_record(buf, start, eof, pos)?,
                Format::Fasta => self.fasta_record(buf, start, eof, pos)?,
            };
            let Some((span, end, lines)) = found else {
                return Ok(start);
            };
            spans.push(span);
            pos.record += 1;
            pos.line += lines;
            start = end;
        }
    }

    /// The header line of the record at `start` (a non-blank byte), which must begin with
    /// `marker` (`@` for `format` FASTQ, `>` for FASTA): its content end and the next line's
    /// start, or `None` when the buffer ends inside it.
    fn header_line(
        &self,
        buf: &[u8],
        start: usize,
        eof: bool,
        pos: &Position,
        marker: u8,
        format: &str,
    ) -> Result<Option<(usize, usize)>> {
        if buf[start] != marker {
            return Err(self.error(
                pos.record,
                pos.line,
                format!("expected {} at the start of a {format} record, found {}", show(marker), show(buf[start])),
            ));
        }
        match line_at(buf, start, eof) {
            Line::Full(end, next) => Ok(Some((end, next))),
            Line::Incomplete => Ok(None),
            Line::Missing => unreachable!("a line starting at an existing byte is never missing"),
        }
    }

    /// One FASTQ record at `start` (a non-blank byte): its span, end and line count. As in
    /// screed and khmer's C++ parser, sequence and quality may be wrapped over several lines:
    /// sequence lines run up to the `+` line, quality lines until they hold as many characters
    /// as the sequence. Nothing is rewritten until the record is complete.
    fn fastq_record(&self, buf: &mut [u8], start: usize, eof: bool, pos: &Position) -> Result<Option<Scanned>> {
        let Some((header_end, mut at)) = self.header_line(buf, start, eof, pos, b'@', "FASTQ")? else {
            return Ok(None);
        };
        let truncated = |line: u64, what: &str| {
            self.error(pos.record, pos.line + line, format!("truncated record at end of input: missing {what}"))
        };
        let mut lines = 1;
        // Sequence lines, up to the '+' line.
        let seq_start = at;
        let (mut seq, mut seq_lines, mut seq_len) = ((at, at), 0, 0);
        let plus_start = loop {
            let (end, next) = match line_at(buf, at, eof) {
                Line::Full(end, next) => (end, next),
                Line::Incomplete => return Ok(None),
                Line::Missing => {
                    return Err(truncated(lines, if seq_lines == 0 { "sequence line" } else { "'+' line" }))
                }
            };
            let line = trim(buf, at, end);
            match buf[line.0..line.1].first() {
                Some(b'+') | None if seq_lines == 0 => {
                    return Err(self.error(pos.record, pos.line + 1, "Sequence is empty"));
                }
                Some(b'+') => break at,
                None | Some(b'@') => return Err(self.error(pos.record, pos.line + lines, "missing '+' line")),
                Some(_) => {}
            }
            (seq, seq_lines, seq_len) = (line, seq_lines + 1, seq_len + line.1 - line.0);
            lines += 1;
            at = next;
        };
        at = match line_at(buf, plus_start, eof) {
            Line::Full(_, next) => next,
            Line::Incomplete => return Ok(None),
            Line::Missing => unreachable!("the '+' line was found"),
        };
        lines += 1;
        // Quality lines, until they are as long as the sequence.
        let qual_start = at;
        let (mut qual, mut qual_lines, mut qual_len) = ((at, at), 0, 0);
        while qual_len < seq_len {
            let (end, next) = match line_at(buf, at, eof) {
                Line::Full(end, next) => (end, next),
                Line::Incomplete => return Ok(None),
                Line::Missing if qual_lines == 0 => return Err(truncated(lines, "quality line")),
                Line::Missing => break,
            };
            let line = trim(buf, at, end);
            if line.0 == line.1 {
                break;
            }
            (qual, qual_lines, qual_len) = (line, qual_lines + 1, qual_len + line.1 - line.0);
            lines += 1;
            at = next;
        }
        if qual_len != seq_len {
            return Err(self.error(
                pos.record,
                pos.line + lines - 1,
                format!("sequence and quality lengths differ ({seq_len} vs {qual_len})"),
            ));
        }
        if seq_lines > 1 {
            seq = join_lines(buf, seq_start, plus_start);
        }
        if qual_lines > 1 {
            qual = join_lines(buf, qual_start, at);
        }
        let name = (start + 1, trim_end(buf, start + 1, header_end));
        for (range, offset, what, text) in
            [(name, 0, "name", true), (seq, 1, "sequence", false), (qual, seq_lines + 2, "quality", false)]
        {
            if let Some(b) = first_invalid(&buf[range.0..range.1], text) {
                return Err(self.error(pos.record, pos.line + offset, invalid_byte(b, what)));
            }
        }
        let span = Span { name, seq, qual_start: qual.0, line: pos.line };
        Ok(Some((span, at, lines)))
    }

    /// One FASTA record at `start` (a non-blank byte): its span, end and line count. The
    /// record ends before the next line starting with `>`, so without `eof` the buffer's last
    /// record is incomplete. A sequence line starting with `@` (FASTQ records after FASTA ones)
    /// is an error naming its line.
    fn fasta_record(&self, buf: &mut [u8], start: usize, eof: bool, pos: &Position) -> Result<Option<Scanned>> {
        let Some((header_end, body)) = self.header_line(buf, start, eof, pos, b'>', "FASTA")? else {
            return Ok(None);
        };
        // Find the record's end first: nothing is rewritten until the record is complete.
        let mut lines = 1;
        let mut body_lines = 0;
        let mut single = (body, body);
        let mut at = body;
        while at < buf.len() && buf[at] != b'>' {
            match line_at(buf, at, eof) {
                Line::Full(end, next) => {
                    if buf[at] == b'@' {
                        // A FASTQ header: glued into the sequence, it would corrupt it silently.
                        let line = pos.line + 1 + body_lines;
                        return Err(self.error(pos.record, line, "a FASTQ record ('@' line) in a FASTA file"));
                    }
                    single = (at, end);
                    body_lines += 1;
                    lines += u64::from(end < buf.len());
                    at = next;
                }
                Line::Incomplete => return Ok(None),
                Line::Missing => break,
            }
        }
        if at == buf.len() && !eof {
            return Ok(None);
        }
        let name = trim(buf, start + 1, header_end);
        if let Some(b) = first_invalid(&buf[name.0..name.1], true) {
            return Err(self.error(pos.record, pos.line, invalid_byte(b, "name")));
        }
        if let Some(b) = first_invalid(&buf[body..at], false) {
            let offset = buf[body..at].iter().position(|&x| x == b).expect("found above");
            let line = pos.line + 1 + memchr::memchr_iter(b'\n', &buf[body..body + offset]).count() as u64;
            return Err(self.error(pos.record, line, invalid_byte(b, "sequence")));
        }
        let seq = if body_lines == 1 { trim(buf, single.0, single.1) } else { join_lines(buf, body, at) };
        if seq.0 == seq.1 {
            return Err(self.error(pos.record, pos.line, "Sequence is empty"));
        }
        let span = Span { name, seq, qual_start: 0, line: pos.line };
        Ok(Some((span, at, lines)))
    }
}

/// Joins the stripped lines of `buf[start..end]` in place at `start`; returns the joined range.
fn join_lines(buf: &mut [u8], start: usize, end: usize) -> (usize, usize) {
    let mut write = start;
    let mut at = start;
    while at < end {
        let line_end = memchr(b'\n', &buf[at..end]).map_or(end, |i| at + i);
        let (a, b) = trim(buf, at, line_end);
        buf.copy_within(a..b, write);
        write += b - a;
        at = line_end + 1;
    }
    (start, write)
}

/// The first byte of `bytes` that no FASTA/FASTQ text holds: a control character other than
/// whitespace (NUL bytes of a zero-filled file, UTF-16 text), DEL, and, unless `text` (names,
/// which may be in any 8-bit encoding), a byte above ASCII. The check runs over every byte, so
/// it is written to vectorise: a branch-free pass, then a search only when something was found.
fn first_invalid(bytes: &[u8], text: bool) -> Option<u8> {
    let invalid = |b: u8| (b < 0x20 && !is_space(b)) || b == 0x7f || (!text && b > 0x7f);
    if bytes.iter().fold(false, |found, &b| found | invalid(b)) {
        bytes.iter().copied().find(|&b| invalid(b))
    } else {
        None
    }
}

fn invalid_byte(b: u8, what: &str) -> String {
    format!("invalid byte {} in the {what} (not a text character: a damaged or non-ASCII file?)", show(b))
}

/// A byte as it should appear in a message.
pub(crate) fn show(b: u8) -> String {
    format!("'{}'", b.escape_ascii())
}
