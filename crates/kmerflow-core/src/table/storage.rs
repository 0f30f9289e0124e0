//! Counter layouts of khmer's storages (docs/khmer-compat.md §2.4–2.6) as atomic operations on bytes.
//!
//! Every update is a single atomic read-modify-write of one byte, so concurrent adds never lose
//! an increment and never wrap: the byte counter uses a compare-and-swap loop that stops at 255
//! (a plain `fetch_add` could push 255 to 0), the nibble counter a compare-and-swap loop on the
//! byte holding both nibbles, and the bit storage an atomic OR. The final value of every bin is
//! therefore min(max, number of adds that hit it), whatever the thread interleaving.
//!
//! A plain `fetch_add` after a check that the counter is below 255 is not used: two threads can
//! both see 254, and undoing the wrap of the second one races with a third thread that would see
//! the wrapped 0 and count the bin as newly occupied. A locked `fetch_add` costs the same as a
//! locked compare-and-swap that succeeds, so the loop (which retries only on a real race) stays.
//!
//! Callers that hold the table exclusively (`&mut`) use [`Cells::increment_exclusive`]: a plain
//! load and store, with no locked instruction, which lets the CPU overlap many updates.

use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

/// One storage layout: how bins map to bytes and how a bin is counted.
pub(crate) trait Cells {
    /// Largest count a bin holds.
    const MAX: u8;
    /// Whether the bigcount overflow map applies (byte storage only).
    const BIGCOUNT: bool;
    /// Bytes of a table with `size` bins.
    fn bytes_for(size: u64) -> usize;
    /// Byte holding `bin`.
    fn byte_of(bin: u64) -> usize;
    /// Saturating increment of `bin`; returns the previous count.
    fn increment(mem: &[AtomicU8], bin: u64) -> u8;
    /// The same increment for a caller that is the only one accessing `mem` (not atomic as a
    /// whole: a concurrent writer could lose an update).
    fn increment_exclusive(mem: &[AtomicU8], bin: u64) -> u8;
    /// Current count of `bin`.
    fn count(mem: &[AtomicU8], bin: u64) -> u8;
    /// Sets `bin` to `value` (at most [`Cells::MAX`]) by a plain load and store (single writer only).
    fn set_exclusive(mem: &[AtomicU8], bin: u64, value: u8);
    /// Adds the counters of `src` to those of `dst` (same layout), each sum saturating at
    /// [`Cells::MAX`]: what counting both inputs' k-mers into one table gives.
    fn add_counters(dst: &mut [u8], src: &[u8]);
    /// Number of non-zero counters in `bytes`.
    fn nonzero_counters(bytes: &[u8]) -> u64;
}

/// Saturating compare-and-swap increment of the field `(byte >> shift) & mask` (max `mask`).
#[inline(always)]
fn increment_field(cell: &AtomicU8, shift: u32, mask: u8) -> u8 {
    let mut current = cell.load(Relaxed);
    loop {
        let field = (current >> shift) & mask;
        if field == mask {
            return field;
        }
        match cell.compare_exchange_weak(current, current + (1 << shift), Relaxed, Relaxed) {
            Ok(_) => return field,
            Err(actual) => current = actual,
        }
    }
}

/// Saturating increment of a field by a plain load and store (single writer only).
#[inline(always)]
fn increment_field_exclusive(cell: &AtomicU8, shift: u32, mask: u8) -> u8 {
    let current = cell.load(Relaxed);
    let field = (current >> shift) & mask;
    // Branch-free: stores the unchanged byte when the field is saturated.
    cell.store(current + (u8::from(field != mask) << shift), Relaxed);
    field
}

/// 8-bit saturating counters (khmer type 1).
pub(crate) struct ByteCells;

impl Cells for ByteCells {
    const MAX: u8 = 255;
    const BIGCOUNT: bool = true;
    fn bytes_for(size: u64) -> usize {
        size as usize
    }
    #[inline(always)]
    fn byte_of(bin: u64) -> usize {
        bin as usize
    }
    #[inline(always)]
    fn increment(mem: &[AtomicU8], bin: u64) -> u8 {
        increment_field(&mem[bin as usize], 0, 0xFF)
    }
    #[inline(always)]
    fn increment_exclusive(mem: &[AtomicU8], bin: u64) -> u8 {
        increment_field_exclusive(&mem[bin as usize], 0, 0xFF)
    }
    #[inline(always)]
    fn count(mem: &[AtomicU8], bin: u64) -> u8 {
        mem[bin as usize].load(Relaxed)
    }
    #[inline(always)]
    fn set_exclusive(mem: &[AtomicU8], bin: u64, value: u8) {
        mem[bin as usize].store(value, Relaxed);
    }
    fn add_counters(dst: &mut [u8], src: &[u8]) {
        dst.iter_mut().zip(src).for_each(|(d, &s)| *d = d.saturating_add(s));
    }
    fn nonzero_counters(bytes: &[u8]) -> u64 {
        bytes.iter().map(|&b| u64::from(b != 0)).sum()
    }
}

/// 4-bit saturating counters, even bin in the high nibble (khmer type 7).
pub(crate) struct NibbleCells;

impl NibbleCells {
    #[inline(always)]
    fn shift(bin: u64) -> u32 {
        if bin & 1 == 0 {
            4
        } else {
            0
        }
    }
}

impl Cells for NibbleCells {
    const MAX: u8 = 15;
    const BIGCOUNT: bool = false;
    fn bytes_for(size: u64) -> usize {
        (size / 2 + 1) as usize
    }
    #[inline(always)]
    fn byte_of(bin: u64) -> usize {
        (bin / 2) as usize
    }
    #[inline(always)]
    fn increment(mem: &[AtomicU8], bin: u64) -> u8 {
        increment_field(&mem[Self::byte_of(bin)], Self::shift(bin), 0x0F)
    }
    #[inline(always)]
    fn increment_exclusive(mem: &[AtomicU8], bin: u64) -> u8 {
        increment_field_exclusive(&mem[Self::byte_of(bin)], Self::shift(bin), 0x0F)
    }
    #[inline(always)]
    fn count(mem: &[AtomicU8], bin: u64) -> u8 {
        (mem[Self::byte_of(bin)].load(Relaxed) >> Self::shift(bin)) & 0x0F
    }
    #[inline(always)]
    fn set_exclusive(mem: &[AtomicU8], bin: u64, value: u8) {
        let (cell, shift) = (&mem[Self::byte_of(bin)], Self::shift(bin));
        cell.store((cell.load(Relaxed) & !(0x0F << shift)) | (value << shift), Relaxed);
    }
    fn add_counters(dst: &mut [u8], src: &[u8]) {
        let add = |a: u8, b: u8| (a + b).min(0x0F);
        dst.iter_mut().zip(src).for_each(|(d, &s)| *d = (add(*d >> 4, s >> 4) << 4) | add(*d & 0x0F, s & 0x0F));
    }
    fn nonzero_counters(bytes: &[u8]) -> u64 {
        bytes.iter().map(|&b| u64::from(b & 0xF0 != 0) + u64::from(b & 0x0F != 0)).sum()
    }
}

/// One bit per bin, least significant bit first (khmer type 2).
pub(crate) struct BitCells;

impl Cells for BitCells {
    const MAX: u8 = 1;
    const BIGCOUNT: bool = false;
    fn bytes_for(size: u64) -> usize {
        (size / 8 + 1) as usize
    }
    #[inline(always)]
    fn byte_of(bin: u64) -> usize {
        (bin / 8) as usize
    }
    #[inline(always)]
    fn increment(mem: &[AtomicU8], bin: u64) -> u8 {
        let bit = 1u8 << (bin % 8);
        u8::from(mem[Self::byte_of(bin)].fetch_or(bit, Relaxed) & bit != 0)
    }
    #[inline(always)]
    fn increment_exclusive(mem: &[AtomicU8], bin: u64) -> u8 {
        let cell = &mem[Self::byte_of(bin)];
        let current = cell.load(Relaxed);
        cell.store(current | (1u8 << (bin % 8)), Relaxed);
        (current >> (bin % 8)) & 1
    }
    #[inline(always)]
    fn count(mem: &[AtomicU8], bin: u64) -> u8 {
        (mem[Self::byte_of(bin)].load(Relaxed) >> (bin % 8)) & 1
    }
    #[inline(always)]
    fn set_exclusive(mem: &[AtomicU8], bin: u64, value: u8) {
        let (cell, bit) = (&mem[Self::byte_of(bin)], 1u8 << (bin % 8));
        cell.store(if value > 0 { cell.load(Relaxed) | bit } else { cell.load(Relaxed) & !bit }, Relaxed);
    }
    fn add_counters(dst: &mut [u8], src: &[u8]) {
        dst.iter_mut().zip(src).for_each(|(d, &s)| *d |= s);
    }
    fn nonzero_counters(bytes: &[u8]) -> u64 {
        bytes.iter().map(|&b| u64::from(b.count_ones())).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(n: usize) -> Vec<AtomicU8> {
        (0..n).map(|_| AtomicU8::new(0)).collect()
    }

    #[test]
    fn byte_saturates_at_255() {
        let mem = cells(ByteCells::bytes_for(3));
        for i in 0..300u32 {
            assert_eq!(u32::from(ByteCells::increment(&mem, 2)), i.min(255));
        }
        assert_eq!(ByteCells::count(&mem, 2), 255);
        assert_eq!(ByteCells::count(&mem, 1), 0);
    }

    #[test]
    fn exclusive_increments_match_atomic_ones() {
        fn check<C: Cells>(size: u64) {
            let (shared, exclusive) = (cells(C::bytes_for(size)), cells(C::bytes_for(size)));
            for i in 0..300 * size {
                let bin = (i * 7 + i / 3) % size;
                assert_eq!(C::increment(&shared, bin), C::increment_exclusive(&exclusive, bin));
            }
            let bytes = |m: &[AtomicU8]| m.iter().map(|b| b.load(Relaxed)).collect::<Vec<_>>();
            assert_eq!(bytes(&shared), bytes(&exclusive));
        }
        check::<ByteCells>(13);
        check::<NibbleCells>(13);
        check::<BitCells>(13);
    }

    #[test]
    fn nibble_layout_and_saturation() {
        let mem = cells(NibbleCells::bytes_for(11));
        assert_eq!(mem.len(), 6);
        NibbleCells::increment(&mem, 0);
        for _ in 0..20 {
            NibbleCells::increment(&mem, 1);
        }
        assert_eq!(mem[0].load(Relaxed), 0x1F);
        assert_eq!((NibbleCells::count(&mem, 0), NibbleCells::count(&mem, 1)), (1, 15));
    }

    #[test]
    fn added_counters_saturate_like_counting_both() {
        fn check<C: Cells>(size: u64) {
            let (a, b, both) = (cells(C::bytes_for(size)), cells(C::bytes_for(size)), cells(C::bytes_for(size)));
            for i in 0..300 * size {
                let bin = (i * 7 + i / 3) % size;
                C::increment(if i % 3 == 0 { &a } else { &b }, bin);
                C::increment(&both, bin);
            }
            let bytes = |m: &[AtomicU8]| m.iter().map(|b| b.load(Relaxed)).collect::<Vec<_>>();
            let mut sum = bytes(&a);
            C::add_counters(&mut sum, &bytes(&b));
            assert_eq!(sum, bytes(&both));
            assert_eq!(C::nonzero_counters(&sum), (0..size).filter(|&bin| C::count(&both, bin) > 0).count() as u64);
        }
        check::<ByteCells>(13);
        check::<NibbleCells>(13);
        check::<BitCells>(13);
    }

    #[test]
    fn bits_are_lsb_first() {
        let mem = cells(BitCells::bytes_for(16));
        assert_eq!(mem.len(), 3);
        assert_eq!(BitCells::increment(&mem, 9), 0);
        assert_eq!(BitCells::increment(&mem, 9), 1);
        assert_eq!(mem[1].load(Relaxed), 0b10);
        assert_eq!((BitCells::count(&mem, 9), BitCells::count(&mem, 8)), (1, 0));
    }
}
