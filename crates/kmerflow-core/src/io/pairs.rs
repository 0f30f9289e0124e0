//! khmer's read-pair recognition and its "broken paired" reading semantics (docs/khmer-compat.md §4.0).

use super::fastx::{FastxReader, OwnedRecord, Record, RecordBatch};
use crate::{Error, Result};

/// Splits a name at its first whitespace run, like Python's `name.split(None, 1)`.
fn split_left_right(name: &[u8]) -> (&[u8], &[u8]) {
    let name = name.trim_ascii_start();
    match name.iter().position(|b| b.is_ascii_whitespace()) {
        Some(i) => (&name[..i], name[i..].trim_ascii_start()),
        None => (name, &[]),
    }
}

/// The text before the first `/`.
fn before_slash(s: &[u8]) -> &[u8] {
    s.split(|&b| b == b'/').next().unwrap_or(s)
}

/// The single-read rules for read `mate` (`b'1'` or `b'2'`).
fn check_is_mate(name: &[u8], mate: u8) -> bool {
    let (lhs, rhs) = split_left_right(name);
    let slash = [b'/', mate];
    lhs.ends_with(&slash) || rhs.starts_with(&[mate, b':']) || rhs.ends_with(&slash)
}

/// True when `name` is recognised as read 1 of a pair (`/1`, Casava 1.8 ` 1:`, SRA style).
pub fn check_is_left(name: &[u8]) -> bool {
    check_is_mate(name, b'1')
}

/// True when `name` is recognised as read 2 of a pair.
pub fn check_is_right(name: &[u8]) -> bool {
    check_is_mate(name, b'2')
}

/// khmer's `check_is_pair`: true when `r1` and `r2` are mates. Mixing a FASTA and a FASTQ record
/// is an error.
pub fn check_is_pair(r1: &Record<'_>, r2: &Record<'_>) -> Result<bool> {
    if r1.qual.is_some() != r2.qual.is_some() {
        return Err(Error::invalid("both records must be same type (FASTA or FASTQ)"));
    }
    let (lhs1, rhs1) = split_left_right(r1.name);
    let (lhs2, rhs2) = split_left_right(r2.name);
    let same_stem = |a: &[u8], b: &[u8]| {
        let (a, b) = (before_slash(a), before_slash(b));
        !a.is_empty() && a == b
    };
    // The rules are tried in order and the first whose shape matches decides.
    Ok(if lhs1.ends_with(b"/1") && lhs2.ends_with(b"/2") {
        same_stem(lhs1, lhs2)
    } else if lhs1 == lhs2 && rhs1.starts_with(b"1:") && rhs2.starts_with(b"2:") {
        true
    } else if lhs1 == lhs2 && rhs1.ends_with(b"/1") && rhs2.ends_with(b"/2") {
        same_stem(rhs1, rhs2)
    } else {
        false
    })
}

/// How consecutive records are grouped into bundles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairMode {
    /// Mates recognised by name form pairs, everything else is a single read (khmer default).
    BrokenPaired,
    /// Every record is a single read (`--force_single`).
    ForceSingle,
    /// Every record must be part of a pair; an orphan is an error (`-p`).
    RequirePaired,
}

/// One unit of work: a single read or a pair, as indices into the batch's records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bundle {
    /// Index of the (first) read.
    pub first: usize,
    /// Index of the mate, for pairs.
    pub second: Option<usize>,
}

/// A batch of records grouped into bundles; bundles never straddle batches.
#[derive(Debug)]
pub struct BundleBatch {
    /// The records.
    pub batch: RecordBatch,
    /// Bundles in input order. Records dropped for being shorter than `min_length` belong to no
    /// bundle.
    pub bundles: Vec<Bundle>,
    /// Records dropped in this batch for being shorter than `min_length`.
    pub n_short_dropped: u64,
}

/// Where the records come from (one value per reader, so variant sizes do not matter).
#[allow(clippy::large_enum_variant)]
enum Source {
    /// One (possibly interleaved) file, with the record left unpaired at the end of the
    /// previous batch (its number and line) waiting for its possible mate.
    One { reader: FastxReader, mode: PairMode, carried: Option<(OwnedRecord, u64, u64)> },
    /// Two files zipped record by record.
    Two(Zip),
}

/// Two files zipped record by record; each side keeps its current batch and the index of its
/// first unused record.
struct Zip {
    r1: FastxReader,
    r2: FastxReader,
    left: Option<(RecordBatch, usize)>,
    right: Option<(RecordBatch, usize)>,
    /// Whether record i of both files must be mates by name ([`are_mates`]).
    check_names: bool,
    /// Every record is its own bundle (`--force_single`), in the interleaved order.
    single: bool,
}

/// Groups records of one interleaved file, or of two files (R1 + R2), into bundles.
pub struct PairedReader {
    source: Source,
    /// Reads shorter than this are dropped (0: none).
    min_length: usize,
}

/// The batches of bundles of [`PairedReader::next_batch`].
impl Iterator for PairedReader {
    type Item = Result<BundleBatch>;

    fn next(&mut self) -> Option<Result<BundleBatch>> {
        self.next_batch().transpose()
    }
}

impl PairedReader {
    /// khmer's `broken_paired_reader` over one file, with reads shorter than `min_length`
    /// dropped exactly as khmer drops them.
    pub fn new(reader: FastxReader, mode: PairMode, min_length: Option<usize>) -> Self {
        PairedReader { source: Source::One { reader, mode, carried: None }, min_length: min_length.unwrap_or(0) }
    }

    /// Pairs record i of `r1` with record i of `r2`; unequal record counts are an error naming
    /// both files and the first record without a mate. Names are not compared (interleave-reads
    /// checks them its own way). With `min_length`, a pair with a short mate is dropped whole
    /// (both records count in `n_short_dropped`), as khmer's `require_paired` reading does.
    pub fn from_two_files(r1: FastxReader, r2: FastxReader, min_length: Option<usize>) -> Self {
        Self::zip(r1, r2, min_length, false, false)
    }

    /// R1 and R2 files read as pairs: [`PairedReader::from_two_files`], and record i of both
    /// files must also be mates by name ([`are_mates`]), else an error naming both files, the
    /// record number and the two names. With [`PairMode::ForceSingle`] every record is a bundle
    /// of its own, in the order of the interleaved file (R1 record, its R2 mate, ...); the other
    /// modes give pairs.
    pub fn mates(r1: FastxReader, r2: FastxReader, mode: PairMode, min_length: Option<usize>) -> Self {
        Self::zip(r1, r2, min_length, true, mode == PairMode::ForceSingle)
    }

    fn zip(r1: FastxReader, r2: FastxReader, min_length: Option<usize>, check_names: bool, single: bool) -> Self {
        PairedReader {
            source: Source::Two(Zip { r1, r2, left: None, right: None, check_names, single }),
            min_length: min_length.unwrap_or(0),
        }
    }

    /// The next batch of bundles, `None` at the end.
    pub fn next_batch(&mut self) -> Result<Option<BundleBatch>> {
        let min_length = self.min_length;
        match &mut self.source {
            Source::One { reader, mode, carried } => loop {
                let Some(out) = next_one(reader, *mode, min_length, carried)? else {
                    return Ok(None);
                };
                if !out.batch.is_empty() {
                    return Ok(Some(out));
                }
            },
            Source::Two(zip) => next_two(zip, min_length),
        }
    }
}

fn is_short(rec: &Record<'_>, min_length: usize) -> bool {
    rec.seq.len() < min_length
}

fn unpaired_error(path: &str, batch: &RecordBatch, i: usize, next: Option<usize>) -> Error {
    let name = |j: Option<usize>| {
        j.map_or("<no read>".to_string(), |j| String::from_utf8_lossy(batch.get(j).name).into_owned())
    };
    Error::format(
        path,
        Some(batch.first_record_number() + i as u64),
        Some(batch.line_of(i)),
        format!("Unpaired reads when require_paired is set! (\"{}\", \"{}\")", name(Some(i)), name(next)),
    )
}

/// The next batch of a one-file reader, following khmer's `broken_paired_reader`: the
/// pending record of the previous batch is moved to the front of this one, and this batch's
/// own pending last record is carried on (an empty batch means everything was carried).
fn next_one(
    reader: &mut FastxReader,
    mode: PairMode,
    min_length: usize,
    carried: &mut Option<(OwnedRecord, u64, u64)>,
) -> Result<Option<BundleBatch>> {
    let (mut batch, at_end) = match reader.next_batch()? {
        Some(mut batch) => {
            if let Some((rec, _, line)) = carried.take() {
                batch.prepend(&rec.as_record(), line);
            }
            (batch, false)
        }
        None => {
            let Some((rec, number, line)) = carried.take() else {
                return Ok(None);
            };
            let mut batch = RecordBatch::empty(reader.format(), number);
            batch.push(&rec.as_record(), line);
            (batch, true)
        }
    };
    let path = reader.path();
    let mut bundles = Vec::with_capacity(batch.len());
    let mut n_short_dropped = 0;
    let single = |i| Bundle { first: i, second: None };
    let mut prev: Option<usize> = None;
    for i in 0..batch.len() {
        let mut current = Some(i);
        if let Some(p) = prev {
            let (rp, ri) = (batch.get(p), batch.get(i));
            if mode != PairMode::ForceSingle && check_is_pair(&rp, &ri)? {
                if is_short(&rp, min_length) || is_short(&ri, min_length) {
                    // khmer drops both mates with -p; otherwise only the first, and the second
                    // is examined again with the next record.
                    if mode == PairMode::RequirePaired {
                        current = None;
                        n_short_dropped += 2;
                    } else {
                        n_short_dropped += 1;
                    }
                } else {
                    bundles.push(Bundle { first: p, second: Some(i) });
                    current = None;
                }
            } else if mode == PairMode::RequirePaired {
                return Err(unpaired_error(path, &batch, p, Some(i)));
            } else if is_short(&rp, min_length) {
                n_short_dropped += 1;
            } else {
                bundles.push(single(p));
            }
        }
        prev = current;
    }
    if let Some(p) = prev {
        if !at_end {
            let number = batch.first_record_number() + p as u64;
            *carried = batch.pop_last().map(|(rec, line)| (rec, number, line));
        } else if mode == PairMode::RequirePaired {
            return Err(unpaired_error(path, &batch, p, None));
        } else if is_short(&batch.get(p), min_length) {
            n_short_dropped += 1;
        } else {
            bundles.push(single(p));
        }
    }
    Ok(Some(BundleBatch { batch, bundles, n_short_dropped }))
}

/// Makes `slot` hold a batch with unused records, or `None` at the end of `reader`.
fn refill(reader: &mut FastxReader, slot: &mut Option<(RecordBatch, usize)>) -> Result<()> {
    if slot.as_ref().is_none_or(|(batch, used)| *used >= batch.len()) {
        *slot = reader.next_batch()?.map(|batch| (batch, 0));
    }
    Ok(())
}

/// The error for the first record of `longer` (at `used` in `batch`) that has no mate in
/// `shorter`, which ended after `count` records.
fn count_mismatch(longer: &str, shorter: &str, batch: &RecordBatch, used: usize) -> Error {
    let number = batch.first_record_number() + used as u64;
    Error::format(
        longer,
        Some(number),
        Some(batch.line_of(used)),
        format!(
            "no mate: {shorter} ends after {} records (R1 and R2 files must hold the same number of records)",
            number - 1
        ),
    )
}

/// The next batch of two zipped files: as many pairs as both current batches can give,
/// copied into one interleaved batch (R1, R2, R1, R2, ...).
fn next_two(zip: &mut Zip, min_length: usize) -> Result<Option<BundleBatch>> {
    let Zip { r1, r2, left, right, check_names, single } = zip;
    refill(r1, left)?;
    refill(r2, right)?;
    let (b1, used1, b2, used2) = match (left.as_mut(), right.as_mut()) {
        (None, None) => return Ok(None),
        (Some((b1, used1)), Some((b2, used2))) => (b1, used1, b2, used2),
        (Some((b, used)), None) => return Err(count_mismatch(r1.path(), r2.path(), b, *used)),
        (None, Some((b, used))) => return Err(count_mismatch(r2.path(), r1.path(), b, *used)),
    };
    if b1.format() != b2.format() {
        return Err(Error::invalid(format!("{} and {}: both files must be FASTA or both FASTQ", r1.path(), r2.path())));
    }
    let n = (b1.len() - *used1).min(b2.len() - *used2);
    let pair_number = b1.first_record_number() + *used1 as u64;
    let mut batch = RecordBatch::empty(b1.format(), 2 * pair_number - 1);
    let mut bundles = Vec::with_capacity(if *single { 2 * n } else { n });
    let mut n_short_dropped = 0;
    let mut names = MateNames::default();
    for j in 0..n {
        let (i1, i2) = (*used1 + j, *used2 + j);
        let (a, b) = (b1.get(i1), b2.get(i2));
        if *check_names && !names.are_mates(&a, &b)? {
            return Err(Error::format(
                r1.path(),
                Some(pair_number + j as u64),
                Some(b1.line_of(i1)),
                format!(
                    "\"{}\" and record {} of {} (line {}), \"{}\", are not mates by name",
                    String::from_utf8_lossy(a.name),
                    pair_number + j as u64,
                    r2.path(),
                    b2.line_of(i2),
                    String::from_utf8_lossy(b.name)
                ),
            ));
        }
        batch.push(&a, b1.line_of(i1));
        batch.push(&b, b2.line_of(i2));
        let (short_a, short_b) = (is_short(&a, min_length), is_short(&b, min_length));
        if *single {
            for (i, short) in [(2 * j, short_a), (2 * j + 1, short_b)] {
                if short {
                    n_short_dropped += 1;
                } else {
                    bundles.push(Bundle { first: i, second: None });
                }
            }
        } else if short_a || short_b {
            n_short_dropped += 2;
        } else {
            bundles.push(Bundle { first: 2 * j, second: Some(2 * j + 1) });
        }
    }
    *used1 += n;
    *used2 += n;
    Ok(Some(BundleBatch { batch, bundles, n_short_dropped }))
}

/// Appends `/1` (or `/2` for the second mate) to `name` in `out` unless `name` already marks
/// that mate (khmer's interleave-reads renaming).
pub fn mate_name(name: &[u8], first: bool, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(name);
    let marked = if first { check_is_left(name) } else { check_is_right(name) };
    if !marked {
        out.extend_from_slice(if first { b"/1" } else { b"/2" });
    }
}

/// Scratch space for [`are_mates`] over many records.
#[derive(Default)]
struct MateNames {
    first: Vec<u8>,
    second: Vec<u8>,
}

impl MateNames {
    fn are_mates(&mut self, r1: &Record<'_>, r2: &Record<'_>) -> Result<bool> {
        mate_name(r1.name, true, &mut self.first);
        mate_name(r2.name, false, &mut self.second);
        check_is_pair(&Record { name: &self.first, ..*r1 }, &Record { name: &self.second, ..*r2 })
    }
}

/// True when `r1` (from an R1 file) and `r2` (the record at the same place in the R2 file) are
/// mates by name, by khmer's interleave-reads rule: a name that does not already mark its mate
/// gets `/1` (`/2`) appended, and the two names must then pass [`check_is_pair`]. So `x/1` and
/// `x/2`, Casava's `x 1:N:..` and `x 2:N:..`, and the same name twice (`x`, `x`) are mates; `x/1`
/// and `y/2` are not. Mixing FASTA and FASTQ is an error.
pub fn are_mates(r1: &Record<'_>, r2: &Record<'_>) -> Result<bool> {
    MateNames::default().are_mates(r1, r2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fa<'a>(name: &'a [u8]) -> Record<'a> {
        Record { name, seq: b"ACGT", qual: None }
    }

    #[test]
    fn recognises_khmer_pair_names() {
        let pair = |a: &[u8], b: &[u8]| check_is_pair(&fa(a), &fa(b)).unwrap();
        assert!(pair(b"read/1", b"read/2"));
        assert!(pair(b"read/1 x", b"read/2 y"));
        assert!(!pair(b"read/1", b"other/2"));
        assert!(!pair(b"/1", b"/2"));
        assert!(pair(b"a/b/1", b"a/c/2"), "khmer compares the text before the first '/'");
        assert!(pair(b"HWI:8:1101 1:N:0:ATC", b"HWI:8:1101 2:N:0:ATC"));
        assert!(!pair(b"HWI:8:1101 1:N", b"HWI:8:1102 2:N"));
        assert!(pair(b"SRR1.1 HWI:1/1", b"SRR1.1 HWI:1/2"));
        assert!(!pair(b"read/2", b"read/1"));
        // A '/1' left side that does not match decides: the Casava rule is not tried.
        assert!(!pair(b"x/1 1:N", b"y/2 2:N"));
        let fq = Record { name: b"r/2", seq: b"A", qual: Some(b"I") };
        assert!(check_is_pair(&fa(b"r/1"), &fq).is_err());

        assert!(check_is_left(b"r/1") && check_is_left(b"r 1:N:0") && check_is_left(b"SRR r/1"));
        assert!(check_is_right(b"r/2") && check_is_right(b"r 2:N:0") && !check_is_right(b"r/1"));
        assert!(!check_is_left(b"") && !check_is_right(b"  "));
    }

    fn temp_fasta(records: &[(String, usize)]) -> tempfile::NamedTempFile {
        use std::io::Write;
        let mut f = tempfile::NamedTempFile::new().unwrap();
        for (name, len) in records {
            writeln!(f, ">{name}\n{}", "A".repeat(*len)).unwrap();
        }
        f
    }

    /// Bundles as (name, mate name) and the number of short reads dropped.
    type Outcome = (Vec<(String, Option<String>)>, u64);

    fn run(records: &[(String, usize)], mode: PairMode, min: Option<usize>) -> Result<Outcome> {
        let f = temp_fasta(records);
        let mut reader = PairedReader::new(FastxReader::open(f.path().to_str().unwrap())?, mode, min);
        let (mut out, mut dropped) = (Vec::new(), 0);
        while let Some(b) = reader.next_batch()? {
            let name = |i: usize| String::from_utf8(b.batch.get(i).name.to_vec()).unwrap();
            out.extend(b.bundles.iter().map(|x| (name(x.first), x.second.map(name))));
            dropped += b.n_short_dropped;
        }
        Ok((out, dropped))
    }

    fn recs(spec: &[(&str, usize)]) -> Vec<(String, usize)> {
        spec.iter().map(|(n, l)| (n.to_string(), *l)).collect()
    }

    fn b(a: &str, m: Option<&str>) -> (String, Option<String>) {
        (a.to_string(), m.map(str::to_string))
    }

    #[test]
    fn min_length_follows_broken_paired_reader() {
        let input = recs(&[("a/1", 10), ("a/2", 3), ("b/1", 10), ("b/2", 10), ("c", 3), ("d/1", 3), ("d/2", 10)]);
        // Without -p: the short a/2 pairs with a/1, so a/1 is dropped and a/2 re-examined
        // (short: dropped); d/1 dropped, d/2 continues as an orphan.
        let (out, dropped) = run(&input, PairMode::BrokenPaired, Some(5)).unwrap();
        assert_eq!(out, vec![b("b/1", Some("b/2")), b("d/2", None)]);
        assert_eq!(dropped, 4);
        let input = recs(&[("a/1", 10), ("a/2", 3), ("b/1", 10), ("b/2", 10)]);
        let (out, dropped) = run(&input, PairMode::RequirePaired, Some(5)).unwrap();
        assert_eq!((out, dropped), (vec![b("b/1", Some("b/2"))], 2));
        let (out, _) = run(&input, PairMode::ForceSingle, None).unwrap();
        assert_eq!(out.len(), 4);
    }

    /// Pairs are recognised across batch boundaries: the pending record moves to the next batch.
    #[test]
    fn pairs_straddling_batches_stay_together() {
        let mut input = Vec::new();
        for i in 0..6000 {
            input.push((format!("r{i}/1"), 100 + i % 300));
            input.push((format!("r{i}/2"), 150 + i % 250));
            if i % 7 == 0 {
                input.push((format!("orphan{i}"), 50));
            }
        }
        let (out, dropped) = run(&input, PairMode::BrokenPaired, None).unwrap();
        assert_eq!(dropped, 0);
        assert_eq!(out.iter().filter(|x| x.1.is_some()).count(), 6000);
        assert_eq!(out.len(), 6000 + 6000 / 7 + 1);
        let last = run(&recs(&[("x/1", 5)]), PairMode::RequirePaired, None).unwrap_err().to_string();
        assert!(
            last.ends_with(": record 1 (line 1): Unpaired reads when require_paired is set! (\"x/1\", \"<no read>\")"),
            "{last}"
        );
    }
}
