//! Read-handling commands (khmer's scripts that need no k-mer counting, docs/khmer-compat.md §4.9).
//!
//! Every streaming command runs on [`crate::pipeline::run_ordered`]: the reader yields
//! batches, workers format their output records into byte buffers, and the ordered sink
//! writes the buffers, so the output is byte-identical for any thread count. Outputs are
//! [`OutputFile`]s: written under a temporary name and renamed only when the command
//! succeeds. Each command reports the records handled so far to its run's progress counters.

pub mod extract_long;
pub mod extract_paired;
pub mod fastq_to_fasta;
pub mod interleave;
pub mod readstats;
pub mod sample;
pub mod split_paired;

use crate::io::{write_record, BundleBatch, Compression, FastxReader, OutputFile, PairedReader, RecordBatch};
use crate::run::RunContext;
use crate::{Error, Result};
use std::io::Write;
use std::path::Path;

/// True for the names khmer treats as standard input.
pub fn is_stdin(path: &str) -> bool {
    path == "-" || path == "/dev/stdin"
}

/// The error for reading stdin with no output file named, in khmer's words: one flag (`["-o"]`)
/// names the output, several (`["-1", "-2"]`) name one output each.
pub fn stdin_without_output(flags: &[&str]) -> Error {
    Error::invalid(match flags {
        [flag] => format!("Accepting input from stdin; output filename must be provided with {flag}."),
        _ => format!(
            "Accepting input from stdin; output filenames must be provided. Give them with {}.",
            flags.join(" and ")
        ),
    })
}

/// khmer's derived output name: the input's base name plus `suffix`, in `dir` when given,
/// else in the current directory.
pub fn derived_name(input: &str, suffix: &str, dir: Option<&str>) -> String {
    let base = Path::new(input).file_name().map_or_else(|| input.to_string(), |b| b.to_string_lossy().into_owned());
    match dir {
        Some(d) if !d.is_empty() => format!("{}/{base}{suffix}", d.trim_end_matches('/')),
        _ => format!("{base}{suffix}"),
    }
}

/// Creates the directory `dir` (and its parents) when it does not exist yet (khmer's `-d`).
pub fn ensure_dir(dir: Option<&str>) -> Result<()> {
    match dir {
        Some(d) if !d.is_empty() => std::fs::create_dir_all(d).map_err(|e| Error::io(d, e)),
        _ => Ok(()),
    }
}

/// The two main output paths of a command that splits `input` (extract-paired-reads' `-p`/`-s`,
/// split-paired-reads' `-1`/`-2`): each explicit name, else the input's base name plus its
/// `suffixes` entry in `dir` (created when needed). Reading stdin without both explicit names
/// is an error that names the two `flags`.
pub fn two_outputs(
    input: &str,
    explicit: [&Option<String>; 2],
    suffixes: [&str; 2],
    dir: Option<&str>,
    flags: [&str; 2],
) -> Result<[String; 2]> {
    if explicit.iter().any(|e| e.is_none()) {
        if is_stdin(input) {
            return Err(stdin_without_output(&flags));
        }
        ensure_dir(dir)?;
    }
    Ok([0, 1].map(|i| explicit[i].clone().unwrap_or_else(|| derived_name(input, suffixes[i], dir))))
}

/// Creates an output: an explicit compression (khmer's `--gzip`/`--bzip`) or, when `None`,
/// compression by the name's extension; gzip is compressed on the threads of `ctx`.
pub fn create_output(path: &str, compression: Option<Compression>, ctx: &RunContext) -> Result<OutputFile> {
    OutputFile::create_in(path, compression.unwrap_or_else(|| Compression::from_path(path)), ctx)
}

/// Writes `buf` to `out`, naming the output in an error.
pub fn write_to(out: &mut OutputFile, buf: &[u8]) -> Result<()> {
    out.write_all(buf).map_err(|e| Error::io(out.path(), e))
}

/// The record batches of `reader` as a pipeline source.
pub fn record_batches(mut reader: FastxReader) -> impl Iterator<Item = Result<RecordBatch>> + Send {
    std::iter::from_fn(move || reader.next_batch().transpose())
}

/// The bundle batches of `reader` as a pipeline source.
pub fn bundle_batches(mut reader: PairedReader) -> impl Iterator<Item = Result<BundleBatch>> + Send {
    std::iter::from_fn(move || reader.next_batch().transpose())
}

/// The records of one bundle batch, formatted and routed by bundle kind.
#[derive(Default)]
pub(crate) struct Routed {
    /// First mates of pairs (and, when interleaving, their second mates right after them).
    pub firsts: Vec<u8>,
    /// Second mates of pairs, when not interleaving.
    pub seconds: Vec<u8>,
    /// Single reads.
    pub orphans: Vec<u8>,
    /// Number of pairs.
    pub pairs: u64,
    /// Number of single reads.
    pub singles: u64,
}

/// Formats the bundles of `bb`: pairs to `firsts` (and `seconds` unless `interleave`),
/// single reads to `orphans`.
pub(crate) fn route_bundles(bb: &BundleBatch, interleave: bool) -> Routed {
    let mut r = Routed::default();
    for b in &bb.bundles {
        let first = bb.batch.get(b.first);
        match b.second {
            Some(second) => {
                write_record(&mut r.firsts, &first);
                let dest = if interleave { &mut r.firsts } else { &mut r.seconds };
                write_record(dest, &bb.batch.get(second));
                r.pairs += 1;
            }
            None => {
                write_record(&mut r.orphans, &first);
                r.singles += 1;
            }
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_names_follow_khmer() {
        assert_eq!(derived_name("/a/b/reads.fq.gz", ".pe", None), "reads.fq.gz.pe");
        assert_eq!(derived_name("reads.fq", ".1", Some("out/")), "out/reads.fq.1");
        assert_eq!(derived_name("x/reads.fq", ".subset", Some("")), "reads.fq.subset");
    }

    #[test]
    fn stdin_without_output_says_it_as_khmer() {
        let one = stdin_without_output(&["-o"]).to_string();
        assert!(one.contains("Accepting input from stdin; output filename must be provided with -o."), "{one}");
        let two =
            two_outputs("-", [&None, &Some("b".into())], [".1", ".2"], None, ["-1", "-2"]).unwrap_err().to_string();
        assert!(two.contains("output filenames must be provided. Give them with -1 and -2."), "{two}");
    }
}
