//! R1/R2 files: paired reads given as two files and written as two files, beside khmer's one
//! interleaved file (a kmerflow extension).
//!
//! Input: a [`PairedInput`] is one file (interleaved, broken-paired or single reads, read by
//! khmer's rules) or an R1 file with its R2 `mate` file. Record i of R2 is the mate of record i of
//! R1; both files must hold the same number of records and the names of each couple must be mates
//! ([`super::pairs::are_mates`]: khmer's interleave-reads rule). Either mismatch stops the run
//! with one error naming both files and the record. The reader gives the bundles of the
//! interleaved file (R1 record, its mate, ...), so a command's decisions are those it makes on
//! `interleave-reads R1 R2`'s output read with `-p`.
//!
//! Output: a [`PairedOutput`] is one file (the reads in input order, khmer's form, byte for byte)
//! or an R1/R2 pair of files: kept pairs' first mates to the first, second mates to the second,
//! and reads whose mate is not written (an input orphan, or a pair the command cut to one read) to
//! an optional orphans file, else left out and counted. A command formats each batch's kept reads
//! into [`MateBuffers`] (in its workers or ordered stage) and hands them to a [`MateWriter`],
//! whose files are [`OutputFile`]s: written under temporary names and renamed together by
//! committing the [`Staged`] outputs of [`MateWriter::close`] once the run has passed its checks.
//! Splitting the one-file output with `split-paired-reads -1 R1 -2 R2 -0 ORPHANS` gives the same
//! files.

use super::compress::Compression;
use super::fastx::{FastxReader, Record};
use super::output::{write_record, OutputFile, Staged};
use super::pairs::{PairMode, PairedReader};
use super::same_file::{resolved, same_file};
use crate::run::files::{refuse_same_outputs, Output};
use crate::run::RunContext;
use crate::{Error, Result};
use std::io::Write;

/// A paired-read input: one file read by khmer's pairing rules, or an R1 file and its R2 `mate`
/// file (record i of `mate` is the mate of record i of `path`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairedInput {
    /// The (first) file.
    pub path: String,
    /// The R2 file, when reads come as two files.
    pub mate: Option<String>,
}

impl PairedInput {
    /// An interleaved (or single-read) input.
    pub fn single(path: impl Into<String>) -> Self {
        PairedInput { path: path.into(), mate: None }
    }

    /// An R1 file and its R2 file.
    pub fn two_files(r1: impl Into<String>, r2: impl Into<String>) -> Self {
        PairedInput { path: r1.into(), mate: Some(r2.into()) }
    }

    /// The file and its mate file, if any (for [`super::refuse_inputs_as_outputs`]).
    pub fn paths(&self) -> impl Iterator<Item = &String> {
        std::iter::once(&self.path).chain(&self.mate)
    }

    /// The input as messages name it: `R1.fq`, or `R1.fq + R2.fq`.
    pub fn name(&self) -> String {
        match &self.mate {
            Some(mate) => format!("{} + {mate}", self.path),
            None => self.path.clone(),
        }
    }

    /// The output a command derives from this input's name(s) by `name` (for example
    /// `<basename>.keep`): one file, or R1/R2 files for an input with a mate file.
    pub fn derived_output(&self, name: impl Fn(&str) -> String) -> PairedOutput {
        PairedOutput { path: name(&self.path), mate: self.mate.as_deref().map(name), orphans: None }
    }

    /// Opens the input as bundles within the run `ctx`, dropping reads shorter than
    /// `min_length` as khmer does. One file is read by `mode` ([`PairedReader::new`]); two
    /// files give pairs whose names are checked ([`PairedReader::mates`]), a pair with a short
    /// mate dropped whole as with `-p`. One file given as both is refused ([`refuse_same_mates`]).
    pub fn open(&self, mode: PairMode, min_length: Option<usize>, ctx: &RunContext) -> Result<PairedReader> {
        if let Some(mate) = &self.mate {
            refuse_same_mates(&self.path, mate)?;
        }
        let first = FastxReader::open_in(&self.path, ctx)?;
        Ok(match &self.mate {
            Some(mate) => PairedReader::mates(first, FastxReader::open_in(mate, ctx)?, mode, min_length),
            None => PairedReader::new(first, mode, min_length),
        })
    }
}

/// Pairs each of `files` with its entry of `mates` (`--mate`, given once per file or not at
/// all).
pub fn paired_inputs(files: &[String], mates: &[String]) -> Result<Vec<PairedInput>> {
    if !mates.is_empty() && mates.len() != files.len() {
        return Err(Error::invalid(format!(
            "{} input files but {} mate files; give one --mate per input file",
            files.len(),
            mates.len()
        )));
    }
    files.iter().zip(mates).try_for_each(|(f, m)| refuse_same_mates(f, m))?;
    Ok(files.iter().enumerate().map(|(i, f)| PairedInput { path: f.clone(), mate: mates.get(i).cloned() }).collect())
}

/// The R1/R2 options of a command that keeps reads, beside its inputs and `-o`: `--mate`,
/// `-O/--mate-output` and `--orphans`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MateFiles {
    /// R2 files (`--mate`): none, or one per input, whose records are the mates of the input's
    /// records.
    pub mate: Vec<String>,
    /// `-O/--mate-output`: with `-o`, kept pairs go to R1/R2 files (`-o`, this).
    pub output2: Option<String>,
    /// `--orphans`: with R1/R2 outputs, the kept reads without a kept mate (else left out).
    pub orphans: Option<String>,
}

impl MateFiles {
    /// `inputs` with their `--mate` files ([`paired_inputs`]).
    pub fn inputs(&self, inputs: &[String]) -> Result<Vec<PairedInput>> {
        paired_inputs(inputs, &self.mate)
    }

    /// The one output of `-o output` with `-O` and `--orphans`, if `-o` is given
    /// ([`PairedOutput::from_flags`]).
    pub fn output(&self, output: Option<String>) -> Result<Option<PairedOutput>> {
        PairedOutput::from_flags(output, self.output2.clone(), self.orphans.clone())
    }
}

/// Where a command writes the reads it keeps: one file (`-` = stdout), or an R1/R2 pair with an
/// optional file for the reads whose mate is not written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairedOutput {
    /// The one file, or the R1 file.
    pub path: String,
    /// The R2 file.
    pub mate: Option<String>,
    /// Reads without their mate, when writing two files (left out when `None`).
    pub orphans: Option<String>,
}

impl PairedOutput {
    /// One file: the kept reads in input order.
    pub fn single(path: impl Into<String>) -> Self {
        PairedOutput { path: path.into(), mate: None, orphans: None }
    }

    /// R1 and R2 files, orphans left out.
    pub fn two_files(r1: impl Into<String>, r2: impl Into<String>) -> Self {
        PairedOutput { path: r1.into(), mate: Some(r2.into()), orphans: None }
    }

    /// From a command's flags: `-o path`, `-O mate`, `--orphans`; a mate or an orphans file
    /// without `path`, or orphans without a mate, is an error naming the flags.
    pub fn from_flags(path: Option<String>, mate: Option<String>, orphans: Option<String>) -> Result<Option<Self>> {
        match path {
            None if mate.is_some() || orphans.is_some() => {
                Err(Error::invalid("-O/--mate-output and --orphans need -o/--output (the R1 output)"))
            }
            None => Ok(None),
            Some(path) => Self::new(path, mate, orphans).map(Some),
        }
    }

    /// `path` with its `mate` (R2) file and `orphans` file; orphans without a mate file is an
    /// error naming the flags.
    pub fn new(path: String, mate: Option<String>, orphans: Option<String>) -> Result<Self> {
        if orphans.is_some() && mate.is_none() {
            return Err(Error::invalid("--orphans needs -O/--mate-output (R1/R2 outputs)"));
        }
        Ok(PairedOutput { path, mate, orphans })
    }

    /// True when the reads go to R1/R2 files.
    pub fn is_split(&self) -> bool {
        self.mate.is_some()
    }

    /// The files written (for [`super::refuse_inputs_as_outputs`]).
    pub fn paths(&self) -> impl Iterator<Item = &String> {
        std::iter::once(&self.path).chain(&self.mate).chain(&self.orphans)
    }

    /// Refuses two of the outputs naming the same file (both `-` included).
    pub fn check(&self) -> Result<()> {
        refuse_shared_outputs(&self.paths().collect::<Vec<_>>())
    }
}

/// Refuses two of `paths` (a command's outputs) naming the same file (both `-` included).
pub fn refuse_shared_outputs(paths: &[&String]) -> Result<()> {
    refuse_same_outputs(&paths.iter().map(|p| Output::file(p.as_str())).collect::<Vec<_>>())
}

/// Refuses an R1 file and its R2 file `mate` that are one file (the same path, `./R1.fq`, a
/// link, stdin twice): reads cannot be their own mates. Called before either is opened.
pub fn refuse_same_mates(path: &str, mate: &str) -> Result<()> {
    if same_file(path, mate) || resolved(path).is_some_and(|r| Some(r) == resolved(mate)) {
        return Err(Error::invalid(format!(
            "R2 file {mate} is the same file as R1 file {path}; give the file of the second mates"
        )));
    }
    Ok(())
}

/// The formatted reads a batch keeps, laid out for a [`MateWriter`]: for one output file, every
/// read in order; for R1/R2 files, first mates, second mates and reads without their mate apart.
#[derive(Debug, Default)]
pub struct MateBuffers {
    split: bool,
    /// Every read (one file), or the first mates (R1/R2 files).
    first: Vec<u8>,
    /// Second mates (R1/R2 files).
    second: Vec<u8>,
    /// Reads whose mate is not written (R1/R2 files).
    orphans: Vec<u8>,
    /// Pairs written whole (R1/R2 files).
    pairs: u64,
    /// Reads in `orphans`.
    orphan_reads: u64,
}

impl MateBuffers {
    /// Buffers for one output file (`split` false) or R1/R2 files.
    pub fn new(split: bool) -> Self {
        MateBuffers { split, ..Default::default() }
    }

    /// Empties the buffers for the next batch.
    pub fn clear(&mut self) {
        *self = MateBuffers::new(self.split);
    }

    /// Formats what is kept of one bundle: `first` and `second` are the kept (possibly trimmed)
    /// reads of a pair, or `first` alone for a single read. A pair with both reads goes to the R1
    /// and R2 files; one read alone (an input orphan, or a mate whose partner was dropped) goes
    /// to the orphans.
    pub fn push(&mut self, first: Option<&Record<'_>>, second: Option<&Record<'_>>) {
        if !self.split {
            first.into_iter().chain(second).for_each(|r| write_record(&mut self.first, r));
            return;
        }
        match (first, second) {
            (Some(a), Some(b)) => {
                write_record(&mut self.first, a);
                write_record(&mut self.second, b);
                self.pairs += 1;
            }
            (Some(r), None) | (None, Some(r)) => {
                write_record(&mut self.orphans, r);
                self.orphan_reads += 1;
            }
            (None, None) => {}
        }
    }

    /// Formats a single read (an orphan for R1/R2 files).
    pub fn push_read(&mut self, read: &Record<'_>) {
        self.push(Some(read), None);
    }
}

/// What a [`MateWriter`] wrote to R1/R2 files.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct MateCounts {
    /// Pairs written to the R1 and R2 files.
    pub pairs: u64,
    /// Reads without their mate written to the orphans file.
    pub orphans_written: u64,
    /// Reads without their mate left out (no orphans file).
    pub orphans_dropped: u64,
}

impl MateCounts {
    /// Tells, within the run `ctx`, how many reads were left out for want of an orphans file.
    pub fn tell_dropped(&self, ctx: &RunContext) {
        if self.orphans_dropped > 0 {
            ctx.info(format!(
                "{} kept reads without a kept mate were left out of the R1/R2 outputs (--orphans FILE keeps them)",
                self.orphans_dropped
            ));
        }
    }
}

impl std::ops::Add for MateCounts {
    type Output = MateCounts;

    fn add(self, other: MateCounts) -> MateCounts {
        MateCounts {
            pairs: self.pairs + other.pairs,
            orphans_written: self.orphans_written + other.orphans_written,
            orphans_dropped: self.orphans_dropped + other.orphans_dropped,
        }
    }
}

/// Writes a command's kept reads to a [`PairedOutput`] (see the module documentation).
pub struct MateWriter {
    first: OutputFile,
    second: Option<OutputFile>,
    orphans: Option<OutputFile>,
    counts: MateCounts,
}

impl MateWriter {
    /// Creates the files of `out` (compressed by `compression`, else by each name's extension)
    /// within the run `ctx`; two outputs naming the same file are refused.
    pub fn create(out: &PairedOutput, compression: Option<Compression>, ctx: &RunContext) -> Result<Self> {
        out.check()?;
        let create =
            |path: &str| OutputFile::create_in(path, compression.unwrap_or_else(|| Compression::from_path(path)), ctx);
        Ok(MateWriter {
            first: create(&out.path)?,
            second: out.mate.as_deref().map(create).transpose()?,
            orphans: out.orphans.as_deref().map(create).transpose()?,
            counts: MateCounts::default(),
        })
    }

    /// True when reads go to R1/R2 files.
    pub fn is_split(&self) -> bool {
        self.second.is_some()
    }

    /// Empty buffers laid out for this writer.
    pub fn buffers(&self) -> MateBuffers {
        MateBuffers::new(self.is_split())
    }

    /// Writes one batch's buffers (made by [`MateWriter::buffers`]).
    pub fn write(&mut self, bufs: &MateBuffers) -> Result<()> {
        debug_assert_eq!(bufs.split, self.is_split(), "buffers laid out for another writer");
        write_all(&mut self.first, &bufs.first)?;
        if let Some(second) = &mut self.second {
            write_all(second, &bufs.second)?;
        }
        self.counts.pairs += bufs.pairs;
        match &mut self.orphans {
            Some(orphans) => {
                write_all(orphans, &bufs.orphans)?;
                self.counts.orphans_written += bufs.orphan_reads;
            }
            None => self.counts.orphans_dropped += bufs.orphan_reads,
        }
        Ok(())
    }

    /// What was written so far (all zero for one output file).
    pub fn counts(&self) -> MateCounts {
        self.counts
    }

    /// Finishes every file, leaving each under its temporary name: the caller commits them all
    /// (in the order given) after its last checks, so that R1 and R2 appear together.
    pub fn close(self) -> Result<Vec<Staged>> {
        std::iter::once(self.first).chain(self.second).chain(self.orphans).map(OutputFile::close).collect()
    }

    /// Finishes and commits every file.
    pub fn finish(self) -> Result<MateCounts> {
        let counts = self.counts;
        self.close()?.into_iter().try_for_each(Staged::commit)?;
        Ok(counts)
    }
}

fn write_all(out: &mut OutputFile, buf: &[u8]) -> Result<()> {
    out.write_all(buf).map_err(|e| Error::io(out.path(), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    }

    /// Bundles of `input` as (name, mate name), or the error's text.
    fn bundles(input: &PairedInput, mode: PairMode) -> Result<Vec<(String, Option<String>)>> {
        let mut reader = input.open(mode, None, &RunContext::new())?;
        let mut out = Vec::new();
        while let Some(b) = reader.next_batch()? {
            let name = |i: usize| String::from_utf8(b.batch.get(i).name.to_vec()).unwrap();
            out.extend(b.bundles.iter().map(|x| (name(x.first), x.second.map(name))));
        }
        Ok(out)
    }

    #[test]
    fn two_files_give_pairs_and_mismatches_name_both_files_and_the_record() {
        let dir = tempfile::tempdir().unwrap();
        let r1 = write(dir.path(), "r1.fa", ">a/1\nACGT\n>b 1:N:0\nACGT\n>c\nAC\n");
        let r2 = write(dir.path(), "r2.fa", ">a/2\nACGT\n>b 2:N:0\nACGT\n>c\nAC\n");
        let pairs = bundles(&PairedInput::two_files(&r1, &r2), PairMode::BrokenPaired).unwrap();
        let names: Vec<_> = pairs.iter().map(|(a, b)| (a.as_str(), b.as_deref())).collect();
        assert_eq!(names, [("a/1", Some("a/2")), ("b 1:N:0", Some("b 2:N:0")), ("c", Some("c"))]);
        let singles = bundles(&PairedInput::two_files(&r1, &r2), PairMode::ForceSingle).unwrap();
        assert_eq!(singles.len(), 6);
        assert_eq!(singles[1], ("a/2".to_string(), None), "interleaved order");

        let other = write(dir.path(), "other.fa", ">a/2\nACGT\n>x 2:N:0\nACGT\n>c\nAC\n");
        let err = bundles(&PairedInput::two_files(&r1, &other), PairMode::RequirePaired).unwrap_err().to_string();
        assert_eq!(
            err,
            format!("{r1}: record 2 (line 3): \"b 1:N:0\" and record 2 of {other} (line 3), \"x 2:N:0\", are not mates by name")
        );
        let short = write(dir.path(), "short.fa", ">a/2\nACGT\n");
        let err = bundles(&PairedInput::two_files(&r1, &short), PairMode::BrokenPaired).unwrap_err().to_string();
        assert_eq!(
            err,
            format!(
                "{r1}: record 2 (line 3): no mate: {short} ends after 1 records (R1 and R2 files must hold the same \
                 number of records)"
            )
        );
        let err = bundles(&PairedInput::two_files(&short, &r1), PairMode::BrokenPaired).unwrap_err().to_string();
        assert!(err.starts_with(&format!("{r1}: record 2 (line 3): no mate: {short} ends")), "{err}");
    }

    #[test]
    fn mates_must_match_files() {
        let files = vec!["a".to_string(), "b".to_string()];
        assert!(paired_inputs(&files, &["c".to_string()]).is_err());
        let p = paired_inputs(&files, &[]).unwrap();
        assert_eq!(p[1], PairedInput::single("b"));
        assert_eq!(PairedInput::two_files("x", "y").name(), "x + y");
    }

    #[test]
    fn one_file_given_as_both_mates_is_refused_before_opening() {
        let dir = tempfile::tempdir().unwrap();
        let r1 = write(dir.path(), "r1.fq", "@a/1\nACGT\n+\nIIII\n");
        let link = dir.path().join("link.fq");
        std::os::unix::fs::symlink(&r1, &link).unwrap();
        let dotted = format!("{}/./r1.fq", dir.path().display());
        for mate in [r1.clone(), dotted, link.to_string_lossy().into_owned()] {
            let err = paired_inputs(std::slice::from_ref(&r1), std::slice::from_ref(&mate)).unwrap_err().to_string();
            assert!(err.contains(&mate) && err.contains("same file"), "{err}");
            let open = PairedInput::two_files(&r1, &mate).open(PairMode::RequirePaired, None, &RunContext::new());
            assert!(open.is_err(), "{mate}");
        }
        assert!(refuse_same_mates("-", "-").is_err());
        let r2 = write(dir.path(), "r2.fq", "@a/2\nACGT\n+\nIIII\n");
        assert!(paired_inputs(&[r1], &[r2]).is_ok());
    }

    #[test]
    fn output_flags_and_same_files_are_checked() {
        let s = |x: &str| Some(x.to_string());
        assert_eq!(PairedOutput::from_flags(None, None, None).unwrap(), None);
        assert!(PairedOutput::from_flags(None, s("b"), None).is_err());
        assert!(PairedOutput::from_flags(s("a"), None, s("c")).is_err());
        let out = PairedOutput::from_flags(s("a"), s("b"), s("c")).unwrap().unwrap();
        assert!(out.is_split() && out.check().is_ok());
        let dir = tempfile::tempdir().unwrap();
        let file = write(dir.path(), "r.fa", ">a\nA\n");
        let same = format!("{}/./r.fa", dir.path().display());
        assert!(PairedOutput::two_files(&file, &same).check().is_err(), "same file by inode");
        assert!(PairedOutput::two_files("-", "-").check().is_err());
        assert!(PairedOutput::two_files("x", "x").check().is_err());
    }

    fn rec<'a>(name: &'a [u8]) -> Record<'a> {
        Record { name, seq: b"ACGT", qual: None }
    }

    /// One file gets the reads in order; R1/R2 files get pairs apart and orphans aside, and
    /// appear only once committed.
    #[test]
    fn writer_routes_pairs_and_orphans() {
        let dir = tempfile::tempdir().unwrap();
        let path = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
        let fill = |w: &mut MateWriter| {
            let mut bufs = w.buffers();
            bufs.push(Some(&rec(b"a/1")), Some(&rec(b"a/2")));
            bufs.push(None, Some(&rec(b"b/2")));
            bufs.push_read(&rec(b"c"));
            bufs.push(None, None);
            w.write(&bufs).unwrap();
        };
        let ctx = RunContext::new();
        let mut one = MateWriter::create(&PairedOutput::single(path("one.fa")), None, &ctx).unwrap();
        fill(&mut one);
        assert_eq!(one.finish().unwrap(), MateCounts::default());
        assert_eq!(std::fs::read_to_string(path("one.fa")).unwrap(), ">a/1\nACGT\n>a/2\nACGT\n>b/2\nACGT\n>c\nACGT\n");

        let out = PairedOutput { path: path("1.fa"), mate: Some(path("2.fa")), orphans: Some(path("0.fa")) };
        let mut two = MateWriter::create(&out, None, &ctx).unwrap();
        fill(&mut two);
        assert_eq!(two.counts(), MateCounts { pairs: 1, orphans_written: 2, orphans_dropped: 0 });
        let staged = two.close().unwrap();
        assert!(!std::path::Path::new(&path("1.fa")).exists(), "not before commit");
        staged.into_iter().try_for_each(Staged::commit).unwrap();
        assert_eq!(std::fs::read_to_string(path("1.fa")).unwrap(), ">a/1\nACGT\n");
        assert_eq!(std::fs::read_to_string(path("2.fa")).unwrap(), ">a/2\nACGT\n");
        assert_eq!(std::fs::read_to_string(path("0.fa")).unwrap(), ">b/2\nACGT\n>c\nACGT\n");

        let mut dropped = MateWriter::create(&PairedOutput::two_files(path("x1"), path("x2")), None, &ctx).unwrap();
        fill(&mut dropped);
        assert_eq!(dropped.finish().unwrap().orphans_dropped, 2);
    }
}
