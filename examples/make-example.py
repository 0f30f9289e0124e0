#!/usr/bin/env python3
"""Make the bundled example reads (deterministic: fixed seeds, gzip timestamp 0, so running it
again gives the same bytes; quality ``I`` everywhere, 1% substitution errors):

- ``reads.fq.gz``: 4,000 single 100-bp reads of a random 10-kbp genome (40x), from both
  strands, named ``read<i>``;
- ``demo_R1.fq.gz`` / ``demo_R2.fq.gz``: 3,000 read pairs (2 x 100 bp, fragments of 250-400 bp)
  of a second random 6-kbp genome (100x), named ``pair<i>/1`` and ``pair<i>/2``, record i of
  R2 the mate of record i of R1;
- ``samples.tsv``: a sample sheet for ``kmerflow pipeline`` naming both.
"""

import gzip
import random
from pathlib import Path

READ_LEN = 100
ERROR_RATE = 0.01
COMPLEMENT = str.maketrans("ACGT", "TGCA")
HERE = Path(__file__).resolve().parent


def genome(rng: random.Random, length: int) -> str:
    """A random genome of ``length`` bases."""
    return "".join(rng.choice("ACGT") for _ in range(length))


def sequenced(rng: random.Random, seq: str) -> str:
    """``seq`` with substitution errors at ERROR_RATE."""
    read = list(seq)
    for j in range(len(read)):
        if rng.random() < ERROR_RATE:
            read[j] = rng.choice([b for b in "ACGT" if b != read[j]])
    return "".join(read)


def revcomp(seq: str) -> str:
    """The reverse complement of ``seq``."""
    return seq.translate(COMPLEMENT)[::-1]


def record(name: str, seq: str) -> str:
    """One FASTQ record."""
    return f"@{name}\n{seq}\n+\n{'I' * len(seq)}\n"


def write_gzip(name: str, text: str) -> None:
    """Writes ``text`` gzip-compressed to examples/NAME, reproducibly."""
    with open(HERE / name, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0,
                                                       filename="") as gz:
        gz.write(text.encode())


def single_reads() -> None:
    """examples/reads.fq.gz."""
    rng = random.Random(20)
    g = genome(rng, 10_000)
    lines = []
    for i in range(4_000):
        start = rng.randrange(len(g) - READ_LEN + 1)
        read = list(g[start:start + READ_LEN])
        for j in range(READ_LEN):
            if rng.random() < ERROR_RATE:
                read[j] = rng.choice([b for b in "ACGT" if b != read[j]])
        seq = "".join(read)
        if rng.random() < 0.5:
            seq = revcomp(seq)
        lines.append(f"@read{i} pos={start}\n{seq}\n+\n{'I' * READ_LEN}\n")
    write_gzip("reads.fq.gz", "".join(lines))


def read_pairs() -> None:
    """examples/demo_R1.fq.gz and demo_R2.fq.gz."""
    rng = random.Random(27)
    g = genome(rng, 6_000)
    r1, r2 = [], []
    for i in range(3_000):
        size = rng.randint(250, 400)
        start = rng.randrange(len(g) - size + 1)
        fragment = g[start:start + size]
        if rng.random() < 0.5:
            fragment = revcomp(fragment)
        r1.append(record(f"pair{i}/1", sequenced(rng, fragment[:READ_LEN])))
        r2.append(record(f"pair{i}/2", sequenced(rng, revcomp(fragment)[:READ_LEN])))
    write_gzip("demo_R1.fq.gz", "".join(r1))
    write_gzip("demo_R2.fq.gz", "".join(r2))


def main() -> None:
    single_reads()
    read_pairs()
    (HERE / "samples.tsv").write_text("sample\tr1\tr2\n"
                                      "demo\tdemo_R1.fq.gz\tdemo_R2.fq.gz\n"
                                      "single\treads.fq.gz\t\n")


if __name__ == "__main__":
    main()
