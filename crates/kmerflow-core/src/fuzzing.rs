//! The bodies of the fuzz targets (`fuzz/fuzz_targets/*.rs`, run with `cargo fuzz`) as plain
//! functions, so that a stable `cargo test` also runs them over seed inputs and a few thousand
//! deterministic mutations of them (the quick smoke run of CI).
//!
//! Every body accepts any bytes: the code under test may return an error, but must not panic,
//! hang or allocate what the input merely claims; what it returns must be consistent.

use crate::io::{FastxReader, PairMode, PairedReader};
use crate::table::CountingTable;
use crate::table::{khmer_format, native_format, HashKind};
use std::io::Cursor;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

/// The record parser: byte 0 picks the chunk size (1..=256 bytes, so that records straddle
/// chunks everywhere), the rest is the input. Every record read has a non-empty sequence and,
/// for FASTQ, qualities of the same length; record numbers follow each other.
pub fn fastx_records(data: &[u8]) {
    let Some((&chunk, text)) = data.split_first() else { return };
    let Ok(mut reader) = FastxReader::from_stream("fuzz", Box::new(Cursor::new(text.to_vec())), usize::from(chunk) + 1)
    else {
        return;
    };
    let mut next = 1;
    while let Ok(Some(batch)) = reader.next_batch() {
        assert_eq!(batch.first_record_number(), next);
        for rec in batch.iter() {
            assert!(!rec.seq.is_empty());
            if let Some(qual) = rec.qual {
                assert_eq!(qual.len(), rec.seq.len());
            }
        }
        next += batch.len() as u64;
    }
}

/// The pairing logic over one interleaved input: byte 0 picks the mode and the minimum
/// length, byte 1 the chunk size, the rest is the input. Every record is in at most one
/// bundle, bundles are in order, and a pair's mates are consecutive.
pub fn pairing(data: &[u8]) {
    let [mode, chunk, text @ ..] = data else { return };
    let pair_mode = [PairMode::BrokenPaired, PairMode::ForceSingle, PairMode::RequirePaired][usize::from(mode % 3)];
    let min_length = (mode / 3 % 4 > 0).then_some(usize::from(mode / 12));
    let Ok(reader) = FastxReader::from_stream("fuzz", Box::new(Cursor::new(text.to_vec())), usize::from(*chunk) + 1)
    else {
        return;
    };
    let mut paired = PairedReader::new(reader, pair_mode, min_length);
    while let Ok(Some(batch)) = paired.next_batch() {
        let mut last = None;
        for bundle in &batch.bundles {
            assert!(last.is_none_or(|l| bundle.first > l));
            last = Some(bundle.second.unwrap_or(bundle.first));
            if let Some(second) = bundle.second {
                assert_eq!(second, bundle.first + 1);
                assert!(pair_mode != PairMode::ForceSingle);
            }
            assert!(last.is_some_and(|l| l < batch.batch.len()));
        }
    }
}

/// khmer's table loader (`.ct`, `.ht`, gzip or not) on the bytes as a file. A table that
/// loads answers lookups.
pub fn khmer_table(data: &[u8]) {
    with_file(data, |path| {
        if let Ok(table) =
            khmer_format::load(path, HashKind::TwoBit, Default::default(), &crate::run::CancelToken::new())
        {
            for hash in [0, 1, u64::MAX, 0x5555_5555] {
                table.get_hash(hash);
            }
        }
    });
}

/// kmerflow's blocked-table loader on the bytes as a file, its checksums sealed first (else
/// nearly every mutation stops at a checksum; the mismatch paths have unit tests). A table
/// that loads answers lookups.
pub fn native_table(data: &[u8]) {
    let mut data = data.to_vec();
    native_format::seal_checksums(&mut data);
    with_file(&data, |path| {
        if let Ok(table) = native_format::load(path) {
            for hash in [0, 1, u64::MAX, 0x5555_5555] {
                table.get_hash(hash);
            }
        }
    });
}

/// Calls `f` with the path of a temporary file holding `data` (the loaders read files).
fn with_file(data: &[u8], f: impl FnOnce(&str)) {
    static SERIAL: AtomicU64 = AtomicU64::new(0);
    let name = format!("kmerflow-fuzz-{}-{}", std::process::id(), SERIAL.fetch_add(1, Ordering::Relaxed));
    let path: PathBuf = std::env::temp_dir().join(name);
    std::fs::write(&path, data).expect("writing the fuzz input to the temporary directory");
    f(path.to_str().expect("a UTF-8 temporary path"));
    let _ = std::fs::remove_file(&path);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::{BlockedTable, CounterWidth, KhmerTable, StorageKind};
    use rand::{Rng, SeedableRng};

    /// Mutations per seed: 300 (a quick deterministic run), or `KMERFLOW_FUZZ_MUTATIONS` for a
    /// longer one where no nightly toolchain is at hand.
    fn mutations() -> usize {
        std::env::var("KMERFLOW_FUZZ_MUTATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(300)
    }

    /// Runs `body` on every seed and on [`mutations`] mutations of each (bit flips, byte
    /// changes, insertions, deletions, truncation, duplication of a range, extreme integers).
    fn smoke(seeds: &[Vec<u8>], body: fn(&[u8])) {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(11);
        for seed in seeds {
            body(seed);
            for _ in 0..mutations() {
                let mut data = seed.clone();
                for _ in 0..rng.random_range(1..4) {
                    mutate(&mut data, &mut rng);
                }
                body(&data);
            }
        }
    }

    fn mutate(data: &mut Vec<u8>, rng: &mut impl Rng) {
        if data.is_empty() {
            data.push(rng.random());
            return;
        }
        let at = rng.random_range(0..data.len());
        match rng.random_range(0..7) {
            0 => data[at] ^= 1 << rng.random_range(0..8),
            1 => data[at] = rng.random(),
            2 => data.insert(at, *b"@>+\n\r\0ACGTN".get(rng.random_range(0..11)).expect("in range")),
            3 => {
                data.remove(at);
            }
            4 => data.truncate(at),
            5 => {
                let end = rng.random_range(at..=data.len().min(at + 64));
                let copy = data[at..end].to_vec();
                data.splice(at..at, copy);
            }
            _ => {
                let value: u64 = [0, 1, 0xff, 0xffff_ffff, u64::MAX, 1 << 62][rng.random_range(0..6)];
                let end = (at + 8).min(data.len());
                data[at..end].copy_from_slice(&value.to_le_bytes()[..end - at]);
            }
        }
    }

    fn text_seeds() -> Vec<Vec<u8>> {
        let texts: [&[u8]; 6] = [
            b"@r1/1\nACGTACGTAC\n+\nIIIIIIIIII\n@r1/2\nTTGCA\n+\nIIIII\n@s\nGG\n+\n##\n",
            b"@a 1:N:0:x\r\nACGT\r\n+\r\nIIII\r\n@a 2:N:0:x\r\nAC\r\n+\r\nII\r\n",
            b">a/1\nACGT\nAC\n\n>a/2\nGGGG\n>b\nN\n",
            b"\n\n>x\nA\n",
            b"@q\nA\n+\n@\n@q2\nC\n+\n+\n",
            b">lone\n",
        ];
        // Byte 0 (and 1) of a body are its options: every seed with a few of them.
        texts.iter().flat_map(|t| [0u8, 3, 17, 255].map(|o| [&[o, o / 2][..], t].concat())).collect()
    }

    fn file_bytes(save: impl FnOnce(&str)) -> Vec<u8> {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("t");
        save(path.to_str().expect("UTF-8"));
        std::fs::read(&path).expect("the saved table")
    }

    #[test]
    fn fastx_records_smoke() {
        smoke(&text_seeds(), fastx_records);
    }

    #[test]
    fn pairing_smoke() {
        smoke(&text_seeds(), pairing);
    }

    #[test]
    fn khmer_table_smoke() {
        let seeds: Vec<Vec<u8>> = [(StorageKind::Byte, "t"), (StorageKind::Nibble, "t"), (StorageKind::Bit, "t")]
            .into_iter()
            .map(|(storage, _)| {
                let mut table = KhmerTable::new(5, HashKind::TwoBit, storage, 61, 2).expect("valid parameters");
                table.consume_exclusive(b"ACGTACGGTACCA");
                file_bytes(|p| table.save(p).expect("saved"))
            })
            .collect();
        smoke(&seeds, khmer_table);
    }

    #[test]
    fn native_table_smoke() {
        let mut table = BlockedTable::new(7, 64 * 4, CounterWidth::Bits4, 2).expect("valid parameters");
        table.consume_exclusive(b"ACGTACGGTACCAGT");
        let seed = file_bytes(|p| native_format::save(&table, p, &crate::run::RunContext::new()).expect("saved"));
        smoke(&[seed], native_table);
    }
}
