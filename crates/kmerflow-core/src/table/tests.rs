//! Unit tests of `KhmerTable` semantics against values observed with khmer 3.0.

use super::*;
use crate::kmer::murmur;

fn countgraph(k: usize, sizes: &[u64]) -> KhmerTable {
    KhmerTable::with_sizes(k, HashKind::TwoBit, StorageKind::Byte, sizes.to_vec()).unwrap()
}

#[test]
fn bigcount_counts_up_to_65535() {
    let table = countgraph(4, &[11, 7]);
    let h = table.hash_kmer(b"ACGT").unwrap();
    for _ in 0..1000 {
        table.add_hash(h);
    }
    assert_eq!(table.get_hash(h), 255);
    let mut big = countgraph(4, &[11, 7]);
    big.set_use_bigcount(true).unwrap();
    for i in 1..=70_000u32 {
        big.add_hash(h);
        if i == 1000 {
            assert_eq!(big.get_hash(h), 1000);
        }
    }
    assert_eq!(big.get_hash(h), 65535);
    assert_eq!(big.n_unique_kmers(), 1);
    assert_eq!(big.n_occupied(), 1);
}

#[test]
fn bigcount_only_for_byte_storage() {
    let mut small = KhmerTable::with_sizes(4, HashKind::TwoBit, StorageKind::Nibble, vec![11]).unwrap();
    let err = small.set_use_bigcount(true).unwrap_err().to_string();
    assert_eq!(err, "bigcount is not supported for this storage");
    for _ in 0..20 {
        small.add_hash(5);
    }
    assert_eq!(small.get_hash(5), 15);
}

#[test]
fn bit_storage_is_presence() {
    let bits = KhmerTable::with_sizes(4, HashKind::TwoBit, StorageKind::Bit, vec![11, 7]).unwrap();
    assert!(bits.add_hash(45));
    assert!(!bits.add_hash(45));
    assert_eq!((bits.get_hash(45), bits.get_hash(0)), (1, 0));
    // 45 % 11 = 1 and 45 % 7 = 3, 1 % 11 = 1 but 1 % 7 = 1: only one table matches.
    assert_eq!(bits.get_hash(1), 0);
}

#[test]
fn two_bit_k_above_32_is_refused() {
    let err = KhmerTable::new(33, HashKind::TwoBit, StorageKind::Byte, 1000, 2).err().unwrap().to_string();
    assert!(err.contains("k-mer size 33 is not supported by 2-bit tables (max 32)"), "{err}");
    assert!(KhmerTable::new(33, HashKind::Murmur, StorageKind::Byte, 1000, 2).is_ok());
}

#[test]
fn median_mean_stddev_of_two_counts() {
    let table = countgraph(4, &[11, 7]);
    table.consume(b"AAAA");
    table.consume(b"CCCC");
    table.consume(b"GGGG");
    assert_eq!(median_mean_stddev(&mut [1, 3]), Some((3, 2.0, 1.0)));
    assert_eq!(median_mean_stddev(&mut []), None);
    assert_eq!(table.median_count(b"AAA"), None);
    let mut counts = Vec::new();
    table.kmer_counts(b"AAAA", &mut counts);
    table.kmer_counts(b"CCCC", &mut counts);
    assert_eq!(counts, [1, 2]);
    let (median, mean, stddev) = table.median_count(b"AAAACCCC").unwrap(); // counts 1 0 0 0 2
    assert_eq!(median, 0);
    assert!((mean - 0.6).abs() < 1e-6 && (stddev - 0.8).abs() < 1e-6, "{mean} {stddev}");
}

#[test]
fn median_at_least_agrees_with_median() {
    let table = countgraph(5, &[1_000_003, 999_983]);
    let reads: [&[u8]; 4] = [b"ACGTTGCAAGGCTTAACG", b"ACGTTGCAAG", b"TTGCAAGGCTTAAC", b"GGGGGGGGGGG"];
    for (i, read) in reads.iter().enumerate() {
        for _ in 0..=i {
            table.consume(read);
        }
    }
    for read in reads.iter().chain([&b"ACGTTGCAAGGCTTAACGTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTT"[..]].iter())
    {
        let (median, _, _) = table.median_count(read).unwrap();
        for cutoff in 0..8 {
            assert_eq!(table.median_at_least(read, cutoff), median >= cutoff, "{cutoff}");
        }
    }
    assert!(!table.median_at_least(b"ACG", 0));
}

#[test]
fn trimming_rules() {
    let table = countgraph(4, &[1_000_003]);
    table.consume(b"ACGTTGCA");
    table.consume(b"ACGTTGCA");
    table.consume(b"ACGTTG");
    let mut counts = Vec::new();
    table.kmer_counts(b"ACGTTGCAT", &mut counts);
    assert_eq!(counts, [3, 3, 3, 2, 2, 0]);
    assert_eq!(table.trim_on_abundance(b"ACGTTGCAT", 3), 6);
    assert_eq!(table.trim_on_abundance(b"ACGTTGCAT", 2), 8);
    assert_eq!(table.trim_on_abundance(b"ACGTTGCA", 2), 8);
    assert_eq!(table.trim_below_abundance(b"ACGTTGCAT", 2), 0);
    assert_eq!(table.trim_below_abundance(b"ACGTTGCAT", 3), 9);
    assert_eq!(table.trim_on_abundance(b"GCATT", 1), 0);
    // A sequence of exactly k bases always trims to 0 (khmer quirk).
    assert_eq!(table.trim_on_abundance(b"ACGT", 1), 0);
    assert_eq!(table.trim_on_abundance(b"ACG", 0), 0);
}

#[test]
fn abundance_distribution_counts_each_kmer_once() {
    let table = countgraph(4, &[1_000_003]);
    table.consume(b"AAAAAAAC");
    let tracking = KhmerTable::with_sizes(4, HashKind::TwoBit, StorageKind::Bit, vec![1_000_003]).unwrap();
    let mut dist = vec![0u64; 65536];
    table.abundance_distribution_seq(b"AAAAAAAC", &tracking, &mut dist);
    table.abundance_distribution_seq(b"AAAAAAAC", &tracking, &mut dist);
    assert_eq!(&dist[..5], &[0, 1, 0, 0, 1]);
}

#[test]
fn murmur_table_counts_canonical_kmers() {
    let table = KhmerTable::new(33, HashKind::Murmur, StorageKind::Byte, 1_000_000, 2).unwrap();
    let s = b"ATGGATATGGAGGACAAGTATATGGAGGACAAGTATATGGAGGACAAGTAT";
    let mut hashes = Vec::new();
    table.kmer_hashes(&s[..34], &mut hashes);
    assert_eq!(hashes, [4_743_239_192_574_154_715, 2_122_462_908_541_313_313]);
    assert_eq!(table.consume(s), 19);
    let rc = murmur::reverse_complement(s);
    let mut counts = Vec::new();
    table.kmer_counts(&rc, &mut counts);
    assert!(counts.iter().all(|&c| c >= 1), "{counts:?}");
}

#[test]
fn trimming_matches_khmer_probe() {
    // khmer: Countgraph(4, 1e5, 2); consume AAAACCCC x3 and AAAACCCCGT x1; then for
    // AAAACCCCGTTT (counts 4 4 4 4 4 1 1 0 4) trim_on / trim_below for cutoffs 0..=4.
    let table = KhmerTable::new(4, HashKind::TwoBit, StorageKind::Byte, 100_000, 2).unwrap();
    for (read, times) in [(&b"AAAACCCC"[..], 3), (b"AAAACCCCGT", 1)] {
        for _ in 0..times {
            table.consume(read);
        }
    }
    let read = b"AAAACCCCGTTT";
    let on: Vec<usize> = (0..5).map(|c| table.trim_on_abundance(read, c)).collect();
    let below: Vec<usize> = (0..5).map(|c| table.trim_below_abundance(read, c)).collect();
    assert_eq!(on, [12, 10, 8, 8, 8]);
    assert_eq!(below, [0, 0, 0, 0, 12]);
}

/// Reads with repeats, so that counts above 1 (and saturated nibbles) occur.
fn repetitive_reads() -> Vec<Vec<u8>> {
    let base = b"ACGTTGCAAGGCTTAACGGATCCATGGTTTAAACCCGGGTACGATCGATCGTAGCTAGCATGCA";
    (0..60).map(|i| base[i % 7..base.len() - i % 5].to_vec()).collect()
}

fn all_kinds(k: usize) -> Vec<KhmerTable> {
    let kinds = [
        (HashKind::TwoBit, StorageKind::Byte),
        (HashKind::TwoBit, StorageKind::Nibble),
        (HashKind::TwoBit, StorageKind::Bit),
        (HashKind::Murmur, StorageKind::Byte),
    ];
    kinds
        .iter()
        .map(|&(hash, storage)| KhmerTable::with_sizes(k, hash, storage, vec![1009, 997, 983]).unwrap())
        .collect()
}

#[test]
fn batched_and_exclusive_adds_equal_consume() {
    let reads = repetitive_reads();
    let seqs = || reads.iter().map(Vec::as_slice);
    for kind in 0..all_kinds(7).len() {
        let make = || all_kinds(7).remove(kind);
        let (reference, mut exclusive) = (make(), make());
        let mut all_hashes = Vec::new();
        for read in seqs() {
            assert_eq!(reference.consume(read), exclusive.consume_exclusive(read));
            reference.kmer_hashes(read, &mut all_hashes);
        }
        let (batched, mut batched_exclusive, many, mut many_exclusive) = (make(), make(), make(), make());
        batched.add_hashes(&all_hashes);
        batched_exclusive.add_hashes_exclusive(&all_hashes);
        assert_eq!(many.consume_many(seqs()), all_hashes.len() as u64);
        assert_eq!(many_exclusive.consume_many_exclusive(seqs()), all_hashes.len() as u64);
        for other in [&exclusive, &batched, &batched_exclusive, &many, &many_exclusive] {
            assert_eq!(other.raw_tables(), reference.raw_tables());
            assert_eq!(other.n_occupied(), reference.n_occupied());
            assert_eq!(other.n_unique_kmers(), reference.n_unique_kmers());
        }
    }
}

#[test]
fn exclusive_bigcount_matches_shared() {
    let (mut shared, mut exclusive) = (countgraph(4, &[11, 7]), countgraph(4, &[11, 7]));
    shared.set_use_bigcount(true).unwrap();
    exclusive.set_use_bigcount(true).unwrap();
    for _ in 0..400 {
        shared.consume(b"ACGTA");
        exclusive.consume_exclusive(b"ACGTA");
    }
    let h = shared.hash_kmer(b"ACGT").unwrap();
    assert_eq!((shared.get_hash(h), exclusive.get_hash(h)), (400, 400));
}

#[test]
fn hash_lookups_equal_sequence_lookups() {
    let reads = repetitive_reads();
    for table in all_kinds(9) {
        reads.iter().step_by(3).for_each(|r| {
            table.consume(r);
        });
        for read in &reads {
            let mut hashes = Vec::new();
            table.kmer_hashes(read, &mut hashes);
            let (mut by_seq, mut by_hash) = (Vec::new(), vec![77]);
            table.kmer_counts(read, &mut by_seq);
            table.counts_for_hashes(&hashes, &mut by_hash);
            assert_eq!(by_hash[1..], by_seq[..]);
            assert_eq!(by_seq, hashes.iter().map(|&h| table.get_hash(h)).collect::<Vec<_>>());
            for cutoff in 0..6 {
                assert_eq!(table.median_at_least_hashes(&hashes, cutoff), table.median_at_least(read, cutoff));
                let median = table.median_count(read).map_or(0, |m| m.0);
                assert_eq!(table.median_at_least(read, cutoff), !hashes.is_empty() && median >= cutoff);
            }
        }
    }
    assert!(!all_kinds(4)[0].median_at_least_hashes(&[], 0));
}

#[test]
fn in_table_decisions_count_like_the_sequence_methods() {
    let mut reads = repetitive_reads();
    reads.push(b"ACG".to_vec());
    for (kind, piece) in (0..all_kinds(6).len()).flat_map(|k| [(k, 7), (k, usize::MAX)]) {
        let (reference, passed) = (all_kinds(6).remove(kind), all_kinds(6).remove(kind));
        let (mut hashes, mut spans) = (Vec::new(), Vec::new());
        for read in &reads {
            let start = hashes.len();
            reference.kmer_hashes(read, &mut hashes);
            spans.push(start..hashes.len());
        }
        // Bit storage counts 0 or 1: drop reads already seen.
        let keep_below = if reference.storage_kind() == StorageKind::Bit { 1 } else { 2 };
        let (mut runner, mut kept) = (BatchRunner::default(), 0);
        let reads_and_spans: Vec<_> = reads.iter().zip(&spans).enumerate().collect();
        // Batches of `piece` reads, each decided on the table itself.
        for batch in reads_and_spans.chunks(piece.min(reads_and_spans.len())) {
            let kmers = batch[0].1 .1.start..batch[batch.len() - 1].1 .1.end;
            runner.run(&passed, &hashes, kmers, |pass| {
                for &(i, (read, span)) in batch {
                    // Every third read is skipped (as the second read of a discarded pair is).
                    if i % 3 == 2 {
                        continue;
                    }
                    for cutoff in [1, 2, 3] {
                        assert_eq!(pass.median_at_least(span.clone(), cutoff), reference.median_at_least(read, cutoff));
                    }
                    let mut counts = Vec::new();
                    pass.counts(span.clone(), &mut counts);
                    assert_eq!(counts, hashes[span.clone()].iter().map(|&h| reference.get_hash(h)).collect::<Vec<_>>());
                    if !reference.median_at_least(read, keep_below) {
                        reference.consume(read);
                        pass.add(span.clone());
                        kept += 1;
                    }
                }
            });
        }
        assert!(kept > 1 && kept < reads.len(), "{kept}");
        assert_eq!(passed.raw_tables(), reference.raw_tables());
        assert_eq!(
            (passed.n_occupied(), passed.n_unique_kmers()),
            (reference.n_occupied(), reference.n_unique_kmers())
        );
    }
}
