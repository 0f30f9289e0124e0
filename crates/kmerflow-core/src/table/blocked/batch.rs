//! The three-phase batch kernels ([`crate::table::batch`]) of the blocked layout: line `l`
//! belongs to owner `l mod owners`; a position's counter is identified by its line and slot.

use super::{probe_slots, BitCells, BlockedTable, ByteCells, Cells, CounterWidth, LineCells, NibbleCells, LINE_BYTES};
use crate::table::batch::{BatchLookup, BatchOutcome, BatchRules, BatchTable, SeenCounters};
use crate::table::{prefetch, visit_prefetched, Tally};

impl BlockedTable {
    /// Calls `visit(o, line)` for every k-mer `o` of `hashes` whose line `owner` owns and that
    /// `keep` accepts, in order, prefetching ahead ([`visit_prefetched`]).
    fn visit_owned_lines(
        &self,
        hashes: &[u64],
        owner: usize,
        owners: usize,
        keep: impl Fn(usize) -> bool,
        visit: impl FnMut(usize, u64),
    ) {
        let owned: Vec<(usize, u64)> = hashes
            .iter()
            .enumerate()
            .filter(|&(o, _)| keep(o))
            .map(|(o, &hash)| (o, self.line_of(hash)))
            .filter(|&(_, line)| line % owners as u64 == owner as u64)
            .collect();
        let mem = self.mem.atomics();
        visit_prefetched(&owned, |line| prefetch(&mem[line as usize * LINE_BYTES]), visit);
    }

    /// Calls `visit(q, counter)` for every position `q` of the owned k-mers that `keep` accepts
    /// (see [`BlockedTable::visit_owned_lines`]), `counter` being the counter's index in memory.
    fn visit_owned_counters<C: LineCells>(
        &self,
        hashes: &[u64],
        owner: usize,
        owners: usize,
        keep: impl Fn(usize) -> bool,
        mut visit: impl FnMut(usize, u64),
    ) {
        let (n, probes) = (hashes.len(), self.params.probes);
        self.visit_owned_lines(hashes, owner, owners, keep, |o, line| {
            let slots = probe_slots::<C>(hashes[o], probes);
            for (p, &slot) in slots[..probes].iter().enumerate() {
                visit(p * n + o, (line << C::SLOT_BITS) + u64::from(slot));
            }
        });
    }
}

impl BatchRules for BlockedTable {
    fn batch_probes(&self) -> usize {
        self.params.probes
    }

    fn counter_max(&self) -> u8 {
        self.params.width.max_count() as u8
    }

    fn occupancy_probes(&self) -> usize {
        self.params.probes
    }

    fn batch_uses_bigcount(&self) -> bool {
        false
    }

    fn bigcount_of(&self, _hash: u64) -> Option<u16> {
        None
    }
}

impl BatchTable for BlockedTable {
    fn batch_owners(&self, threads: usize) -> usize {
        threads.clamp(1, self.n_lines().max(1) as usize)
    }

    fn lookup_owned(&self, hashes: &[u64], lookup: &BatchLookup, owner: usize, owners: usize, seen: &mut SeenCounters) {
        seen.start(hashes.len() * self.params.probes);
        let mem = self.mem.atomics();
        with_width!(self.params.width, C => self.visit_owned_counters::<C>(hashes, owner, owners, |_| true, |q, counter| {
            let first = seen.first(counter, q as u32);
            lookup.put(q, C::count(mem, counter), first);
        }))
    }

    fn apply_owned(&self, hashes: &[u64], lookup: &BatchLookup, delta: &[u8], owner: usize, owners: usize) {
        let mem = self.mem.atomics();
        let (n, probes) = (hashes.len(), self.params.probes);
        let changed = |o: usize| (0..probes).any(|p| delta[p * n + o] > 0);
        with_width!(self.params.width, C => self.visit_owned_counters::<C>(hashes, owner, owners, changed, |q, counter| {
            if delta[q] > 0 {
                C::set_exclusive(mem, counter, lookup.base_at(q) + delta[q]);
            }
        }))
    }

    fn record_outcome(&self, outcome: &BatchOutcome) {
        self.record(Tally { occupied: outcome.occupied, unique: outcome.unique }, outcome.added);
    }

    fn counter_lines(&self) -> usize {
        1
    }

    #[inline(always)]
    fn prefetch_counters(&self, hash: u64) {
        prefetch(&self.mem.atomics()[self.line_of(hash) as usize * LINE_BYTES]);
    }

    #[inline(always)]
    fn least_in_place(&self, hash: u64) -> u8 {
        with_width!(self.params.width, C => self.count::<C>(self.mem.atomics(), hash, self.line_of(hash)) as u8)
    }

    #[inline(always)]
    fn add_in_place(&self, hash: u64, previous: &mut [u8]) {
        let (mem, line) = (self.mem.atomics(), self.line_of(hash));
        with_width!(self.params.width, C => {
            self.increment_probes::<C, true>(mem, hash, line, |p, before| previous[p] = before)
        })
    }
}
