//! The I/O engine on khmer's own test data: record counts, names, compression, error paths
//! and pairing semantics against the expected outputs shipped with the data.

use kmerflow_core::io::fastx::for_each_record;
use kmerflow_core::io::pairs::{PairMode, PairedReader};
use kmerflow_core::io::{FastxReader, OwnedRecord};
use std::path::PathBuf;

/// A vendored khmer test input (`tests/data/khmer/` of the repository).
fn data(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/khmer").join(name);
    path.to_str().unwrap().to_string()
}

fn records(path: &str) -> Vec<OwnedRecord> {
    let mut out = Vec::new();
    for_each_record(path, &kmerflow_core::run::RunContext::new(), |r| {
        out.push(r.to_owned_record());
        Ok(())
    })
    .unwrap_or_else(|e| panic!("{e}"));
    out
}

fn error(path: &str) -> String {
    for_each_record(path, &kmerflow_core::run::RunContext::new(), |_| Ok(())).unwrap_err().to_string()
}

fn names(recs: &[OwnedRecord]) -> Vec<String> {
    recs.iter().map(|r| String::from_utf8(r.name.clone()).unwrap()).collect()
}

#[test]
fn record_counts_and_compressed_twins() {
    for (name, count, bp) in [
        ("test-abund-read-2.fa", 1001, 18_114),
        ("test-abund-read-2.fq", 1001, 18_114),
        ("random-20-a.fa", 99, 5_841),
        ("100-reads.fq.gz", 100, 5_755),
        ("100-reads.fq.bz2", 100, 5_755),
        ("test-reads.fq.gz", 25_000, 1_900_000),
        ("test-large.fa.gz", 100_000, 10_000_000),
        ("simple-genome-reads.fa", 1000, 100_000),
    ] {
        let recs = records(&data(name));
        let total: usize = recs.iter().map(|r| r.seq.len()).sum();
        assert_eq!((recs.len(), total), (count, bp), "{name}");
    }
    for base in ["test-abund-read-2.fa", "random-20-a.fa"] {
        let plain = records(&data(base));
        for ext in [".gz", ".bz2"] {
            assert_eq!(records(&data(&format!("{base}{ext}"))), plain, "{base}{ext}");
        }
    }
    assert_eq!(records(&data("test-reads.fq.bz2")).len(), 12_500);
    assert!(records(&data("random-20-a.fq.bz2")) == records(&data("random-20-a.fq.gz")));
}

#[test]
fn every_sequence_file_parses() {
    let dir = PathBuf::from(data("."));
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let parseable = [".fa", ".fq", ".fastq", ".fa.gz", ".fq.gz", ".fa.bz2", ".fq.bz2", ".pe", ".se", ".1", ".2"]
            .iter()
            .any(|ext| name.ends_with(ext));
        let broken = name.contains("empty")
            || name.contains("truncated")
            || name.contains("malformat")
            || name == "test-error-reads.fq"
            || name == "valid-read-testing.fq"
            || name == "bogus.fa";
        if parseable && !broken {
            assert!(!records(&data(&name)).is_empty(), "{name}");
        }
    }
}

#[test]
fn names_are_whole_header_lines() {
    let recs = records(&data("test-abund-read-2.fq"));
    assert_eq!(recs[0].name, b"895:1:37:17593:9954 1::FOO");
    let casava = names(&records(&data("casava_18-pe.fq")));
    assert_eq!(casava[0], "HWI-ST412:261:d15khacxx:8:1101:3149:2157 1:N:0:ATCACG");
}

#[test]
fn truncated_compressed_input_is_an_error_naming_the_file() {
    for name in ["100-reads.fq.truncated.gz", "100-reads.fq.truncated.bz2"] {
        let path = data(name);
        let msg = error(&path);
        assert!(msg.starts_with(&path) && msg.contains("truncated or corrupt"), "{msg}");
    }
}

/// Empty inputs, compressed or not, have no records (khmer warns and goes on).
#[test]
fn empty_inputs_have_no_records() {
    for name in ["empty-file", "empty-file.gz", "empty-file.bz2"] {
        assert_eq!(records(&data(name)), vec![], "{name}");
    }
}

#[test]
fn malformed_fastq_is_an_error_with_its_place() {
    let path = data("truncated.fq");
    let msg = error(&path);
    assert!(msg.starts_with(&format!("{path}: record ")), "{msg}");
}

/// Bundles of a paired reader as (names of pairs, names of singles).
fn bundles(mut reader: PairedReader) -> kmerflow_core::Result<(Vec<String>, Vec<String>, u64)> {
    let (mut pairs, mut singles, mut dropped) = (Vec::new(), Vec::new(), 0);
    while let Some(out) = reader.next_batch()? {
        let name = |i: usize| String::from_utf8_lossy(out.batch.get(i).name).into_owned();
        for b in &out.bundles {
            match b.second {
                Some(j) => pairs.extend([name(b.first), name(j)]),
                None => singles.push(name(b.first)),
            }
        }
        dropped += out.n_short_dropped;
    }
    Ok((pairs, singles, dropped))
}

fn one_file(
    name: &str,
    mode: PairMode,
    min_length: Option<usize>,
) -> kmerflow_core::Result<(Vec<String>, Vec<String>, u64)> {
    bundles(PairedReader::new(FastxReader::open(&data(name))?, mode, min_length))
}

#[test]
fn broken_paired_matches_khmer_extract_paired_reads() {
    for name in ["paired-mixed.fa", "paired-mixed.fq"] {
        let (pairs, singles, dropped) = one_file(name, PairMode::BrokenPaired, None).unwrap();
        assert_eq!(pairs, names(&records(&data(&format!("{name}.pe")))), "{name}");
        assert_eq!(singles, names(&records(&data(&format!("{name}.se")))), "{name}");
        assert_eq!(dropped, 0);
    }
    let (pairs, singles, _) = one_file("casava_18-pe.fq", PairMode::BrokenPaired, None).unwrap();
    assert_eq!((pairs.len(), singles.len()), (4, 0));
}

#[test]
fn force_single_and_require_paired() {
    let (pairs, singles, _) = one_file("paired-mixed.fa", PairMode::ForceSingle, None).unwrap();
    assert_eq!((pairs.len(), singles.len()), (0, 11));
    let (pairs, _, _) = one_file("paired-broken.fq.paired_bad", PairMode::RequirePaired, None).unwrap();
    assert_eq!(pairs.len(), 4);
    let path = data("paired-mixed.fa");
    let msg = one_file("paired-mixed.fa", PairMode::RequirePaired, None).unwrap_err().to_string();
    assert!(msg.starts_with(&format!("{path}: record 3 (line 5): Unpaired reads when require_paired is set! (\"850:2:1:1118:7944/1\", \"850:2:1:1123:19958/1\")")), "{msg}");
}

#[test]
fn min_length_drops_like_khmer() {
    let all = records(&data("paired-mixed.fa"));
    let min = 40;
    let short = all.iter().filter(|r| r.seq.len() < min).count() as u64;
    let (pairs, singles, dropped) = one_file("paired-mixed.fa", PairMode::BrokenPaired, Some(min)).unwrap();
    let kept: Vec<&String> = pairs.iter().chain(&singles).collect();
    for r in &all {
        let name = String::from_utf8(r.name.clone()).unwrap();
        if r.seq.len() < min {
            assert!(!kept.contains(&&name), "{name} is short");
        }
    }
    assert_eq!(dropped, short);
    assert_eq!(pairs.len() + singles.len() + dropped as usize, all.len());
}

#[test]
fn two_files_zip_and_check_counts() {
    let open = |n: &str| FastxReader::open(&data(n)).unwrap();
    let (pairs, singles, _) =
        bundles(PairedReader::from_two_files(open("paired.fq.1"), open("paired.fq.2"), None)).unwrap();
    assert_eq!(pairs, names(&records(&data("paired.fq"))));
    assert!(singles.is_empty());
    let err = bundles(PairedReader::from_two_files(open("paired-broken.fq.1"), open("paired-broken.fq.2"), None))
        .unwrap_err()
        .to_string();
    assert!(err.contains("paired-broken.fq.1") && err.contains("paired-broken.fq.2"), "{err}");
}
