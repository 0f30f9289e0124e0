//! Ignored throughput measurements of the counting hot paths (run one at a time with
//! `cargo test --release -p kmerflow-core --test table_throughput NAME -- --ignored --nocapture`).
//!
//! Workload: 500,000 random 120-bp reads, k = 20, a 4 x 1e8 Countgraph (400 MB), like
//! `consume_throughput` in `table_khmer_compat.rs`. Rates are k-mers per second of wall time
//! and of the measuring thread's CPU time (the box may be shared).

use kmerflow_core::table::CountingTable;
use kmerflow_core::table::{AllocOptions, HashKind, HugePages, KhmerTable, StorageKind};
use std::time::Instant;

mod common;
use common::{measure, random_reads};

const READS: usize = 500_000;

fn reads() -> Vec<Vec<u8>> {
    random_reads(READS, 120, 7)
}

fn table(options: AllocOptions) -> KhmerTable {
    let start = Instant::now();
    let table = KhmerTable::new_with_options(20, HashKind::TwoBit, StorageKind::Byte, 100_000_000, 4, options).unwrap();
    eprintln!("  allocate {options:?}: {:.2} s", start.elapsed().as_secs_f64());
    table
}

/// Hashes of all reads, concatenated in batches of `batch` reads.
fn hash_batches(table: &KhmerTable, reads: &[Vec<u8>], batch: usize) -> Vec<Vec<u64>> {
    reads
        .chunks(batch)
        .map(|chunk| {
            let mut hashes = Vec::new();
            chunk.iter().for_each(|r| table.kmer_hashes(r, &mut hashes));
            hashes
        })
        .collect()
}

fn options(huge_pages: HugePages, populate: bool) -> AllocOptions {
    AllocOptions { huge_pages, populate }
}

#[test]
#[ignore]
fn consume_variants() {
    let reads = reads();
    let expected = (READS * 101) as u64;
    for (huge, populate) in [(HugePages::Auto, true), (HugePages::Auto, false), (HugePages::Off, true)] {
        eprintln!("huge pages {huge:?}, populate {populate}:");
        let shared = table(options(huge, populate));
        assert_eq!(measure("consume (atomic)", || reads.iter().map(|r| shared.consume(r)).sum()), expected);
        drop(shared);
        let mut exclusive = table(options(huge, populate));
        let n = measure("consume_exclusive", || reads.iter().map(|r| exclusive.consume_exclusive(r)).sum());
        assert_eq!(n, expected);
        drop(exclusive);
        let many = table(options(huge, populate));
        let n = measure("consume_many, 64 reads a call", || {
            reads.chunks(64).map(|chunk| many.consume_many(chunk.iter().map(Vec::as_slice))).sum()
        });
        assert_eq!(n, expected);
    }
}

#[test]
#[ignore]
fn batched_hash_variants() {
    let reads = reads();
    let shared = table(options(HugePages::Auto, true));
    let batches = hash_batches(&shared, &reads, 64);
    let total = |b: &[Vec<u64>]| b.iter().map(|h| h.len() as u64).sum::<u64>();
    measure("add_hashes, 64 reads a call", || {
        batches.iter().for_each(|h| shared.add_hashes(h));
        total(&batches)
    });
    let mut exclusive = table(options(HugePages::Auto, true));
    measure("add_hashes_exclusive, 64 reads a call", || {
        batches.iter().for_each(|h| exclusive.add_hashes_exclusive(h));
        total(&batches)
    });
    let mut counts = Vec::new();
    measure("counts_for_hashes", || {
        batches.iter().for_each(|h| {
            counts.clear();
            exclusive.counts_for_hashes(h, &mut counts)
        });
        total(&batches)
    });
    let per_read = hash_batches(&shared, &reads, 1);
    let mut kept = 0;
    measure("median_at_least_hashes(20) per read", || {
        kept = per_read.iter().filter(|h| shared.median_at_least_hashes(h, 20)).count();
        total(&per_read)
    });
    assert_eq!(kept, 0);
}

#[test]
#[ignore]
fn consume_two_threads() {
    let reads = reads();
    let shared = table(options(HugePages::Auto, true));
    let start = Instant::now();
    let kmers: u64 = std::thread::scope(|scope| {
        let workers: Vec<_> = reads
            .chunks(READS / 2)
            .map(|part| {
                scope.spawn(|| measure("  one thread's share", || part.iter().map(|r| shared.consume(r)).sum()))
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    });
    let secs = start.elapsed().as_secs_f64();
    eprintln!("  2 threads: {kmers} k-mers, wall {secs:.2} s ({:.1} M/s)", kmers as f64 / secs / 1e6);
}
