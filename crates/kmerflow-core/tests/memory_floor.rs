//! Ignored measurement of this machine's floor for table updates: random read-modify-writes of
//! single bytes in 400 MB of huge-page memory, with nothing else per k-mer but the address
//! arithmetic. It bounds what any counting code can reach here (run with
//! `cargo test --release -p kmerflow-core --test memory_floor -- --ignored --nocapture`).
//!
//! Cases: khmer's layout (4 tables of 100 MB, a k-mer = 4 lines at unrelated places) updated
//! k-mer by k-mer or one table at a time; one line a k-mer (the blocked layout); two threads
//! each updating its own half of the lines with plain stores, or both updating all lines with
//! compare-and-swap.

use std::sync::atomic::{AtomicU8, Ordering::Relaxed};
use std::time::Instant;

const TABLE_BYTES: usize = 100_000_000;
const KMERS: usize = 30_000_000;
const AHEAD: usize = 32;

fn prefetch(cell: &AtomicU8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching is a hint and never faults; the address is a valid reference.
    unsafe {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((cell as *const AtomicU8).cast());
    }
}

/// `KMERS` pseudo-random hashes (xorshift).
fn hashes() -> Vec<u64> {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    (0..KMERS)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        })
        .collect()
}

/// Position of `hash` in `len` bytes (multiply-shift: cheaper than any remainder).
fn slot(hash: u64, len: usize) -> usize {
    ((u128::from(hash) * len as u128) >> 64) as usize
}

/// Plain (single-writer) update of the byte at `i`.
fn bump(mem: &[AtomicU8], i: usize) {
    mem[i].store(mem[i].load(Relaxed).saturating_add(1), Relaxed);
}

/// Updates every table at its slot for each hash, either k-mer by k-mer or table by table.
fn update_tables(tables: &[&[AtomicU8]], hashes: &[u64], table_by_table: bool) {
    let at = |t: usize, h: u64| slot(h.rotate_left(16 * t as u32), tables[t].len());
    if table_by_table {
        for (t, mem) in tables.iter().enumerate() {
            for (i, &h) in hashes.iter().enumerate() {
                if let Some(&next) = hashes.get(i + AHEAD) {
                    prefetch(&mem[at(t, next)]);
                }
                bump(mem, at(t, h));
            }
        }
    } else {
        for (i, &h) in hashes.iter().enumerate() {
            if let Some(&next) = hashes.get(i + AHEAD) {
                (0..tables.len()).for_each(|t| prefetch(&tables[t][at(t, next)]));
            }
            (0..tables.len()).for_each(|t| bump(tables[t], at(t, h)));
        }
    }
}

/// Updates 4 bytes of the line of each hash (as the blocked layout's 4 probes do), with plain
/// stores or compare-and-swap.
fn update_lines(mem: &[AtomicU8], hashes: &[u64], atomic: bool) {
    let line = |h: u64| slot(h, mem.len()) & !63;
    for (i, &h) in hashes.iter().enumerate() {
        if let Some(&next) = hashes.get(i + AHEAD) {
            prefetch(&mem[line(next)]);
        }
        for offset in [3, 17, 34, 58] {
            let cell = line(h) + offset;
            if atomic {
                let _ = mem[cell].fetch_update(Relaxed, Relaxed, |c| c.checked_add(1));
            } else {
                bump(mem, cell);
            }
        }
    }
}

fn report(label: &str, start: Instant, lines: usize) {
    let s = start.elapsed().as_secs_f64();
    eprintln!("  {label}: {s:.2} s, {:.1} ns a line", s * 1e9 / lines as f64);
}

#[test]
#[ignore]
fn random_line_updates() {
    let hashes = hashes();
    let maps: Vec<memmap2::MmapMut> = (0..4).map(|_| huge_page_map(TABLE_BYTES)).collect();
    let tables: Vec<&[AtomicU8]> = maps.iter().map(as_atomics).collect();

    let start = Instant::now();
    update_tables(&tables, &hashes, false);
    report("khmer layout, 4 tables k-mer by k-mer", start, 4 * KMERS);
    let start = Instant::now();
    update_tables(&tables, &hashes, true);
    report("khmer layout, one table at a time", start, 4 * KMERS);

    let one = huge_page_map(4 * TABLE_BYTES);
    let mem = as_atomics(&one);
    let start = Instant::now();
    update_lines(mem, &hashes, false);
    report("one line a k-mer (4 bytes in it), 1 thread", start, KMERS);
    let halves: Vec<Vec<u64>> = (0..2)
        .map(|half| hashes.iter().copied().filter(|&h| slot(h, mem.len()) * 2 / mem.len() == half).collect())
        .collect();
    let start = Instant::now();
    std::thread::scope(|s| {
        for mine in &halves {
            s.spawn(move || update_lines(mem, mine, false));
        }
    });
    report("one line a k-mer, 2 threads owning half the lines each, plain stores (wall)", start, KMERS);
    let start = Instant::now();
    std::thread::scope(|s| {
        for half in hashes.chunks(KMERS / 2) {
            s.spawn(move || update_lines(mem, half, true));
        }
    });
    report("one line a k-mer, 2 threads sharing all lines, compare-and-swap (wall)", start, KMERS);
}

/// `len` zero bytes of anonymous memory advised for huge pages and faulted in (as the tables'
/// memory is).
fn huge_page_map(len: usize) -> memmap2::MmapMut {
    let mut map = memmap2::MmapMut::map_anon(len).unwrap();
    // SAFETY: advice on a mapping we own; errors only mean no huge pages.
    unsafe { libc::madvise(map.as_mut_ptr().cast(), len, libc::MADV_HUGEPAGE) };
    map.iter_mut().step_by(4096).for_each(|b| *b = 0);
    map
}

/// A map's bytes as atomics.
fn as_atomics(map: &memmap2::MmapMut) -> &[AtomicU8] {
    // SAFETY: AtomicU8 has the layout of u8; the bytes are only accessed through these views
    // while they live (the map is not touched as plain bytes).
    unsafe { std::slice::from_raw_parts(map.as_ptr().cast(), map.len()) }
}
