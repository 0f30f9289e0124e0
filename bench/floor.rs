//! The floor of the ordered stage: random independent byte increments over a table of 0.1-8 GB,
//! with the line of the update `distance` updates ahead prefetched (0 = none), on 2 MiB-aligned
//! memory advised for transparent huge pages (or 4 KiB pages with `--no-huge`).
//!
//! Build and run (std only, no crates):
//!
//! ```text
//! rustc -O bench/floor.rs -o /tmp/floor
//! /tmp/floor [--no-huge] SIZE_MB...
//! ```
//!
//! Prints one line per table size and distance: ns per update (CPU time of this thread), and the
//! share of the table on huge pages (AnonHugePages of its mapping, from /proc/self/smaps).

use std::time::Instant;

extern "C" {
    fn mmap(addr: *mut u8, len: usize, prot: i32, flags: i32, fd: i32, off: i64) -> *mut u8;
    fn munmap(addr: *mut u8, len: usize) -> i32;
    fn madvise(addr: *mut u8, len: usize, advice: i32) -> i32;
}

const PROT_RW: i32 = 0x1 | 0x2;
const MAP_PRIVATE_ANON: i32 = 0x02 | 0x20;
const MADV_HUGEPAGE: i32 = 14;
const MADV_NOHUGEPAGE: i32 = 15;
const HUGE: usize = 2 << 20;
const UPDATES: usize = 50_000_000;

/// A splitmix64 stream of indices below `len`.
fn indices(len: usize, n: usize) -> Vec<u32> {
    let mut x = 0x1234_5678_9abc_def0u64;
    (0..n)
        .map(|_| {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z ^ (z >> 31)) % (len as u64 / 64)) as u32
        })
        .collect()
}

/// AnonHugePages of the mapping that starts at or contains `addr`, in kB.
fn huge_kb(addr: usize) -> u64 {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap_or_default();
    let mut inside = false;
    for line in smaps.lines() {
        if let Some((range, _)) = line.split_once(' ') {
            if let Some((a, b)) = range.split_once('-') {
                if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) {
                    inside = a <= addr && addr < b;
                    continue;
                }
            }
        }
        if inside {
            if let Some(v) = line.strip_prefix("AnonHugePages:") {
                return v.trim().trim_end_matches(" kB").parse().unwrap_or(0);
            }
        }
    }
    0
}

fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks: f64 = fields.get(11).and_then(|u| u.parse().ok()).unwrap_or(0.0);
    ticks / 100.0
}

#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_prefetch(p as *const i8, std::arch::x86_64::_MM_HINT_T0)
    };
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let huge = !args.iter().any(|a| a == "--no-huge");
    let sizes: Vec<usize> = args.iter().filter_map(|a| a.parse::<usize>().ok()).collect();
    for mb in if sizes.is_empty() { vec![100, 1340, 4096] } else { sizes } {
        let len = mb << 20;
        let map_len = len + HUGE;
        let base = unsafe { mmap(std::ptr::null_mut(), map_len, PROT_RW, MAP_PRIVATE_ANON, -1, 0) };
        assert!(!base.is_null() && base as isize != -1, "mmap of {} MB failed", mb);
        let table = unsafe { base.add(base.align_offset(HUGE)) };
        unsafe { madvise(table, len, if huge { MADV_HUGEPAGE } else { MADV_NOHUGEPAGE }) };
        for page in (0..len).step_by(4096) {
            unsafe { table.add(page).write_volatile(1) };
        }
        let on_huge = huge_kb(table as usize) as f64 * 1024.0 / len as f64;
        let idx = indices(len, UPDATES);
        for distance in [0usize, 8, 16, 32, 64, 128, 256] {
            let (t0, c0) = (Instant::now(), cpu_seconds());
            for i in 0..UPDATES {
                if distance > 0 {
                    if let Some(&ahead) = idx.get(i + distance) {
                        prefetch(unsafe { table.add(ahead as usize * 64) });
                    }
                }
                unsafe {
                    let p = table.add(idx[i] as usize * 64);
                    p.write(p.read().wrapping_add(1));
                }
            }
            let (wall, cpu) = (t0.elapsed().as_secs_f64(), cpu_seconds() - c0);
            println!(
                "size {mb:>5} MB  huge pages {:>5.1}%  distance {distance:>3}  {:>6.1} ns/update cpu  {:>6.1} ns wall",
                on_huge * 100.0,
                cpu * 1e9 / UPDATES as f64,
                wall * 1e9 / UPDATES as f64
            );
        }
        unsafe { munmap(base, map_len) };
    }
}
