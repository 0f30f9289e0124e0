//! Adding two tables of the same shape counter by counter, so that tables counted from parts of
//! an input (chunks counted on different workers) sum to the table of the whole input.
//!
//! What is exact: every counter of the sum equals the counter of one table that counted both
//! inputs (a counter holds min(max, adds that hit it), and min(max, min(max, a) + min(max, b))
//! = min(max, a + b); presence bits are ORed), so counts, `n_occupied` (recounted from the
//! counters) and saved counter bytes are those of counting the concatenated input, in any order
//! of addition. `n_unique_kmers` and the blocked layout's `added` are summed: `added` is exact,
//! `n_unique_kmers` is an upper bound (a k-mer new to each part counts once per part).
//!
//! khmer's bigcount (counts above 255 kept in a map, byte counters only, when the receiving
//! table has it on): a k-mer in either input's map gets the sum of its two counts (capped at
//! 65535), which is its count in one table when its counters are its own (no collision with
//! other k-mers). A k-mer whose count passes 255 only in the sum is not in either map, so it
//! reads 255, as it would in a table without bigcount.

use super::alloc::for_each_chunk;
use super::storage::{BitCells, ByteCells, Cells, NibbleCells};
use super::{AnyTable, CountingTable, KhmerTable, StorageKind, MAX_BIGCOUNT};
use crate::run::RunContext;
use crate::{Error, Result};
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

/// Adds the counters of `src` (read atomically: other threads may be counting into it; each
/// counter is then a value it held during the addition) to `dst`, counters laid out as `C`.
pub(super) fn add_memory<C: Cells>(dst: &mut [u8], src: &[AtomicU8]) {
    debug_assert_eq!(dst.len(), src.len());
    let mut offset = 0;
    for_each_chunk::<std::convert::Infallible>(src, |chunk| {
        C::add_counters(&mut dst[offset..offset + chunk.len()], chunk);
        offset += chunk.len();
        Ok(())
    })
    .unwrap_or_else(|never| match never {});
}

/// An error for tables whose shapes differ (`what` names the difference).
pub(super) fn shape_mismatch(what: &str, mine: impl std::fmt::Debug, theirs: impl std::fmt::Debug) -> Error {
    Error::invalid(format!("cannot add tables of different {what}: {mine:?} and {theirs:?}"))
}

impl KhmerTable {
    /// Adds `other`'s counters to this table's (see the module documentation for what is
    /// exact). Both tables need the same k, hash family, strand, storage and table sizes.
    pub fn add_table(&mut self, other: &KhmerTable) -> Result<()> {
        let checks = [
            (self.k != other.k, "k-mer sizes"),
            (self.hash != other.hash, "hash families"),
            (self.strand != other.strand, "strands"),
            (self.storage != other.storage, "storages"),
            (self.sizes != other.sizes, "table sizes"),
        ];
        if let Some((_, what)) = checks.iter().find(|(differ, _)| *differ) {
            let describe = |t: &KhmerTable| {
                format!("k={} {:?} {} {:?} sizes {:?}", t.k, t.hash, t.strand.describe(), t.storage, t.sizes)
            };
            return Err(shape_mismatch(what, describe(self), describe(other)));
        }
        let big = self.summed_bigcounts(other);
        with_cells!(self.storage, C => {
            for (mine, theirs) in self.tables.iter_mut().zip(&other.tables) {
                add_memory::<C>(mine.mem.bytes_mut(), theirs.mem.atomics());
            }
            let occupied = C::nonzero_counters(self.tables[0].mem.bytes_mut());
            self.occupied.store(occupied, Relaxed);
        });
        self.unique.fetch_add(other.n_unique_kmers(), Relaxed);
        self.bigcounts.get_mut().unwrap_or_else(|e| e.into_inner()).extend(big);
        Ok(())
    }

    /// The bigcount entries of the sum: every k-mer in either map with the sum of its counts,
    /// when this table keeps bigcounts (computed before the counters change).
    fn summed_bigcounts(&self, other: &KhmerTable) -> Vec<(u64, u16)> {
        if !(self.use_bigcount && self.storage == StorageKind::Byte) {
            return Vec::new();
        }
        let mut hashes: Vec<u64> = [self, other]
            .iter()
            .flat_map(|t| t.bigcounts.lock().unwrap_or_else(|e| e.into_inner()).keys().copied().collect::<Vec<_>>())
            .collect();
        hashes.sort_unstable();
        hashes.dedup();
        let sum = |hash| (self.get_hash(hash) + other.get_hash(hash)).min(u32::from(MAX_BIGCOUNT)) as u16;
        hashes.into_iter().map(|hash| (hash, sum(hash))).collect()
    }
}

impl AnyTable {
    /// Adds `other`'s counters to this table's ([`KhmerTable::add_table`],
    /// [`super::BlockedTable::add_table`]); both tables need the same layout and shape.
    pub fn add_table(&mut self, other: &AnyTable) -> Result<()> {
        match (self, other) {
            (AnyTable::Khmer(mine), AnyTable::Khmer(theirs)) => mine.add_table(theirs),
            (AnyTable::Blocked(mine), AnyTable::Blocked(theirs)) => mine.add_table(theirs),
            (mine, theirs) => Err(shape_mismatch("layouts", mine.layout(), theirs.layout())),
        }
    }
}

/// Loads the table files `inputs` (either layout; khmer files read with `khmer_hash`), adds
/// them in order (two tables in memory at a time) within the run `ctx` and returns the sum.
///
/// The hash family only decides how the sum hashes k-mers it is asked about later; the sum's
/// counters do not depend on it (see [`add_table_files`] to write the sum straight to a file).
pub fn sum_table_files(inputs: &[&str], khmer_hash: super::HashKind, ctx: &RunContext) -> Result<AnyTable> {
    let (first, rest) = inputs.split_first().ok_or_else(|| Error::invalid("no table to add"))?;
    let mut sum = AnyTable::load_in(first, khmer_hash, ctx)?;
    for path in rest {
        let table = AnyTable::load_in(path, khmer_hash, ctx)?;
        sum.add_table(&table).map_err(|e| Error::invalid(format!("{path}: {e}")))?;
    }
    Ok(sum)
}

/// Adds the table files `inputs` (either layout, all of the same shape; see
/// [`sum_table_files`]) and saves the sum to `output` in their format (gzip for a khmer
/// byte-counter table whose name ends in `.gz`). The output is written under a temporary name
/// and renamed into place, so it may be one of the inputs.
pub fn add_table_files(inputs: &[&str], output: &str, ctx: &RunContext) -> Result<()> {
    // Murmur tables accept every k a khmer file can hold; counters do not depend on the family.
    sum_table_files(inputs, super::HashKind::Murmur, ctx)?.save_in(output, ctx)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::{BlockedTable, CounterWidth, HashKind};

    fn counted(kmer: &[u8], times: usize, bigcount: bool) -> KhmerTable {
        let mut table = KhmerTable::new(kmer.len(), HashKind::TwoBit, StorageKind::Byte, 1000, 2).unwrap();
        table.set_use_bigcount(bigcount).unwrap();
        (0..times).for_each(|_| {
            table.consume(kmer);
        });
        table
    }

    #[test]
    fn bigcounts_of_either_input_are_summed() {
        let kmer = b"ACGTTGCAAG";
        for (a, b, expected) in [(300, 100, 400), (100, 300, 400), (300, 300, 600), (65000, 1000, 65535)] {
            let mut sum = counted(kmer, a, true);
            sum.add_table(&counted(kmer, b, true)).unwrap();
            let whole = counted(kmer, a + b, true);
            let hash = sum.hash_kmer(kmer).unwrap();
            assert_eq!((sum.get_hash(hash), whole.get_hash(hash)), (expected, expected), "{a} + {b}");
        }
    }

    #[test]
    fn a_count_passing_255_only_in_the_sum_saturates() {
        let kmer = b"ACGTTGCAAG";
        let mut sum = counted(kmer, 200, true);
        sum.add_table(&counted(kmer, 100, true)).unwrap();
        assert_eq!(sum.get_hash(sum.hash_kmer(kmer).unwrap()), 255);
        let mut plain = counted(kmer, 300, false);
        plain.add_table(&counted(kmer, 300, true)).unwrap();
        assert_eq!(plain.get_hash(plain.hash_kmer(kmer).unwrap()), 255);
    }

    #[test]
    fn tables_of_different_shapes_are_refused() {
        let mut table = KhmerTable::new(10, HashKind::TwoBit, StorageKind::Byte, 1000, 2).unwrap();
        let err = |other: &KhmerTable, table: &mut KhmerTable| table.add_table(other).unwrap_err().to_string();
        let other = KhmerTable::new(11, HashKind::TwoBit, StorageKind::Byte, 1000, 2).unwrap();
        assert!(err(&other, &mut table).contains("different k-mer sizes"));
        let other = KhmerTable::new(10, HashKind::TwoBit, StorageKind::Byte, 2000, 2).unwrap();
        assert!(err(&other, &mut table).contains("different table sizes"));
        let other = KhmerTable::new(10, HashKind::TwoBit, StorageKind::Nibble, 1000, 2).unwrap();
        assert!(err(&other, &mut table).contains("different storages"));
        let mut blocked = BlockedTable::new(10, 4096, CounterWidth::Bits8, 4).unwrap();
        let other = BlockedTable::new(10, 4096, CounterWidth::Bits8, 3).unwrap();
        assert!(blocked.add_table(&other).unwrap_err().to_string().contains("different shapes"));
        let mut any = AnyTable::Blocked(blocked);
        let khmer = AnyTable::Khmer(table);
        assert!(any.add_table(&khmer).unwrap_err().to_string().contains("different layouts"));
    }

    #[test]
    fn table_files_of_either_layout_sum() {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
        let reads: [&[u8]; 3] = [b"ACGTTGCAAGTTTGACCA", b"GGGTTGCAAGTTTGAC", b"TTTTTGCAAGTAAC"];
        let khmer = |part: &[&[u8]]| {
            let table = KhmerTable::new(8, HashKind::TwoBit, StorageKind::Byte, 101, 2).unwrap();
            part.iter().for_each(|r| {
                table.consume(r);
            });
            table
        };
        khmer(&reads[..1]).save(&path("a.ct")).unwrap();
        khmer(&reads[1..]).save(&path("b.ct")).unwrap();
        khmer(&reads).save(&path("whole.ct")).unwrap();
        add_table_files(&[&path("a.ct"), &path("b.ct")], &path("sum.ct"), &RunContext::new()).unwrap();
        assert_eq!(std::fs::read(path("sum.ct")).unwrap(), std::fs::read(path("whole.ct")).unwrap());

        let blocked = |part: &[&[u8]]| {
            let table = BlockedTable::new(8, 64 * 3, CounterWidth::Bits4, 2).unwrap();
            table.consume_many(part.iter().copied());
            table
        };
        blocked(&reads[..2]).save(&path("a.kf")).unwrap();
        blocked(&reads[2..]).save(&path("b.kf")).unwrap();
        let sum = sum_table_files(&[&path("a.kf"), &path("b.kf")], HashKind::TwoBit, &RunContext::new()).unwrap();
        let AnyTable::Blocked(sum) = sum else { panic!("a blocked file loads as a blocked table") };
        assert_eq!(sum.raw_bytes(), blocked(&reads).raw_bytes());
        let err = sum_table_files(&[&path("a.kf"), &path("b.ct")], HashKind::TwoBit, &RunContext::new()).err().unwrap();
        assert!(err.to_string().contains("b.ct: cannot add tables of different layouts"), "{err}");
        assert!(sum_table_files(&[], HashKind::TwoBit, &RunContext::new()).is_err());
    }
}
