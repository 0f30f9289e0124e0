//! khmer's read cleaning rules (docs/khmer-compat.md §1.4), branch-light by table lookup.

/// C++ read-parser rule: `ACGT` kept, `acgt` upper-cased, every other byte → `A`.
static PARSER_RULE: [u8; 256] = {
    let mut t = [b'A'; 256];
    let bases = *b"ACGT";
    let mut i = 0;
    while i < bases.len() {
        t[bases[i] as usize] = bases[i];
        t[bases[i].to_ascii_lowercase() as usize] = bases[i];
        i += 1;
    }
    t
};

/// screed rule: ASCII upper-case, then `N` → `A`; every other byte kept.
static SCREED_RULE: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = (i as u8).to_ascii_uppercase();
        i += 1;
    }
    t[b'N' as usize] = b'A';
    t[b'n' as usize] = b'A';
    t
};

fn map_into(seq: &[u8], out: &mut Vec<u8>, table: &[u8; 256]) {
    out.clear();
    out.extend(seq.iter().map(|&b| table[b as usize]));
}

/// The C++ read-parser rule (load-into-counting, filter-abund, trim-low-abund, ...):
/// `ACGT` kept, `acgt` upper-cased, every other byte becomes `A`. Writes into `out` (cleared).
pub fn clean_parser(seq: &[u8], out: &mut Vec<u8>) {
    map_into(seq, out, &PARSER_RULE);
}

/// The Python/screed rule (normalize-by-median, count-median): ASCII upper-case, then `N` → `A`;
/// other letters are kept (and hash as `G`). Writes into `out` (cleared).
pub fn clean_screed(seq: &[u8], out: &mut Vec<u8>) {
    map_into(seq, out, &SCREED_RULE);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parser_rule() {
        let mut out = vec![b'x'];
        clean_parser(b"ACGTRYACGTNNacgt.-n\xff", &mut out);
        assert_eq!(out, b"ACGTAAACGTAAACGTAAAA");
    }

    #[test]
    fn screed_rule() {
        let mut out = Vec::new();
        clean_screed(b"ACGTRYACGTNNacgtn.r", &mut out);
        assert_eq!(out, b"ACGTRYACGTAAACGTA.R");
    }
}
