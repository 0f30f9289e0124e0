//! [`KmerSet`]: the set of k-mer hashes the graph walks test at every step (the tags, each
//! walk's visited k-mers), as one flat open-addressing array whose slot for a k-mer can be
//! prefetched before it is tested.

/// The marker of an empty slot; the k-mer hash equal to it is kept aside in a flag.
const EMPTY: u64 = u64::MAX;

/// Slots of a new or emptied set (at most half of them are used).
const MIN_SLOTS: usize = 64;

/// A set of k-mer hashes: linear probing in a power-of-two array of slots, at most half full,
/// a slot found by Fibonacci hashing (k-mer hashes are 2-bit encodings, not uniform).
#[derive(Debug, Clone)]
pub struct KmerSet {
    slots: Vec<u64>,
    /// 64 minus log2 of the number of slots: a key's home slot is the top bits of its product.
    shift: u32,
    len: usize,
    /// Whether the hash [`EMPTY`] is in the set.
    has_empty: bool,
}

impl Default for KmerSet {
    fn default() -> Self {
        Self::with_slots(MIN_SLOTS)
    }
}

impl KmerSet {
    /// An empty set of `slots` slots (a power of two).
    fn with_slots(slots: usize) -> Self {
        KmerSet { slots: vec![EMPTY; slots], shift: 64 - slots.trailing_zeros(), len: 0, has_empty: false }
    }

    /// An empty set with room for `n` hashes without growing.
    pub fn with_capacity(n: usize) -> Self {
        Self::with_slots(n.saturating_mul(2).next_power_of_two().max(MIN_SLOTS))
    }

    #[inline(always)]
    fn home(&self, key: u64) -> usize {
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    /// The slot holding `key`, or the empty slot where it would go.
    #[inline(always)]
    fn slot(&self, key: u64) -> usize {
        let mask = self.slots.len() - 1;
        let mut i = self.home(key);
        while self.slots[i] != key && self.slots[i] != EMPTY {
            i = (i + 1) & mask;
        }
        i
    }

    /// Whether `key` is in the set.
    #[inline(always)]
    pub fn contains(&self, key: u64) -> bool {
        if key == EMPTY {
            return self.has_empty;
        }
        self.slots[self.slot(key)] == key
    }

    /// Hints the CPU to fetch the slot where a lookup of `key` starts.
    #[inline(always)]
    pub fn prefetch(&self, key: u64) {
        crate::table::prefetch(&self.slots[self.home(key)]);
    }

    /// Adds `key`; false when it was there already.
    #[inline(always)]
    pub fn insert(&mut self, key: u64) -> bool {
        if key == EMPTY {
            let added = !self.has_empty;
            self.has_empty = true;
            self.len += usize::from(added);
            return added;
        }
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let i = self.slot(key);
        if self.slots[i] == key {
            return false;
        }
        self.slots[i] = key;
        self.len += 1;
        true
    }

    /// Doubles the slots, placing every hash again.
    fn grow(&mut self) {
        let old = std::mem::replace(self, Self::with_slots(self.slots.len() * 2));
        self.has_empty = old.has_empty;
        self.len = usize::from(old.has_empty);
        for key in old.slots.into_iter().filter(|&key| key != EMPTY) {
            let i = self.slot(key);
            self.slots[i] = key;
            self.len += 1;
        }
    }

    /// Number of hashes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the set holds no hash.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Empties the set; its slots are kept for the next use unless it is far larger than its
    /// contents needed (one huge walk must not slow every later clear).
    pub fn clear(&mut self) {
        if self.slots.len() > 8 * Self::with_capacity(self.len).slots.len() {
            *self = Self::default();
        } else {
            self.slots.fill(EMPTY);
            self.len = 0;
            self.has_empty = false;
        }
    }

    /// The hashes, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        let empty = self.has_empty.then_some(EMPTY);
        self.slots.iter().copied().filter(|&key| key != EMPTY).chain(empty)
    }
}

impl FromIterator<u64> for KmerSet {
    fn from_iter<I: IntoIterator<Item = u64>>(iter: I) -> Self {
        let iter = iter.into_iter();
        let mut set = Self::with_capacity(iter.size_hint().0);
        for key in iter {
            set.insert(key);
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustc_hash::FxHashSet;

    #[test]
    fn behaves_as_a_hash_set_through_growth_and_clears() {
        let mut set = KmerSet::default();
        let mut model = FxHashSet::default();
        // 2-bit-like keys in runs (the probing must cope with clustered keys), and the marker
        let keys: Vec<u64> =
            (0..5000u64).map(|i| if i % 997 == 0 { u64::MAX } else { (i / 7) << 40 | (i % 7) }).collect();
        for round in 0..3 {
            for &key in keys.iter().skip(round) {
                assert_eq!(set.insert(key), model.insert(key), "insert {key}");
            }
            assert_eq!(set.len(), model.len());
            for key in (0..6000u64).map(|i| (i / 7) << 40 | (i % 7)).chain([u64::MAX, 0, 1 << 63]) {
                assert_eq!(set.contains(key), model.contains(&key), "contains {key}");
            }
            let mut all: Vec<u64> = set.iter().collect();
            all.sort_unstable();
            let mut expected: Vec<u64> = model.iter().copied().collect();
            expected.sort_unstable();
            assert_eq!(all, expected);
            set.clear();
            model.clear();
            assert!(set.is_empty() && !set.contains(u64::MAX) && !set.contains(0));
        }
        // a set that had grown large shrinks back at the first clear of a small content
        set.insert(1);
        set.clear();
        assert_eq!(set.slots.len(), MIN_SLOTS);
    }
}
