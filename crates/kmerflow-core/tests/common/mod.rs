//! Helpers shared by the ignored measurement tests (`table_throughput`, `blocked_measure`):
//! the random-read generator and the wall/CPU rate printer.

use rand::{Rng, SeedableRng};
use std::time::Instant;

/// `n` random reads of `len` bases (A, C, G, T), the same for the same `seed`.
pub fn random_reads(n: usize, len: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
    (0..n).map(|_| (0..len).map(|_| b"ACGT"[rng.random_range(0..4)]).collect()).collect()
}

/// CPU time of the calling thread.
pub fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the valid timespec we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Runs `work` (returns the number of k-mers) and prints its wall and thread-CPU rates.
pub fn measure(label: &str, work: impl FnOnce() -> u64) -> u64 {
    let (start, cpu_start) = (Instant::now(), thread_cpu_seconds());
    let kmers = work();
    let (secs, cpu) = (start.elapsed().as_secs_f64(), thread_cpu_seconds() - cpu_start);
    let rate = |s: f64| kmers as f64 / s / 1e6;
    eprintln!(
        "  {label}: {kmers} k-mers, wall {secs:.2} s ({:.1} M/s), CPU {cpu:.2} s ({:.1} M/s)",
        rate(secs),
        rate(cpu)
    );
    kmers
}
