//! Metagenome-like FASTQ reads for the scale benchmarks (`bench/scale.sh`, `bench/scale_threads.sh`;
//! generated, never shipped).
//!
//! ```text
//! cargo run --release -p kmerflow-cli --example gen_reads -- DIR GBP [GENOME_MBP] [pairs]
//! ```
//!
//! Writes `DIR/reads.fq` (single reads) or `DIR/reads_1.fq` and `DIR/reads_2.fq` (with `pairs`)
//! holding `GBP` Gbp of 150 bp reads in all. The community is 200 random genomes of
//! `GENOME_MBP` Mbp in all (default 20), each with a log-normal abundance (sigma 1.5), so that
//! coverage is uneven: a few genomes are covered hundreds of times, many a few times. Reads come
//! from random positions of a genome chosen by abundance x length, half of them
//! reverse-complemented (pairs: the two ends of a 300-500 bp fragment), with 1% substitution
//! errors. The same arguments give the same files; a few seconds per 0.3 Gbp.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

const READ_LEN: usize = 150;
const GENOMES: usize = 200;
const ERROR_PER_MILLE: u64 = 10;
const BASES: &[u8; 4] = b"ACGT";

/// splitmix64: a small, fast, deterministic generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in 0..n.
    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }

    /// Log-normal with median 1 and the given sigma (Box-Muller).
    fn lognormal(&mut self, sigma: f64) -> f64 {
        let (u, v) = (1.0 - self.unit(), self.unit());
        ((-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos() * sigma).exp()
    }
}

/// One read: `len` bases from `genome` at `pos`, reverse-complemented if `reverse`, with errors.
fn read_at(rng: &mut Rng, genome: &[u8], pos: usize, reverse: bool, out: &mut Vec<u8>) {
    let part = &genome[pos..pos + READ_LEN];
    let start = out.len();
    if reverse {
        out.extend(part.iter().rev().map(|&b| 3 - b));
    } else {
        out.extend_from_slice(part);
    }
    for base in &mut out[start..] {
        if rng.below(1000) < ERROR_PER_MILLE {
            *base = (*base + 1 + rng.below(3) as u8) % 4;
        }
        *base = BASES[*base as usize];
    }
}

fn fastq(out: &mut impl Write, id: u64, mate: &str, seq: &[u8]) -> std::io::Result<()> {
    writeln!(out, "@r{id}{mate}")?;
    out.write_all(seq)?;
    out.write_all(b"\n+\n")?;
    out.write_all(&[b'I'; READ_LEN])?;
    out.write_all(b"\n")
}

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: gen_reads DIR GBP [GENOME_MBP] [pairs]";
    let (Some(dir), Some(gbp)) = (args.first(), args.get(1).and_then(|g| g.parse::<f64>().ok())) else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let genome_bp = args.get(2).and_then(|m| m.parse::<f64>().ok()).unwrap_or(20.0) * 1e6;
    let pairs = args.iter().any(|a| a == "pairs");
    let mut rng = Rng(1);
    let lengths: Vec<f64> = (0..GENOMES).map(|_| rng.lognormal(0.5)).collect();
    let sum: f64 = lengths.iter().sum();
    let genomes: Vec<Vec<u8>> = lengths
        .iter()
        .map(|l| (0..((l / sum * genome_bp) as usize).max(1000)).map(|_| rng.below(4) as u8).collect())
        .collect();
    // Reads per genome follow abundance x length (coverage follows abundance alone).
    let mut cumulative = Vec::with_capacity(GENOMES);
    let mut total = 0.0;
    for g in &genomes {
        total += rng.lognormal(1.5) * g.len() as f64;
        cumulative.push(total);
    }
    std::fs::create_dir_all(dir)?;
    let names: &[&str] = if pairs { &["reads_1.fq", "reads_2.fq"] } else { &["reads.fq"] };
    let mut outs = names
        .iter()
        .map(|n| File::create(Path::new(dir).join(n)).map(|f| BufWriter::with_capacity(1 << 20, f)))
        .collect::<std::io::Result<Vec<_>>>()?;
    let n_reads = (gbp * 1e9 / READ_LEN as f64 / names.len() as f64) as u64;
    let mut seq = Vec::with_capacity(READ_LEN);
    for id in 0..n_reads {
        let pick = rng.unit() * total;
        let genome = &genomes[cumulative.partition_point(|&c| c < pick).min(GENOMES - 1)];
        let frag = if pairs { 300 + rng.below(201) as usize } else { READ_LEN };
        let pos = rng.below((genome.len() - frag + 1) as u64) as usize;
        seq.clear();
        if pairs {
            read_at(&mut rng, genome, pos, false, &mut seq);
            fastq(&mut outs[0], id, "/1", &seq)?;
            seq.clear();
            read_at(&mut rng, genome, pos + frag - READ_LEN, true, &mut seq);
            fastq(&mut outs[1], id, "/2", &seq)?;
        } else {
            let reverse = rng.below(2) == 1;
            read_at(&mut rng, genome, pos, reverse, &mut seq);
            fastq(&mut outs[0], id, "", &seq)?;
        }
    }
    for out in &mut outs {
        out.flush()?;
    }
    println!("{} reads of {READ_LEN} bp in {dir}", n_reads * names.len() as u64);
    Ok(())
}
