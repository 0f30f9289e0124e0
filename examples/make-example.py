#!/usr/bin/env python3
"""Make examples/reads.fq.gz: 4,000 simulated 100-bp reads of a random 10-kbp genome (40x).

Deterministic (fixed seed, gzip timestamp 0): running it again gives the same bytes. Reads come
from both strands, as pairs-free single reads named ``read<i>``, with 1% substitution errors and
quality ``I`` everywhere.
"""

import gzip
import random
from pathlib import Path

GENOME_LEN = 10_000
N_READS = 4_000
READ_LEN = 100
ERROR_RATE = 0.01
COMPLEMENT = str.maketrans("ACGT", "TGCA")


def main() -> None:
    rng = random.Random(20)
    genome = "".join(rng.choice("ACGT") for _ in range(GENOME_LEN))
    lines = []
    for i in range(N_READS):
        start = rng.randrange(GENOME_LEN - READ_LEN + 1)
        read = list(genome[start:start + READ_LEN])
        for j in range(READ_LEN):
            if rng.random() < ERROR_RATE:
                read[j] = rng.choice([b for b in "ACGT" if b != read[j]])
        seq = "".join(read)
        if rng.random() < 0.5:
            seq = seq.translate(COMPLEMENT)[::-1]
        lines.append(f"@read{i} pos={start}\n{seq}\n+\n{'I' * READ_LEN}\n")
    out = Path(__file__).resolve().parent / "reads.fq.gz"
    with open(out, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0,
                                               filename="") as gz:
        gz.write("".join(lines).encode())


if __name__ == "__main__":
    main()
