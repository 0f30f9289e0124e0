#!/usr/bin/env bash
# Counting at scale: `kmerflow load-into-counting` (khmer's and the blocked layout) against KMC
# and Jellyfish on the same generated reads, k = 20.
#
#   bench/scale_counting.sh [-d DATA_DIR] [-g GBP] [-t THREADS] [-m SIZE] [-r RUNS] KMERFLOW_BINARY
#
# Reads come from the gen_reads example (as bench/scale.sh: metagenome-like, 150 bp, 1% errors),
# made once in DATA_DIR (default bench-data/scale-counting, 0.3 Gbp; give -g 3 for the 3 Gbp
# set). kmerflow counts into a table of SIZE (default 1.34G, -M), KMC with -ci1 and up to SIZE
# of memory (at least KMC's least, 2 GB), Jellyfish into a hash of 100 M entries that grows as it needs; THREADS threads each
# (default 1), the tools alternating, RUNS times (default 1). Printed per run: wall and CPU
# (user + system) time, both per k-mer, peak RSS and the 1-minute load. Outputs are not compared
# (the tools write different formats); nothing here runs in the tests.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
data="$here/bench-data/scale-counting" gbp=0.3 threads=1 size=1.34G runs=1
while getopts "d:g:t:m:r:" opt; do
  case $opt in
    d) data=$OPTARG ;; g) gbp=$OPTARG ;; t) threads=$OPTARG ;; m) size=$OPTARG ;; r) runs=$OPTARG ;;
    *) sed -n 2,13p "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || { sed -n 2,13p "$0"; exit 2; }
kf=$1
reads="$data/reads.fq"
if [ ! -s "$reads" ]; then
  gen=${GEN_READS:-$here/target/release/examples/gen_reads}
  [ -x "$gen" ] || (cd "$here" && cargo build --release -q -p kmerflow-cli --example gen_reads)
  "$gen" "$data" "$gbp"
fi
# Every read is 150 bp of A/C/G/T: 131 k-mers of k = 20 each.
kmers=$(( $(wc -l < "$reads") / 4 * 131 ))
gib=$(awk -v s="$size" 'BEGIN {n = s + 0; u = substr(s, length(s)); if (u == "G") n *= 1; else if (u == "M") n /= 1024; n = int(n + 0.999); printf "%d", n < 2 ? 2 : n}')
work="$data/work"
mkdir -p "$work"
printf "# %s k-mers (k = 20) in %s, %s thread(s), table %s\n" "$kmers" "$reads" "$threads" "$size"
printf "%-22s %8s %8s %9s %9s %8s %5s\n" tool wall_s cpu_s "wall ns" "cpu ns" rss_MB load
for run in $(seq "$runs"); do
  for tool in kmerflow-khmer kmerflow-blocked kmc jellyfish; do
    rm -rf "${work:?}"/*
    case $tool in
      kmerflow-*) cmd=("$kf" load-into-counting -q -T "$threads" -k 20 -M "$size" --layout "${tool#kmerflow-}"
                       "$work/table" "$reads") ;;
      kmc) cmd=(kmc -k20 -t"$threads" -ci1 -m"$gib" "$reads" "$work/kmc" "$work") ;;
      jellyfish) cmd=(jellyfish count -m 20 -t "$threads" -C -s 100M -o "$work/jf" "$reads") ;;
    esac
    load=$(cut -d' ' -f1 /proc/loadavg)
    if ! /usr/bin/time -f "%e %U %S %M" -o "$data/time.txt" "${cmd[@]}" > "$data/log.txt" 2>&1; then
      echo "$tool failed: $(tail -n 3 "$data/log.txt")" >&2
      exit 1
    fi
    read -r wall user sys rss < "$data/time.txt"
    awk -v t="$tool" -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss" -v k="$kmers" -v l="$load" \
      'BEGIN {printf "%-22s %8.2f %8.2f %9.1f %9.1f %8.0f %5s\n", t, w, u + s, w * 1e9 / k, (u + s) * 1e9 / k, r / 1024, l}'
  done
done
rm -rf "$work"
