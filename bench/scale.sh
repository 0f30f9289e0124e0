#!/usr/bin/env bash
# normalize-by-median at scale: ns per k-mer of the ordered stage (the pipeline's sink: look-ups,
# decisions, updates) for small and realistic tables, both layouts, read by read and batched.
#
#   bench/scale.sh [-d DATA_DIR] [-g GBP] [-r RUNS] [-m "100M 1.34G"] [-b] NAME=KMERFLOW_BINARY...
#
# Reads come from the gen_reads example (metagenome-like, 150 bp, 1% errors; see
# crates/kmerflow-cli/examples/gen_reads.rs), made once in DATA_DIR (default bench-data/scale,
# 0.3 Gbp = 2 M reads; give -g 3 for 3 Gbp). GEN_READS names its binary (default: the release
# example, built on demand). Each binary runs `normalize-by-median -T 1 -k 20 -C 20 -M SIZE`
# in the blocked and the khmer layout (and with --batched given -b), the binaries alternating,
# RUNS times (default 1), pinned to one core with taskset. Printed per run: the sink's CPU time
# and busy (wall) time per k-mer from --metrics, the wall time, the table's share on huge pages
# (AnonHugePages / Rss, sampled at mid-run), the 1-minute load, and where `perf stat` has
# hardware counters, cycles, instructions, LLC and dTLB load misses per k-mer of the whole
# process. The outputs of the binaries are compared byte for byte.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
data="$here/bench-data/scale" gbp=0.3 runs=1 sizes="100M 1.34G" batched=0
while getopts "d:g:r:m:b" opt; do
  case $opt in
    d) data=$OPTARG ;; g) gbp=$OPTARG ;; r) runs=$OPTARG ;; m) sizes=$OPTARG ;; b) batched=1 ;;
    *) sed -n 2,16p "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { sed -n 2,16p "$0"; exit 2; }
reads="$data/reads.fq"
if [ ! -s "$reads" ]; then
  gen=${GEN_READS:-$here/target/release/examples/gen_reads}
  [ -x "$gen" ] || (cd "$here" && cargo build --release -q -p kmerflow-cli --example gen_reads)
  "$gen" "$data" "$gbp"
fi
cpu=$(( $(nproc) - 1 ))
events=cycles:u,instructions:u,LLC-load-misses:u,dTLB-load-misses:u
perf_ok=0
if command -v perf >/dev/null && perf stat -x, -e $events true 2>&1 | grep -qv "not supported"; then perf_ok=1; fi
# The value of an arithmetic expression.
calc() { awk "BEGIN {printf \"%.6f\", $1}"; }
# The sink's "cpu_s" or "busy_s" in a metrics file.
sink() { awk -v key="\"$2\":" '/"sink": \{/ {s=1} s && $1 == key {gsub(/,/, "", $2); print $2; exit}' "$1"; }
kmers() { awk '/"kmers":/ {gsub(/,/, "", $2); print $2; exit}' "$1"; }
modes=("")
[ $batched = 1 ] && modes+=("--batched")
printf "%-8s %-8s %-6s %-10s %9s %9s %7s %6s %5s %s\n" build layout table mode "cpu ns" "busy ns" wall huge% load "perf stat per k-mer"
for run in $(seq "$runs"); do
  for size in $sizes; do
    for layout in blocked khmer; do
      for mode in "${modes[@]}"; do
        for spec in "$@"; do
          name=${spec%%=*} exe=${spec#*=}
          out="$data/out-$name-$layout-$size${mode:+-b}.fq" metrics="$data/m-$name.json" stat="$data/stat-$name.txt"
          load=$(cut -d' ' -f1 /proc/loadavg)
          cmd=(taskset -c "$cpu" "$exe" normalize-by-median -q -T 1 -k 20 -C 20 -M "$size" --layout "$layout" $mode
            -o "$out" --metrics "$metrics" "$reads")
          if [ $perf_ok = 1 ]; then cmd=(perf stat -x, -o "$stat" -e $events "${cmd[@]}"); fi
          start=$(date +%s.%N)
          "${cmd[@]}" &
          pid=$!
          huge=-
          sleep 3
          exe_pid=$(pgrep -n -P "$pid" || echo "$pid")
          if [ -r "/proc/$exe_pid/smaps_rollup" ]; then
            huge=$(awk '/^Rss:/ {r=$2} /^AnonHugePages:/ {h=$2} END {if (r) printf "%.0f", 100*h/r}' "/proc/$exe_pid/smaps_rollup")
          fi
          wait "$pid"
          wall=$(calc "$(date +%s.%N) - $start")
          k=$(kmers "$metrics")
          counters=""
          if [ $perf_ok = 1 ]; then
            counters=$(awk -F, -v k="$k" '$1 ~ /^[0-9]+$/ {printf "%s %.1f  ", $3, $1/k}' "$stat")
          fi
          printf "%-8s %-8s %-6s %-10s %9.1f %9.1f %7.1f %6s %5s %s\n" "$name" "$layout" "$size" "${mode:-read}" \
            "$(calc "$(sink "$metrics" cpu_s) * 1e9 / $k")" "$(calc "$(sink "$metrics" busy_s) * 1e9 / $k")" \
            "$wall" "$huge" "$load" "$counters"
        done
      done
    done
  done
done
# Every output equals the first binary's (read by read and batched alike).
first=${1%%=*}
for f in "$data"/out-*.fq; do
  ref="$data/out-$first-$(basename "$f" | sed -E 's/^out-[^-]+-//; s/-b\.fq$/.fq/')"
  cmp -s "$f" "$ref" || echo "DIFFERENT: $f vs $ref"
done
echo "outputs compared; $(uptime)"
