#!/usr/bin/env bash
# `kmerflow normalize` on read pairs at scale (issue: normalization at real scale): each pass's
# wall time and throughput from --metrics, the whole run's wall, CPU and peak RSS, for one or more
# builds on the same gzip'd pairs; the outputs of the builds are compared byte for byte.
#
#   bench/scale_normalize.sh [-d DATA_DIR] [-g GBP] [-t THREADS] NAME=KMERFLOW_BINARY...
#
# Pairs come from the gen_reads example (metagenome-like, 150 bp, 1% errors, a 40 Mbp community;
# see crates/kmerflow-cli/examples/gen_reads.rs), made once in DATA_DIR (default
# bench-data/scale-normalize) and compressed with `gzip -1`: GBP Gbp in all (default 3). Each
# binary runs `normalize R1.gz R2.gz -o -O --target 20 -T THREADS` (default 2 threads; the tables
# sized from the data, as a user's run), the binaries one after another. Nothing here runs in the
# tests.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
data="$here/bench-data/scale-normalize" gbp=3 threads=2
while getopts "d:g:t:" opt; do
  case $opt in
    d) data=$OPTARG ;; g) gbp=$OPTARG ;; t) threads=$OPTARG ;;
    *) sed -n 2,12p "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { sed -n 2,12p "$0"; exit 2; }
mkdir -p "$data"
if [ ! -s "$data/reads_2.fq.gz" ]; then
  gen=${GEN_READS:-$here/target/release/examples/gen_reads}
  [ -x "$gen" ] || (cd "$here" && cargo build --release -q -p kmerflow-cli --example gen_reads)
  "$gen" "$data" "$gbp" 40 pairs
  gzip -1 -f "$data/reads_1.fq" & gzip -1 -f "$data/reads_2.fq" & wait
fi
printf "%-10s %-9s %8s %9s %8s %8s %7s %5s\n" build pass wall_s "Mbp/s" run_wall run_cpu rss_GB load
first=""
for spec in "$@"; do
  name=${spec%%=*} bin=${spec#*=}
  out="$data/out-$name"
  load=$(cut -d' ' -f1 /proc/loadavg)
  "$bin" normalize -q "$data/reads_1.fq.gz" "$data/reads_2.fq.gz" -o "${out}_1.fq" -O "${out}_2.fq" \
    --target 20 -T "$threads" --metrics "$out.json"
  python3 - "$out.json" "$name" "$load" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
# The pipelines of a two-pass run: the sizing pre-pass (R1, R2), the first pass, the second.
names = ["sizing R1", "sizing R2", "first", "second"]
for i, p in enumerate(m["pipelines"]):
    print(f"{sys.argv[2]:<10} {names[i] if i < len(names) else i:<9} {p['wall_s']:8.1f} "
          f"{p['bases_mb_per_s']:9.1f} {m['wall_s']:8.1f} {m['cpu_s']:8.1f} "
          f"{m['peak_rss_bytes'] / 1e9:7.2f} {sys.argv[3]:>5}")
EOF
  if [ -z "$first" ]; then
    first=$out
  elif cmp -s "${first}_1.fq" "${out}_1.fq" && cmp -s "${first}_2.fq" "${out}_2.fq"; then
    echo "# $name: outputs identical to the first build's"
  else
    echo "# $name: OUTPUTS DIFFER from the first build's"
  fi
done
