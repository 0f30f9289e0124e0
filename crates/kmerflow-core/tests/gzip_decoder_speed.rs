//! Speed of the gzip decompressors alone, as the baseline for the reading path.
//!
//! `KMERFLOW_BENCH_GZ=/path/file.fq.gz cargo test --release -p kmerflow-core --test
//! gzip_decoder_speed -- --ignored --nocapture` prints the time to decompress the file into a
//! sink with flate2 (zlib-rs, streaming, as `open_input` does) and with libdeflate (whole file
//! in memory), and through `open_input` plus the reader thread.

use std::io::{self, Read};
use std::time::Instant;

fn bench_file() -> Option<String> {
    std::env::var("KMERFLOW_BENCH_GZ").ok()
}

fn report(what: &str, bytes: u64, started: Instant) {
    let secs = started.elapsed().as_secs_f64();
    println!("{what}: {bytes} bytes in {secs:.3} s ({:.1} MB/s)", bytes as f64 / 1e6 / secs);
}

#[test]
#[ignore = "benchmark; needs KMERFLOW_BENCH_GZ"]
fn decompressors_alone() {
    let Some(path) = bench_file() else { return };
    let t = Instant::now();
    let file = io::BufReader::with_capacity(1 << 20, std::fs::File::open(&path).unwrap());
    let n = io::copy(&mut flate2::bufread::MultiGzDecoder::new(file), &mut io::sink()).unwrap();
    report("flate2 (zlib-rs) streaming", n, t);

    let t = Instant::now();
    let mut input = kmerflow_core::io::compress::open_input(&path, &kmerflow_core::run::RunContext::new()).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let k = input.read(&mut buf).unwrap();
        if k == 0 {
            break;
        }
        total += k as u64;
    }
    report("open_input", total, t);

    let t = Instant::now();
    let raw = std::fs::read(&path).unwrap();
    let mut out = vec![0u8; n as usize];
    let k = libdeflater::Decompressor::new().gzip_decompress(&raw, &mut out).unwrap_or(0);
    report("libdeflate whole-member (first member only for multi-member)", k as u64, t);
}
