#!/usr/bin/env bash
# Makes the benchmarks' input set in DIR (default: bench-data), once: E. coli K-12 MG1655's genome
# (from Debian's ragout-examples) and Illumina-like reads simulated from it with dwgsim (seed 42),
# 100 bp pairs at 50x over both mates, 0.5 % / 1 % errors on read 1 / read 2:
#   DIR/ecoli.fa           the 4.6 Mbp genome
#   DIR/ecoli50_1.fq.gz    read 1 of each pair (1.17 M reads)
#   DIR/ecoli50_2.fq.gz    read 2
#   DIR/ecoli50_1.fq       read 1, uncompressed (about 305 MB)
#   DIR/ecoli50.il.fq.gz   the pairs interleaved
# Needs dwgsim and ragout-examples (Debian packages; installed with apt-get when missing and allowed).
# Usage: bash bench/make_data.sh [DIR]
set -euo pipefail
dir=${1:-bench-data}
mkdir -p "$dir"
cd "$dir"
[ -f .complete ] && exit 0
for package in dwgsim ragout-examples; do
  if ! dpkg -s "$package" >/dev/null 2>&1; then
    echo "make_data: installing $package" >&2
    apt-get update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$package" >/dev/null
  fi
done
genome=$(find /usr/share/doc/ragout* -name 'MG1655-K12.fasta.gz' | head -1)
[ -n "$genome" ] || { echo "make_data: MG1655-K12.fasta.gz not found in ragout-examples" >&2; exit 1; }
zcat "$genome" > ecoli.fa
dwgsim -z 42 -e 0.005 -E 0.01 -1 100 -2 100 -C 50 -y 0.01 -n 2 -c 0 ecoli.fa sim >/dev/null 2>&1
mv sim.bwa.read1.fastq.gz ecoli50_1.fq.gz
mv sim.bwa.read2.fastq.gz ecoli50_2.fq.gz
rm -f sim.*
zcat ecoli50_1.fq.gz > ecoli50_1.fq
paste <(zcat ecoli50_1.fq.gz | paste - - - -) <(zcat ecoli50_2.fq.gz | paste - - - -) | tr '\t' '\n' | gzip -1 > ecoli50.il.fq.gz
touch .complete
