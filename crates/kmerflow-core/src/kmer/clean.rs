//! khmer's read cleaning rules (KHMER.md §1.4), branch-light by table lookup.

/// The C++ read-parser rule (load-into-counting, filter-abund, trim-low-abund, ...):
/// `ACGT` kept, `acgt` upper-cased, every other byte becomes `A`. Writes into `out` (cleared).
pub fn clean_parser(seq: &[u8], out: &mut Vec<u8>) {
    let _ = (seq, out);
    todo!()
}

/// The Python/screed rule (normalize-by-median, count-median): ASCII upper-case, then `N` → `A`;
/// other letters are kept (and hash as `G`). Writes into `out` (cleared).
pub fn clean_screed(seq: &[u8], out: &mut Vec<u8>) {
    let _ = (seq, out);
    todo!()
}
