//! Ignored measurements of the blocked layout against khmer's layout (run one at a time with
//! `cargo test --release -p kmerflow-core --test blocked_measure NAME -- --ignored --nocapture`).
//!
//! - `throughput`: 500,000 random 120-bp reads (50.5 M k-mers, k = 20) into 400 MB tables
//!   (a 4 x 1e8 Countgraph and a 400 MB 8-bit, 4-probe BlockedTable), 1 and 2 threads.
//! - `accuracy`: the first 300,000 reads of /tmp/bench-data/ecoli50_1.fq (k = 21, reads split
//!   at non-ACGT bytes), counts of both layouts at equal memory against exact counts from a
//!   HashMap of canonical 2-bit k-mers; false positives from random absent k-mers.

use kmerflow_core::io::FastxReader;
use kmerflow_core::table::CountingTable;
use kmerflow_core::table::{
    AllocOptions, BlockedParams, BlockedTable, CounterWidth, HashKind, HugePages, KhmerTable, StorageKind,
};
use std::collections::HashMap;
use std::time::Instant;

mod common;
use common::{measure, random_reads};
use rand::{Rng, SeedableRng};

/// The k-mer-consuming calls both layouts share, for the throughput runs.
trait Consume: Sync {
    fn many(&self, reads: &[Vec<u8>]) -> u64;
    fn many_exclusive(&mut self, reads: &[Vec<u8>]) -> u64;
}

impl Consume for KhmerTable {
    fn many(&self, reads: &[Vec<u8>]) -> u64 {
        self.consume_many(reads.iter().map(Vec::as_slice))
    }
    fn many_exclusive(&mut self, reads: &[Vec<u8>]) -> u64 {
        self.consume_many_exclusive(reads.iter().map(Vec::as_slice))
    }
}

impl Consume for BlockedTable {
    fn many(&self, reads: &[Vec<u8>]) -> u64 {
        self.consume_many(reads.iter().map(Vec::as_slice))
    }
    fn many_exclusive(&mut self, reads: &[Vec<u8>]) -> u64 {
        self.consume_many_exclusive(reads.iter().map(Vec::as_slice))
    }
}

fn run_throughput<T: Consume>(name: &str, make: impl Fn() -> T, reads: &[Vec<u8>]) {
    eprintln!("{name}:");
    let mut exclusive = make();
    measure("consume_many_exclusive, 64 reads a call, 1 thread", || {
        reads.chunks(64).map(|c| exclusive.many_exclusive(c)).sum()
    });
    drop(exclusive);
    let shared = make();
    measure("consume_many (atomic), 64 reads a call, 1 thread", || reads.chunks(64).map(|c| shared.many(c)).sum());
    drop(shared);
    let shared = make();
    let start = Instant::now();
    let kmers: u64 = std::thread::scope(|scope| {
        let workers: Vec<_> = reads
            .chunks(reads.len() / 2)
            .map(|part| scope.spawn(|| part.chunks(64).map(|c| shared.many(c)).sum::<u64>()))
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    });
    let secs = start.elapsed().as_secs_f64();
    eprintln!("  consume_many (atomic), 2 threads: wall {secs:.2} s ({:.1} M/s)", kmers as f64 / secs / 1e6);
}

#[test]
#[ignore]
fn throughput() {
    let reads = random_reads(500_000, 120, 7);
    let options = AllocOptions { huge_pages: HugePages::Auto, populate: true };
    run_throughput(
        "KhmerTable 4 x 1e8 byte counters (400 MB)",
        || KhmerTable::new_with_options(20, HashKind::TwoBit, StorageKind::Byte, 100_000_000, 4, options).unwrap(),
        &reads,
    );
    run_throughput(
        "BlockedTable 400 MB, 8-bit counters, 4 probes",
        || BlockedTable::with_params(BlockedParams::new(20, 400_000_000, CounterWidth::Bits8, 4), options).unwrap(),
        &reads,
    );
}

const K: usize = 21;
const ECOLI: &str = "/tmp/bench-data/ecoli50_1.fq";

/// ACGT-only pieces (of at least k bases) of the first `n` reads of `path`.
fn read_segments(path: &str, n: usize) -> Vec<Vec<u8>> {
    let mut reader = FastxReader::open(path).unwrap();
    let mut segments = Vec::new();
    let mut seen = 0;
    while let Some(batch) = reader.next_batch().unwrap() {
        for rec in batch.iter() {
            if seen == n {
                return segments;
            }
            seen += 1;
            let upper = rec.seq.to_ascii_uppercase();
            segments.extend(upper.split(|b| !b"ACGT".contains(b)).filter(|s| s.len() >= K).map(<[u8]>::to_vec));
        }
    }
    segments
}

/// Exact counts keyed by the canonical 2-bit value (the Countgraph hash), with the
/// BlockedTable hash of the same k-mer.
struct Exact {
    counts: HashMap<u64, (u64, u32)>,
}

fn exact_counts(segments: &[Vec<u8>], khmer: &KhmerTable, blocked: &BlockedTable) -> Exact {
    let mut counts: HashMap<u64, (u64, u32)> = HashMap::new();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for seg in segments {
        a.clear();
        b.clear();
        khmer.kmer_hashes(seg, &mut a);
        blocked.kmer_hashes(seg, &mut b);
        for (&ha, &hb) in a.iter().zip(&b) {
            counts.entry(ha).or_insert((hb, 0)).1 += 1;
        }
    }
    Exact { counts }
}

/// (mean over-count, fraction over-counted) over all distinct k-mers; true counts are capped
/// at the counter maximum.
fn overcount(exact: &Exact, max: u32, estimate: impl Fn(u64, u64) -> u32) -> (f64, f64) {
    let (mut excess, mut over) = (0u64, 0u64);
    for (&ha, &(hb, count)) in &exact.counts {
        let est = estimate(ha, hb);
        let truth = count.min(max);
        assert!(est >= truth, "a sketch under-counted");
        excess += u64::from(est - truth);
        over += u64::from(est > truth);
    }
    let n = exact.counts.len() as f64;
    (excess as f64 / n, over as f64 / n)
}

/// Fraction of `n` random k-mers absent from the data that a table reports present.
fn false_positive_rate(exact: &Exact, n: usize, present: impl Fn(&[u8]) -> bool, khmer: &KhmerTable) -> f64 {
    let mut rng = rand_pcg::Pcg64::seed_from_u64(12345);
    let (mut tried, mut hits) = (0, 0);
    while tried < n {
        let kmer: Vec<u8> = (0..K).map(|_| b"ACGT"[rng.random_range(0..4)]).collect();
        if exact.counts.contains_key(&khmer.hash_kmer(&kmer).unwrap()) {
            continue;
        }
        tried += 1;
        hits += usize::from(present(&kmer));
    }
    hits as f64 / n as f64
}

#[test]
#[ignore]
fn accuracy() {
    let start = Instant::now();
    let segments = read_segments(ECOLI, 300_000);
    let probe_khmer = KhmerTable::new(K, HashKind::TwoBit, StorageKind::Byte, 1000, 1).unwrap();
    let probe_blocked = BlockedTable::new(K, 4096, CounterWidth::Bits8, 1).unwrap();
    let exact = exact_counts(&segments, &probe_khmer, &probe_blocked);
    let total: u64 = exact.counts.values().map(|&(_, c)| u64::from(c)).sum();
    eprintln!(
        "{} ACGT segments, {total} k-mers, {} distinct (k = {K}), {:.1} s",
        segments.len(),
        exact.counts.len(),
        start.elapsed().as_secs_f64()
    );
    const FP_QUERIES: usize = 1_000_000;
    for mb in [100u64, 10, 2] {
        let bytes = mb * 1_000_000;
        for (storage, width, label) in
            [(StorageKind::Byte, CounterWidth::Bits8, "8-bit counts"), (StorageKind::Bit, CounterWidth::Bits1, "Bloom")]
        {
            let bins = if storage == StorageKind::Bit { bytes * 8 / 4 } else { bytes / 4 };
            let khmer = KhmerTable::new(K, HashKind::TwoBit, storage, bins, 4).unwrap();
            let blocked = BlockedTable::new(K, bytes, width, 4).unwrap();
            for seg in &segments {
                khmer.consume(seg);
                blocked.consume(seg);
            }
            let max = width.max_count();
            let (k_mean, k_frac) = overcount(&exact, max, |ha, _| khmer.get_hash(ha));
            let (b_mean, b_frac) = overcount(&exact, max, |_, hb| blocked.get_hash(hb));
            let k_fp =
                false_positive_rate(&exact, FP_QUERIES, |s| khmer.get_hash(khmer.hash_kmer(s).unwrap()) > 0, &khmer);
            let b_fp = false_positive_rate(
                &exact,
                FP_QUERIES,
                |s| blocked.get_hash(blocked.hash_kmer(s).unwrap()) > 0,
                &khmer,
            );
            eprintln!(
                "{mb} MB {label}: khmer 4 tables mean over-count {k_mean:.4}, over-counted {:.3}%, FP {:.3}% | \
                 blocked 4 probes mean over-count {b_mean:.4}, over-counted {:.3}%, FP {:.3}% (expected {:.3}%)",
                k_frac * 100.0,
                k_fp * 100.0,
                b_frac * 100.0,
                b_fp * 100.0,
                blocked.expected_fp_rate() * 100.0
            );
        }
    }
}
