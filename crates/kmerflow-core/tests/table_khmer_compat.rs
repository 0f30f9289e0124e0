//! Tables, file formats and HyperLogLog against values observed with khmer 3.0 on its test
//! data (docs/khmer-compat.md §2–§3, §6.2 rows 23–25).

use kmerflow_core::kmer::clean::clean_parser;
use kmerflow_core::table::hll::HllCounter;
use kmerflow_core::table::CountingTable;
use kmerflow_core::table::{HashKind, KhmerTable, StorageKind};
use std::io::Read;
use std::path::PathBuf;

/// A vendored khmer test input (`tests/data/khmer/` of the repository).
fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/khmer").join(name)
}

/// Sequences of a FASTA file, cleaned like khmer's C++ parser.
fn fasta_reads(name: &str) -> Vec<Vec<u8>> {
    let text = std::fs::read(data(name)).unwrap();
    let mut reads = Vec::new();
    for record in text.split(|&b| b == b'>').skip(1) {
        let body = record.splitn(2, |&b| b == b'\n').nth(1).unwrap_or_default();
        let seq: Vec<u8> = body.iter().copied().filter(|b| !b.is_ascii_whitespace()).collect();
        let mut clean = Vec::new();
        clean_parser(&seq, &mut clean);
        reads.push(clean);
    }
    reads
}

fn consume_all(table: &KhmerTable, reads: &[Vec<u8>]) {
    for read in reads {
        table.consume(read);
    }
}

/// The reads of `test-abund-read-2.fa` (a read, then a thousand copies of its first 18 bases)
/// counted into a countgraph of k = `k` with bigcount (two tables of 10^7, as khmer's tests).
fn error_read_counted(k: usize) -> (Vec<Vec<u8>>, KhmerTable) {
    let reads = fasta_reads("test-abund-read-2.fa");
    let mut table = KhmerTable::new(k, HashKind::TwoBit, StorageKind::Byte, 10_000_000, 2).unwrap();
    table.set_use_bigcount(true).unwrap();
    consume_all(&table, &reads);
    (reads, table)
}

#[test]
fn countgraph_occupancy_on_random_20() {
    let reads = fasta_reads("random-20-a.fa");
    let table = KhmerTable::new(12, HashKind::TwoBit, StorageKind::Byte, 100_000, 4).unwrap();
    consume_all(&table, &reads);
    assert_eq!((table.n_occupied(), table.n_unique_kmers()), (3886, 3966));
}

#[test]
fn nodegraph_occupancy_on_random_20() {
    let reads = fasta_reads("random-20-a.fa");
    for (n, unique) in [(1, 3884), (3, 3960)] {
        let table = KhmerTable::new(20, HashKind::TwoBit, StorageKind::Bit, 100_000, n).unwrap();
        consume_all(&table, &reads);
        assert_eq!((table.n_occupied(), table.n_unique_kmers()), (3884, unique));
    }
}

#[test]
fn small_tables_match_khmer_raw_contents() {
    // SmallCountgraph(20, 1000, 3) and Counttable(20, 1000, 3) on random-20-a.fa.
    let reads = fasta_reads("random-20-a.fa");
    let small = KhmerTable::new(20, HashKind::TwoBit, StorageKind::Nibble, 1000, 3).unwrap();
    consume_all(&small, &reads);
    let nibble_sum: u64 = small.raw_tables()[0].iter().map(|&b| u64::from(b)).sum();
    assert_eq!((small.n_occupied(), small.n_unique_kmers(), nibble_sum), (983, 1757, 33465));
    let murmur = KhmerTable::new(20, HashKind::Murmur, StorageKind::Byte, 1000, 3).unwrap();
    consume_all(&murmur, &reads);
    let byte_sum: u64 = murmur.raw_tables()[1].iter().map(|&b| u64::from(b)).sum();
    assert_eq!((murmur.n_occupied(), murmur.n_unique_kmers(), byte_sum), (975, 1776, 3960));
}

#[test]
fn median_of_the_error_read() {
    let (reads, table) = error_read_counted(8);
    assert_eq!(table.median_count(&reads[0]), Some((1, 103.803_74, 303.702_94)));
    assert_eq!(table.trim_on_abundance(&reads[0], 2), 18);
    assert_eq!(table.trim_below_abundance(&reads[0], 1), 0);
    assert_eq!(table.trim_below_abundance(&reads[0], 2000), 114);
}

#[test]
fn abundance_distribution_with_bigcount() {
    let (reads, table) = error_read_counted(17);
    let sizes = table.hashsizes().to_vec();
    let tracking = KhmerTable::with_sizes(17, HashKind::TwoBit, StorageKind::Bit, sizes).unwrap();
    let mut dist = vec![0u64; 65536];
    for read in &reads {
        table.abundance_distribution_seq(read, &tracking, &mut dist);
    }
    // abundance-dist.py -z: rows "1,96,..." and "1001,2,...".
    assert_eq!((dist[1], dist[1001], dist.iter().sum::<u64>()), (96, 2, 98));
}

#[test]
fn tiny_countgraph_file_is_byte_exact() {
    let mut table = KhmerTable::with_sizes(4, HashKind::TwoBit, StorageKind::Byte, vec![11, 7]).unwrap();
    table.set_use_bigcount(true).unwrap();
    for _ in 0..300 {
        table.consume(b"ACGT");
    }
    table.consume(b"AAAA");
    let expected: Vec<u8> = [
        &b"OXLI\x04\x01\x01\x04\x00\x00\x00\x02\x02\0\0\0\0\0\0\0"[..],
        b"\x0b\0\0\0\0\0\0\0\x01\xff\0\0\0\0\0\0\0\0\0",
        b"\x07\0\0\0\0\0\0\0\x01\0\0\xff\0\0\0",
        b"\x01\0\0\0\0\0\0\0\x2d\0\0\0\0\0\0\0\x2c\x01",
    ]
    .concat();
    assert_eq!(expected.len(), 72);
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("tiny.ct");
    table.save(raw.to_str().unwrap()).unwrap();
    assert_eq!(std::fs::read(&raw).unwrap(), expected);

    let gz = dir.path().join("tiny.ct.gz");
    table.save(gz.to_str().unwrap()).unwrap();
    assert_eq!(&std::fs::read(&gz).unwrap()[..2], b"\x1f\x8b");
    for path in [&raw, &gz] {
        let loaded = KhmerTable::load(path.to_str().unwrap(), HashKind::TwoBit).unwrap();
        assert_eq!((loaded.ksize(), loaded.hashsizes(), loaded.n_occupied()), (4, &[11u64, 7][..], 2));
        assert!(loaded.use_bigcount());
        assert_eq!((loaded.get_hash(45), loaded.n_unique_kmers()), (300, 0));
        assert_eq!(loaded.raw_tables(), table.raw_tables());
    }
}

#[test]
fn tiny_small_countgraph_file_is_byte_exact() {
    let table = KhmerTable::with_sizes(4, HashKind::TwoBit, StorageKind::Nibble, vec![11, 7]).unwrap();
    for _ in 0..300 {
        table.consume(b"ACGT");
    }
    table.consume(b"AAAA");
    let dir = tempfile::tempdir().unwrap();
    // A `.gz` name still writes raw bytes for type 7.
    let path = dir.path().join("tiny.sct.gz");
    table.save(path.to_str().unwrap()).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes.len(), 45);
    assert_eq!(&bytes[..19], b"OXLI\x04\x07\x04\0\0\0\x02\x02\0\0\0\0\0\0\0");
    assert_eq!(&bytes[19..33], b"\x0b\0\0\0\0\0\0\0\x1f\0\0\0\0\0");
    let loaded = KhmerTable::load(path.to_str().unwrap(), HashKind::TwoBit).unwrap();
    let got = (loaded.storage_kind(), loaded.get_hash(45), loaded.get_hash(0));
    assert_eq!(got, (StorageKind::Nibble, 15, 1));
}

#[test]
fn khmer_files_load() {
    let norm = KhmerTable::load(data("normC20k20.ct.gz").to_str().unwrap(), HashKind::TwoBit).unwrap();
    assert_eq!((norm.ksize(), norm.n_tables(), norm.storage_kind()), (20, 4, StorageKind::Byte));
    assert_eq!(norm.hashsizes()[0], 999_983);
    for name in ["goodversion-k12.ht", "goodversion-k12.ht.gz"] {
        let ht = KhmerTable::load(data(name).to_str().unwrap(), HashKind::TwoBit).unwrap();
        assert_eq!((ht.ksize(), ht.hashsizes(), ht.storage_kind()), (12, &[2u64][..], StorageKind::Bit));
        assert_eq!((ht.n_occupied(), &ht.raw_tables()[0][..]), (2, &[3u8][..]));
    }
}

#[test]
fn bad_table_files_give_clear_errors() {
    for name in ["badversion-k12.ct", "badversion-k12.ht", "empty-file", "test-abund-read.fa"] {
        let path = data(name);
        let err = KhmerTable::load(path.to_str().unwrap(), HashKind::TwoBit).err().unwrap().to_string();
        assert!(err.starts_with(path.to_str().unwrap()), "{err}");
        assert!(err.contains("OXLI") || err.contains("truncated"), "{err}");
    }
    let dir = tempfile::tempdir().unwrap();
    let mut good = Vec::new();
    let file = std::fs::File::open(data("normC20k20.ct.gz")).unwrap();
    flate2::read::GzDecoder::new(file).read_to_end(&mut good).unwrap();
    let cases: [(&str, Vec<u8>, &str); 3] = [
        ("v3.ct", [&b"OXLI\x03"[..], &good[5..]].concat(), "version 3 is not supported"),
        ("t5.ct", [&b"OXLI\x04\x05"[..], &good[6..]].concat(), "type 5 is not a k-mer table"),
        ("cut.ct", good[..100_000].to_vec(), "truncated"),
    ];
    for (name, bytes, message) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let err = KhmerTable::load(path.to_str().unwrap(), HashKind::TwoBit).err().unwrap().to_string();
        assert!(err.contains(name) && err.contains(message), "{err}");
    }
}

#[test]
fn hyperloglog_matches_unique_kmers() {
    let mut a = HllCounter::new(0.01, 20).unwrap();
    for read in fasta_reads("random-20-a.fa") {
        a.consume_seq(&read);
    }
    assert_eq!(a.estimate(), 3950);
    let mut b = HllCounter::new(0.01, 20).unwrap();
    for read in fasta_reads("paired-mixed.fa") {
        b.consume_seq(&read);
    }
    assert_eq!(b.estimate(), 232);
    a.merge(&b).unwrap();
    assert_eq!(a.estimate(), 4170);
    assert!(a.merge(&HllCounter::new(0.1, 20).unwrap()).is_err());
    assert!(HllCounter::new(0.001, 20).is_err() && HllCounter::new(0.5, 20).is_err());
}

#[test]
fn hyperloglog_bias_corrected_range() {
    // A pseudo-random sequence (64-bit LCG, top two bits -> ACGT); estimates and register sums
    // from khmer.HLLCounter(e, 21).consume_string(...).
    let mut x: u64 = 12345;
    let seq: Vec<u8> = (0..60_000)
        .map(|_| {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            b"ACGT"[(x >> 62) as usize]
        })
        .collect();
    let expected = [
        (30_000, 0.01, 29_866, 36_671),
        (30_000, 0.1, 31_223, 1181),
        (30_000, 0.3, 40_761, 199),
        (60_000, 0.01, 60_186, 52_694),
        (60_000, 0.1, 60_448, 1315),
        (60_000, 0.3, 53_959, 212),
    ];
    for (len, error, estimate, register_sum) in expected {
        let mut hll = HllCounter::new(error, 21).unwrap();
        hll.consume_seq(&seq[..len]);
        let sum: u64 = hll.counters().iter().map(|&r| u64::from(r)).sum();
        assert_eq!((hll.estimate(), sum), (estimate, register_sum), "{len} {error}");
    }
}

#[test]
fn threads_give_the_same_tables_as_one_thread() {
    // Few distinct k-mers repeated many times, so many bins saturate at 255.
    let mut reads = fasta_reads("test-abund-read-2.fa");
    reads.extend(fasta_reads("random-20-a.fa"));
    let build = |threads: usize| {
        let table = KhmerTable::new(17, HashKind::TwoBit, StorageKind::Byte, 5_000, 3).unwrap();
        std::thread::scope(|scope| {
            for t in 0..threads {
                let (table, reads) = (&table, &reads);
                scope.spawn(move || {
                    for read in reads.iter().skip(t).step_by(threads) {
                        table.consume(read);
                        table.consume(read);
                    }
                });
            }
        });
        table
    };
    let single = build(1);
    assert!(single.raw_tables()[0].contains(&255));
    for threads in [2, 4] {
        let multi = build(threads);
        assert_eq!(multi.raw_tables(), single.raw_tables(), "{threads} threads");
        assert_eq!(multi.n_occupied(), single.n_occupied());
    }
}

/// Single-thread consume throughput on a 4 x 1e8 countgraph (run with
/// `cargo test --release -p kmerflow-core --test table_khmer_compat -- --ignored --nocapture`).
#[test]
#[ignore]
fn consume_throughput() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
    let reads: Vec<Vec<u8>> =
        (0..500_000).map(|_| (0..120).map(|_| b"ACGT"[rng.random_range(0..4)]).collect()).collect();
    let table = KhmerTable::new(20, HashKind::TwoBit, StorageKind::Byte, 100_000_000, 4).unwrap();
    let (start, cpu_start) = (std::time::Instant::now(), thread_cpu_seconds());
    let kmers: u64 = reads.iter().map(|r| table.consume(r)).sum();
    let (secs, cpu) = (start.elapsed().as_secs_f64(), thread_cpu_seconds() - cpu_start);
    let rate = |s: f64| kmers as f64 / s / 1e6;
    eprintln!("{kmers} k-mers: wall {secs:.2} s ({:.1} M/s), CPU {cpu:.2} s ({:.1} M/s)", rate(secs), rate(cpu));
    assert_eq!(kmers, 500_000 * 101);
}

/// CPU time of the calling thread (the machine may be shared, so wall time is noisy).
fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the valid timespec we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}
