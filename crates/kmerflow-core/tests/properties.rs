//! Properties over random inputs (proptest): the reader's records do not depend on how the
//! input is cut into chunks; canonical hashes do not depend on the strand; counts do not depend
//! on the order in which reads are counted; adding the tables of two parts of an input equals
//! counting the whole input (both layouts, every storage), and so does merging HyperLogLogs.

use kmerflow_core::io::{FastxReader, OwnedRecord};
use kmerflow_core::kmer::{murmur, twobit};
use kmerflow_core::table::hll::HllCounter;
use kmerflow_core::table::CountingTable;
use kmerflow_core::table::{BlockedTable, CounterWidth, HashKind, KhmerTable, StorageKind};
use proptest::prelude::*;

/// How a generated file is written.
#[derive(Debug, Clone)]
struct Layout {
    fastq: bool,
    crlf: bool,
    /// FASTA line width (the sequence is wrapped); `None` writes one line.
    wrap: Option<usize>,
    /// Blank lines before each record.
    blank_lines: usize,
}

fn layout() -> impl Strategy<Value = Layout> {
    (any::<bool>(), any::<bool>(), proptest::option::of(1usize..80), 0usize..3)
        .prop_map(|(fastq, crlf, wrap, blank_lines)| Layout { fastq, crlf, wrap, blank_lines })
}

/// A record as both formats can hold it: a name without surrounding blanks, bases, qualities
/// (including `@` and `+`, which start header and separator lines) of the same length.
fn record() -> impl Strategy<Value = OwnedRecord> {
    ("[A-Za-z0-9_][A-Za-z0-9_ :/.-]{0,20}[A-Za-z0-9]", "[ACGTNacgtn]{1,400}").prop_flat_map(|(name, seq)| {
        let len = seq.len();
        proptest::collection::vec(proptest::sample::select(b"!#+5?@FIJ".to_vec()), len).prop_map(move |qual| {
            OwnedRecord { name: name.clone().into_bytes(), seq: seq.clone().into_bytes(), qual: Some(qual) }
        })
    })
}

fn write_file(records: &[OwnedRecord], layout: &Layout) -> Vec<u8> {
    let eol: &[u8] = if layout.crlf { b"\r\n" } else { b"\n" };
    let mut out = Vec::new();
    for rec in records {
        for _ in 0..layout.blank_lines {
            out.extend_from_slice(eol);
        }
        out.push(if layout.fastq { b'@' } else { b'>' });
        out.extend_from_slice(&rec.name);
        out.extend_from_slice(eol);
        if layout.fastq {
            for part in [&rec.seq[..], b"+", rec.qual.as_deref().expect("generated with qualities")] {
                out.extend_from_slice(part);
                out.extend_from_slice(eol);
            }
        } else {
            for line in rec.seq.chunks(layout.wrap.unwrap_or(rec.seq.len())) {
                out.extend_from_slice(line);
                out.extend_from_slice(eol);
            }
        }
    }
    out
}

fn read_all(text: &[u8], chunk_size: usize) -> Vec<OwnedRecord> {
    let mut reader = FastxReader::from_stream("generated", Box::new(std::io::Cursor::new(text.to_vec())), chunk_size)
        .expect("the generated file starts a record");
    let mut out = Vec::new();
    while let Some(batch) = reader.next_batch().expect("the generated file parses") {
        assert_eq!(batch.first_record_number(), out.len() as u64 + 1);
        out.extend(batch.iter().map(|r| r.to_owned_record()));
    }
    out
}

fn dna(min: usize, max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(proptest::sample::select(b"ACGT".to_vec()), min..=max)
}

/// Canonical hashes of every k-mer of `seq`, reversed, are those of its reverse complement.
fn strand_independent(mut hashes: impl FnMut(&[u8]) -> Vec<u64>, seq: &[u8]) -> Result<(), TestCaseError> {
    let forward = hashes(seq);
    let mut reverse = hashes(&murmur::reverse_complement(seq));
    reverse.reverse();
    prop_assert_eq!(forward, reverse);
    Ok(())
}

fn reads() -> impl Strategy<Value = Vec<Vec<u8>>> {
    proptest::collection::vec(proptest::collection::vec(proptest::sample::select(b"ACGTN".to_vec()), 0..120), 0..30)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn records_are_the_same_for_any_chunk_size(
        records in proptest::collection::vec(record(), 1..25),
        layout in layout(),
        chunk_sizes in proptest::collection::vec(1usize..300, 1..4),
    ) {
        let text = write_file(&records, &layout);
        let expected: Vec<OwnedRecord> = records
            .iter()
            .map(|r| OwnedRecord { qual: if layout.fastq { r.qual.clone() } else { None }, ..r.clone() })
            .collect();
        prop_assert_eq!(&read_all(&text, 1 << 20), &expected);
        for chunk_size in chunk_sizes {
            prop_assert_eq!(&read_all(&text, chunk_size), &expected, "chunk size {}", chunk_size);
        }
    }

    #[test]
    fn two_bit_hashes_are_canonical(seq in dna(32, 120), k in 1usize..=32) {
        strand_independent(|s| { let mut out = Vec::new(); twobit::canonical_hashes(s, k, &mut out); out }, &seq)?;
    }

    #[test]
    fn murmur_hashes_are_canonical(seq in dna(1, 150), k in 1usize..=100) {
        let mut scratch = Vec::new();
        strand_independent(|s| { let mut out = Vec::new(); murmur::canonical_hashes(s, k, &mut scratch, &mut out); out }, &seq)?;
        if seq.len() >= k {
            let kmer = &seq[..k];
            prop_assert_eq!(murmur::hash_murmur3(kmer), murmur::hash_murmur3(&murmur::reverse_complement(kmer)));
        }
    }

    #[test]
    fn blocked_hashes_are_canonical(seq in dna(1, 150), k in 1usize..=80) {
        let table = BlockedTable::new(k, 64 * 64, CounterWidth::Bits8, 2).expect("valid parameters");
        strand_independent(|s| { let mut out = Vec::new(); table.kmer_hashes(s, &mut out); out }, &seq)?;
    }

    #[test]
    fn counts_do_not_depend_on_the_order_of_reads(a in reads(), b in reads(), k in 1usize..=32, nibble in any::<bool>()) {
        let storage = if nibble { StorageKind::Nibble } else { StorageKind::Byte };
        let count = |first: &[Vec<u8>], second: &[Vec<u8>]| {
            let mut table = KhmerTable::new(k, HashKind::TwoBit, storage, 997, 3).expect("valid parameters");
            table.consume_many_exclusive(first.iter().chain(second).map(Vec::as_slice));
            (table.raw_tables().iter().map(|t| t.to_vec()).collect::<Vec<_>>(), table.n_occupied())
        };
        prop_assert_eq!(count(&a, &b), count(&b, &a));
        let blocked = |first: &[Vec<u8>], second: &[Vec<u8>]| {
            let mut table = BlockedTable::new(k, 64 * 32, CounterWidth::Bits4, 3).expect("valid parameters");
            table.consume_many_exclusive(first.iter().chain(second).map(Vec::as_slice));
            (table.raw_bytes().to_vec(), table.n_occupied())
        };
        prop_assert_eq!(blocked(&a, &b), blocked(&b, &a));
    }

    #[test]
    fn adding_tables_equals_counting_the_concatenation(
        reads in reads(),
        split in any::<proptest::sample::Index>(),
        k in 1usize..=32,
        storage in proptest::sample::select(vec![StorageKind::Byte, StorageKind::Nibble, StorageKind::Bit]),
        murmur in any::<bool>(),
        size in 20u64..2000,
    ) {
        let (a, b) = reads.split_at(split.index(reads.len() + 1));
        let hash = if murmur { HashKind::Murmur } else { HashKind::TwoBit };
        let khmer = |part: &[Vec<u8>]| {
            let mut table = KhmerTable::new(k, hash, storage, size + 3, 3).expect("valid parameters");
            table.consume_many_exclusive(part.iter().map(Vec::as_slice));
            table
        };
        let (mut sum, other, whole) = (khmer(a), khmer(b), khmer(&reads));
        let unique = sum.n_unique_kmers() + other.n_unique_kmers();
        sum.add_table(&other).expect("same shape");
        prop_assert_eq!(sum.raw_tables(), whole.raw_tables());
        prop_assert_eq!(sum.n_occupied(), whole.n_occupied());
        prop_assert_eq!(sum.n_unique_kmers(), unique);
        prop_assert!(unique >= whole.n_unique_kmers());

        let width = match storage {
            StorageKind::Byte => CounterWidth::Bits8,
            StorageKind::Nibble => CounterWidth::Bits4,
            StorageKind::Bit => CounterWidth::Bits1,
        };
        let blocked = |part: &[Vec<u8>]| {
            let mut table = BlockedTable::new(k, 64 * (size / 64 + 1), width, 3).expect("valid parameters");
            table.consume_many_exclusive(part.iter().map(Vec::as_slice));
            table
        };
        let (mut sum, other, whole) = (blocked(a), blocked(b), blocked(&reads));
        sum.add_table(&other).expect("same shape");
        prop_assert_eq!(sum.raw_bytes(), whole.raw_bytes());
        prop_assert_eq!(sum.n_occupied(), whole.n_occupied());
        prop_assert_eq!(sum.occupancy().added, whole.occupancy().added);
    }

    #[test]
    fn hyperloglog_merge_equals_counting_the_concatenation(a in reads(), b in reads(), k in 1usize..=32) {
        let hll = |reads: &[&Vec<u8>]| {
            let mut h = HllCounter::new(0.05, k).expect("valid parameters");
            for read in reads {
                h.consume_seq(read);
            }
            h
        };
        let mut merged = hll(&a.iter().collect::<Vec<_>>());
        merged.merge(&hll(&b.iter().collect::<Vec<_>>())).expect("same parameters");
        let whole = hll(&a.iter().chain(&b).collect::<Vec<_>>());
        prop_assert_eq!(merged.counters(), whole.counters());
        prop_assert_eq!(merged.estimate(), whole.estimate());
    }
}
