#!/usr/bin/env bash
# `kmerflow normalize` with an 8 GB table at 1, 4, 8 and 16 threads, and normalize-by-median with a
# 1.34 GB table on one thread, this branch against main's commit fc61668 (before the read-ahead
# prefetching), on a machine with 16 cores and 16+ GB of memory. Meant to finish in about 7 minutes.
#
#   OUT=/some/dir bench/scale_threads.sh
#
# Steps: release build of this checkout (and, unless BASE=none, of BASE, default fc61668, from
# `git archive`, sharing the target directory: only the workspace crates are rebuilt); GBP Gbp
# (default 1.0; 1.5 fits when the builds are quick) of read pairs from the gen_reads example;
# then the runs, each under `timeout`, the ones after STOP_AFTER seconds (default 420) skipped.
# normalize-by-median reads the first 2 M reads of R1 (0.3 Gbp).
# Writes $OUT/scale_threads.md (the table) and $OUT/raw/ (metrics JSON of every run).
# Without a Rust toolchain, give prebuilt binaries instead: NEW_BIN (this branch's kmerflow),
# GEN_READS (its gen_reads example) and optionally BASE_BIN (fc61668's kmerflow).
# Optional: GBP, BASE, TIMEOUT (seconds a run, default 150), STOP_AFTER, TABLE (default 8G),
# THREADS (default "1 4 8 16"), DATA (scratch dir, default
# $TMPDIR or /tmp), CARGO_TARGET_DIR.
set -euo pipefail
: "${OUT:?set OUT to the directory for the results}"
here=$(cd "$(dirname "$0")/.." && pwd)
gbp=${GBP:-1.0} base=${BASE:-fc61668} limit=${TIMEOUT:-150}
data=${DATA:-${TMPDIR:-/tmp}}/kmerflow-scale-threads
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$here/target}
mkdir -p "$OUT/raw" "$data"
started=$(date +%s)
# The value of an arithmetic expression.
calc() { awk "BEGIN {printf \"%.6f\", $1}"; }
elapsed() { echo $(( $(date +%s) - started )); }
log() { echo "[$(elapsed) s] $*" >&2; }

if [ -n "${NEW_BIN:-}" ]; then
  # Prebuilt binaries (a machine without a Rust toolchain): NEW_BIN, GEN_READS, BASE_BIN.
  cp "$NEW_BIN" "$data/kmerflow-new"
  gen_reads=${GEN_READS:?with NEW_BIN, set GEN_READS to the gen_reads example binary}
else
  log "building this checkout ($(git -C "$here" rev-parse --short HEAD))"
  (cd "$here" && cargo build --release -q -p kmerflow-cli --bin kmerflow --example gen_reads)
  cp "$CARGO_TARGET_DIR/release/kmerflow" "$data/kmerflow-new"
  gen_reads=$CARGO_TARGET_DIR/release/examples/gen_reads
fi
"$gen_reads" "$data" "$gbp" 40 pairs >&2 &
gen=$!
have_base=0
if [ -n "${NEW_BIN:-}" ]; then
  [ -n "${BASE_BIN:-}" ] && cp "$BASE_BIN" "$data/kmerflow-base" && have_base=1
elif [ "$base" != none ] && git -C "$here" cat-file -e "$base^{commit}" 2>/dev/null; then
  log "building $base"
  rm -rf "$data/base-src" && mkdir -p "$data/base-src"
  git -C "$here" archive "$base" | tar -x -C "$data/base-src" \
    && (cd "$data/base-src" && cargo build --release -q -p kmerflow-cli --bin kmerflow) \
    && cp "$CARGO_TARGET_DIR/release/kmerflow" "$data/kmerflow-base" && have_base=1
  rm -rf "$data/base-src"
fi
wait $gen
r1="$data/reads_1.fq" r2="$data/reads_2.fq"
# normalize-by-median's input: the first 2 M reads (0.3 Gbp) of R1.
head -n 8000000 "$r1" > "$data/nbm.fq"

table="$OUT/scale_threads.md"
{
  echo "# normalize at scale: threads ($(date -u +%F), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs))"
  echo
  echo "Input: $gbp Gbp of 150 bp pairs (gen_reads, 40 Mbp community, 1% errors). Load before: $(cut -d' ' -f1-3 /proc/loadavg)."
  echo "THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled)."
  echo
  echo "| command | build | table | threads | wall s | input Mbp/s | k-mers | ordered stage ns/k-mer (cpu) | peak RSS GB |"
  echo "|---|---|---|---|---|---|---|---|---|"
} > "$table"

# run NAME BUILD TABLE THREADS COMMAND...: one timed run, one table row.
run() {
  local name=$1 build=$2 size=$3 threads=$4
  shift 4
  local metrics="$OUT/raw/$name-$build-$size-T$threads.json"
  if [ "$(elapsed)" -gt "${STOP_AFTER:-420}" ]; then
    echo "| $name | $build | $size | $threads | skipped: past ${STOP_AFTER:-420} s | | | | |" >> "$table"
    return
  fi
  log "$name $build -M $size -T $threads"
  local t0 status=ok
  t0=$(date +%s.%N)
  timeout "$limit" "$data/kmerflow-$build" "$@" -q -T "$threads" -M "$size" --metrics "$metrics" || status="stopped after $limit s"
  local wall
  wall=$(calc "$(date +%s.%N) - $t0")
  if [ "$status" != ok ] || [ ! -s "$metrics" ]; then
    echo "| $name | $build | $size | $threads | $status | | | | |" >> "$table"
    return
  fi
  # The sinks' CPU seconds (the ordered stages of every pass) per k-mer (normalize records no
  # k-mer count: its passes' bases x 131/150, the k-mers of 150 bp reads at k = 20), and totals.
  local input_bp=$gbp
  [ "$name" = normalize ] || input_bp=0.3
  awk -v wall="$wall" -v gbp="$input_bp" -v name="$name" -v build="$build" -v size="$size" -v threads="$threads" '
    /"sink": [{]/ {s = 1}
    s && $1 == "\"cpu_s\":" {gsub(/,/, "", $2); sink += $2; s = 0}
    $1 == "\"kmers\":" && !k {gsub(/,/, "", $2); k = $2}
    $1 == "\"bases\":" {gsub(/,/, "", $2); bases += $2}
    $1 == "\"peak_rss_bytes\":" {gsub(/,/, "", $2); rss = $2}
    END {if (!k) k = int(bases * 131 / 150)
      printf "| %s | %s | %s | %s | %.1f | %.1f | %d | %.1f | %.2f |\n", name, build, size, threads, wall,
      gbp * 1e3 / wall, k, k ? sink * 1e9 / k : 0, rss / 1e9}' "$metrics" >> "$table"
}

for threads in ${THREADS:-1 4 8 16}; do
  run normalize new "${TABLE:-8G}" "$threads" normalize "$r1" "$r2" -o "$data/o1.fq" -O "$data/o2.fq" --target 20
done
for build in new base; do
  [ $build = base ] && [ $have_base = 0 ] && continue
  for layout in blocked khmer; do
    run "nbm-$layout" $build 1.34G 1 normalize-by-median -k 20 -C 20 --layout "$layout" \
      -o "$data/nbm-$build-$layout.fq" "$data/nbm.fq"
  done
done
if [ $have_base = 1 ]; then
  for layout in blocked khmer; do
    cmp -s "$data/nbm-new-$layout.fq" "$data/nbm-base-$layout.fq" && same=identical || same=DIFFERENT
    echo "normalize-by-median outputs of new and base ($layout): $same" >> "$table"
  done
fi
echo "Total $(elapsed) s; load after: $(cut -d' ' -f1-3 /proc/loadavg)." >> "$table"
rm -rf "$data"
cat "$table"
