//! Parser and decompression throughput (ignored by default; run with
//! `cargo test --release -p kmerflow-core --test io_speed -- --ignored parse_speed --nocapture`).

use kmerflow_core::io::compress::open_input;
use kmerflow_core::io::{FastxReader, OutputFile};
use std::io::{Read, Write};
use std::time::Instant;

/// Writes `bytes` of synthetic 150-bp FASTQ to `path` (kept between runs).
fn synthetic_fastq(path: &str, bytes: usize) {
    if std::fs::metadata(path).is_ok_and(|m| m.len() as usize >= bytes) {
        return;
    }
    let mut out = OutputFile::create(path).unwrap();
    let mut text = Vec::with_capacity(1 << 20);
    let (mut written, mut i) = (0, 0u64);
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    while written < bytes {
        text.clear();
        while text.len() < (1 << 20) - 400 {
            text.extend_from_slice(format!("@read{i} 1:N:0:ACGT\n").as_bytes());
            for _ in 0..150 {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                text.push(b"ACGT"[(state & 3) as usize]);
            }
            text.extend_from_slice(b"\n+\n");
            text.extend(std::iter::repeat_n(b'I', 150));
            text.push(b'\n');
            i += 1;
        }
        out.write_all(&text).unwrap();
        written += text.len();
    }
    out.finish().unwrap();
}

/// Reads every record of `path`; returns (records, bases, seconds).
fn parse_all(path: &str) -> (u64, u64, f64) {
    let start = Instant::now();
    let mut reader = FastxReader::open(path).unwrap();
    let (mut n, mut bases) = (0, 0);
    while let Some(batch) = reader.next_batch().unwrap() {
        for rec in batch.iter() {
            n += 1;
            bases += rec.seq.len() as u64;
        }
    }
    (n, bases, start.elapsed().as_secs_f64())
}

#[test]
#[ignore]
fn parse_speed() {
    let path = "/tmp/kmerflow-parse-speed.fq";
    synthetic_fastq(path, 300 << 20);
    let size = std::fs::metadata(path).unwrap().len() as f64;
    parse_all(path); // warm the page cache
    let (n, bases, secs) = parse_all(path);
    assert_eq!(bases, n * 150);
    println!("plain FASTQ: {n} records, {:.2} GB/s", size / secs / 1e9);

    let gz = "/tmp/kmerflow-parse-speed.fq.gz";
    synthetic_fastq(gz, 100 << 20);
    let start = Instant::now();
    let mut stream = open_input(gz, &kmerflow_core::run::RunContext::new()).unwrap();
    let mut buf = vec![0; 1 << 20];
    let mut total = 0usize;
    loop {
        let k = stream.read(&mut buf).unwrap();
        if k == 0 {
            break;
        }
        total += k;
    }
    let secs = start.elapsed().as_secs_f64();
    println!("gzip decode (zlib-rs): {:.0} MB/s of output", total as f64 / secs / 1e6);
    let (_, _, secs) = parse_all(gz);
    println!("gzip FASTQ parse: {:.0} MB/s of output", total as f64 / secs / 1e6);
}
