//! BlockedTable: exact counts without collisions, saturation, thread equivalence, the native
//! file format (save/load, mmap load, file-backed counting, corruption), and AnyTable.

use kmerflow_core::table::{
    AllocOptions, AnyTable, BlockedParams, BlockedTable, CounterWidth, CountingTable, HashKind, KhmerTable, Layout,
    StorageKind,
};
use rand::{Rng, SeedableRng};
use std::collections::HashMap;

fn random_reads(n: usize, len: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
    (0..n).map(|_| (0..len).map(|_| b"ACGT"[rng.random_range(0..4)]).collect()).collect()
}

fn revcomp(s: &[u8]) -> Vec<u8> {
    s.iter()
        .rev()
        .map(|&b| match b {
            b'A' => b'T',
            b'T' => b'A',
            b'C' => b'G',
            _ => b'C',
        })
        .collect()
}

/// Exact counts of canonical k-mers (the smaller of a k-mer and its reverse complement).
fn exact_counts(reads: &[Vec<u8>], k: usize) -> HashMap<Vec<u8>, u32> {
    let mut counts = HashMap::new();
    for kmer in reads.iter().flat_map(|r| r.windows(k)) {
        let rc = revcomp(kmer);
        *counts.entry(kmer.min(&rc[..]).to_vec()).or_insert(0) += 1;
    }
    counts
}

fn path_in(dir: &tempfile::TempDir, name: &str) -> String {
    dir.path().join(name).to_str().unwrap().to_string()
}

#[test]
fn counts_are_exact_without_collisions_for_all_k_and_widths() {
    for k in [21, 33, 63, 64, 100] {
        // Repeated reads give counts above 1; reverse complements share counters.
        let mut reads = random_reads(40, 150, k as u64);
        reads.extend(reads.clone().iter().take(10).map(|r| revcomp(r)));
        reads.extend(reads.clone().into_iter().take(5));
        let exact = exact_counts(&reads, k);
        for width in [CounterWidth::Bits8, CounterWidth::Bits4, CounterWidth::Bits1] {
            let table = BlockedTable::new(k, 4 << 20, width, 4).unwrap();
            let n: u64 = reads.iter().map(|r| table.consume(r)).sum();
            assert_eq!(n, (reads.len() * (150 - k + 1)) as u64);
            for (kmer, &count) in &exact {
                let h = table.hash_kmer(kmer).unwrap();
                assert_eq!(table.get_hash(h), count.min(width.max_count()), "k = {k}, {width:?}");
                assert_eq!(table.get_hash(table.hash_kmer(&revcomp(kmer)).unwrap()), table.get_hash(h));
            }
            assert_eq!(table.n_unique_kmers(), exact.len() as u64, "k = {k}, {width:?}");
            let absent = random_reads(50, k, 1000 + k as u64);
            let hits = absent.iter().filter(|a| table.get_hash(table.hash_kmer(a).unwrap()) > 0).count();
            assert_eq!(hits, 0, "k = {k}, {width:?}");
        }
    }
}

#[test]
fn counters_saturate_without_wrapping() {
    let read = random_reads(1, 40, 3).pop().unwrap();
    for (width, max) in [(CounterWidth::Bits8, 255), (CounterWidth::Bits4, 15), (CounterWidth::Bits1, 1)] {
        let shared = BlockedTable::new(21, 1 << 20, width, 4).unwrap();
        let mut exclusive = BlockedTable::new(21, 1 << 20, width, 4).unwrap();
        for _ in 0..300 {
            shared.consume(&read);
            exclusive.consume_exclusive(&read);
        }
        let mut counts = Vec::new();
        shared.kmer_counts(&read, &mut counts);
        assert!(counts.iter().all(|&c| c == max), "{width:?}: {counts:?}");
        assert_eq!(shared.raw_bytes(), exclusive.raw_bytes(), "{width:?}");
        assert_eq!(shared.occupancy(), exclusive.occupancy());
        assert_eq!(shared.occupancy().added, 300 * 20);
    }
}

#[test]
fn threads_give_the_table_of_one_thread() {
    let reads = random_reads(3000, 100, 11);
    for width in [CounterWidth::Bits8, CounterWidth::Bits4, CounterWidth::Bits1] {
        // A small table so that lines are shared and counters saturate.
        let params = BlockedParams::new(15, 64 * 500, width, 3);
        let mut single = BlockedTable::with_params(params, AllocOptions::default()).unwrap();
        for chunk in reads.chunks(64) {
            single.consume_many_exclusive(chunk.iter().map(Vec::as_slice));
        }
        for threads in 2..=4 {
            let shared = BlockedTable::with_params(params, AllocOptions::default()).unwrap();
            std::thread::scope(|scope| {
                for part in reads.chunks(reads.len().div_ceil(threads)) {
                    let shared = &shared;
                    scope.spawn(move || {
                        for c in part.chunks(7) {
                            shared.consume_many(c.iter().map(Vec::as_slice));
                        }
                    });
                }
            });
            assert_eq!(shared.raw_bytes(), single.raw_bytes(), "{threads} threads, {width:?}");
            assert_eq!(shared.n_occupied(), single.n_occupied());
            assert_eq!(shared.occupancy().added, single.occupancy().added);
        }
    }
}

#[test]
fn queries_agree_with_counts() {
    let reads = random_reads(20, 80, 5);
    let table = BlockedTable::new(21, 1 << 20, CounterWidth::Bits8, 4).unwrap();
    for r in &reads[..10] {
        table.consume(r);
    }
    table.consume(&reads[0]);
    let mut hashes = Vec::new();
    table.kmer_hashes(&reads[0], &mut hashes);
    let mut counts = Vec::new();
    table.counts_for_hashes(&hashes, &mut counts);
    assert!(counts.iter().all(|&c| c == 2));
    assert_eq!(table.median_count(&reads[0]), Some((2, 2.0, 0.0)));
    assert!(table.median_at_least(&reads[0], 2) && !table.median_at_least(&reads[0], 3));
    assert!(table.median_at_least_hashes(&hashes, 2));
    // A read whose second half is new: trimmed where the unseen k-mers begin.
    let mut mixed = reads[0][..40].to_vec();
    mixed.extend_from_slice(&reads[15][..40]);
    assert_eq!(table.trim_on_abundance(&mixed, 1), 40);
    assert_eq!(table.trim_below_abundance(&reads[15], 0), reads[15].len());
    assert_eq!(table.median_count(b"ACGT"), None);
}

#[test]
fn save_and_mmap_load_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let reads = random_reads(500, 120, 8);
    for (k, width) in [(21, CounterWidth::Bits8), (63, CounterWidth::Bits4), (100, CounterWidth::Bits1)] {
        let table = BlockedTable::new(k, 200_000, width, 5).unwrap();
        for r in &reads {
            table.consume(r);
        }
        let path = path_in(&dir, &format!("t{k}.kf"));
        table.save(&path).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 4096 + table.params().data_bytes());
        let loaded = BlockedTable::load(&path).unwrap();
        assert_eq!(loaded.params(), table.params());
        assert_eq!(loaded.occupancy(), table.occupancy());
        assert_eq!(loaded.raw_bytes(), table.raw_bytes());
        let mut a = Vec::new();
        let mut b = Vec::new();
        table.kmer_counts(&reads[3], &mut a);
        loaded.kmer_counts(&reads[3], &mut b);
        assert_eq!(a, b);
        // The map is copy-on-write: updates work and never reach the file.
        let before = std::fs::read(&path).unwrap();
        loaded.consume(&random_reads(1, 120, 99)[0]);
        assert!(loaded.raw_bytes() != table.raw_bytes());
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }
}

#[test]
fn file_backed_table_counts_into_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = path_in(&dir, "backed.kf");
    let reads = random_reads(300, 100, 9);
    let params = BlockedParams::new(31, 3 << 20, CounterWidth::Bits8, 4);
    let (mut backed, file) = BlockedTable::create_file_backed(&path, params).unwrap();
    let reference = BlockedTable::with_params(params, AllocOptions::default()).unwrap();
    for chunk in reads.chunks(16) {
        backed.consume_many_exclusive(chunk.iter().map(Vec::as_slice));
        reference.consume_many(chunk.iter().map(Vec::as_slice));
    }
    // Not finished yet: the final name does not exist, and the temporary says it is unfinished.
    assert!(!std::path::Path::new(&path).exists());
    let names = || std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().path()).collect::<Vec<_>>();
    let [temp] = &names()[..] else { panic!("one temporary file: {:?}", names()) };
    assert!(temp.file_name().unwrap().to_str().unwrap().starts_with(".backed.kf.tmp-"), "{temp:?}");
    let err = BlockedTable::load(temp.to_str().unwrap()).err().unwrap().to_string();
    assert!(err.contains("never finished"), "{err}");
    backed.finish(file).unwrap();
    assert_eq!(names(), vec![dir.path().join("backed.kf")], "renamed into place");
    let loaded = BlockedTable::load(&path).unwrap();
    assert_eq!(loaded.raw_bytes(), reference.raw_bytes());
    assert_eq!(loaded.occupancy(), reference.occupancy());
    let anonymous = BlockedTable::new(31, 4096, CounterWidth::Bits8, 4).unwrap();
    let (_, other) = BlockedTable::create_file_backed(&path_in(&dir, "other.kf"), params).unwrap();
    assert!(anonymous.finish(other).unwrap_err().to_string().contains("not file-backed"));
    assert_eq!(names().len(), 1, "an unfinished file-backed table leaves nothing behind");
}

#[test]
fn corrupt_files_are_refused_with_the_file_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = path_in(&dir, "c.kf");
    let table = BlockedTable::new(21, 100_000, CounterWidth::Bits8, 4).unwrap();
    for r in random_reads(100, 100, 1) {
        table.consume(&r);
    }
    table.save(&path).unwrap();
    let good = std::fs::read(&path).unwrap();
    let check = |bytes: &[u8], want: &str| {
        std::fs::write(&path, bytes).unwrap();
        let err = BlockedTable::load(&path).err().expect("corrupt file loaded").to_string();
        assert!(err.starts_with(&path) && err.contains(want), "{err}");
    };
    for at in [4096, 4096 + 7777, good.len() - 1] {
        let mut flipped = good.clone();
        flipped[at] ^= 0x10;
        check(&flipped, "data checksum mismatch");
    }
    let mut flipped = good.clone();
    flipped[30] ^= 1;
    check(&flipped, "header checksum mismatch");
    check(&good[..good.len() - 64], "truncated");
    check(&good[..100], "too short");
    check(b"not a table at all", "too short");
    let mut other = good.clone();
    other[..8].copy_from_slice(b"KMERFLOX");
    check(&other, "bad magic");
    let missing = path_in(&dir, "missing.kf");
    assert!(BlockedTable::load(&missing).err().unwrap().to_string().contains(&missing));
}

#[test]
fn any_table_dispatches_and_loads_both_formats() {
    let dir = tempfile::tempdir().unwrap();
    let reads = random_reads(50, 100, 4);
    let khmer = AnyTable::Khmer(KhmerTable::new(21, HashKind::TwoBit, StorageKind::Byte, 100_003, 4).unwrap());
    let blocked = AnyTable::Blocked(BlockedTable::new(21, 1 << 20, CounterWidth::Bits8, 4).unwrap());
    for (table, name) in [(khmer, "a.ct"), (blocked, "a.kf")] {
        fn fill(t: &impl CountingTable, reads: &[Vec<u8>]) -> u64 {
            t.consume_many(reads.iter().map(Vec::as_slice))
        }
        assert_eq!(fill(&table, &reads), 50 * 80);
        let mut hashes = Vec::new();
        table.kmer_hashes(&reads[0], &mut hashes);
        assert!(hashes.iter().all(|&h| table.get_hash(h) == 1));
        let path = path_in(&dir, name);
        table.save(&path).unwrap();
        let loaded = AnyTable::load(&path, HashKind::TwoBit).unwrap();
        assert_eq!(loaded.layout(), table.layout());
        assert_eq!(loaded.median_count(&reads[1]).unwrap().0, 1);
    }
    assert_eq!("blocked".parse::<Layout>().unwrap(), Layout::Blocked);
    assert!("dense".parse::<Layout>().unwrap_err().to_string().contains("dense"));
}
