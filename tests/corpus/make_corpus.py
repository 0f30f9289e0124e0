"""Generators of corpus inputs better made at test time than committed (large or expanding files).

Each generator takes the destination path (and optional string arguments given after it in a
case's ``["gen", FUNCTION, DST, ARGS...]`` setup action) and writes the file; all are fast and
write small files, whatever they expand to.

Run as a script (``python tests/corpus/make_corpus.py FUNCTION DST [ARGS...]``) to make one file
by hand.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import random
import struct
import sys
import zlib
from pathlib import Path

MIB = 1 << 20
FILES = Path(__file__).resolve().parent / "files"


def sample_fastq(records: int = 400, length: int = 60, seed: int = 11) -> bytes:
    """RECORDS deterministic random FASTQ records of LENGTH bases (the text the damaged streams hold)."""
    rng = random.Random(seed)
    out = bytearray()
    for i in range(records):
        seq = "".join(rng.choice("ACGT") for _ in range(length))
        qual = "".join(rng.choice("#5?FI") for _ in range(length))
        out += f"@read{i}\n{seq}\n+\n{qual}\n".encode()
    return bytes(out)


def _gzip_member(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=9, mtime=0)


def gzip_bomb_line(dest: Path, mib: str = "4100") -> None:
    """A FASTQ whose gzip (a few MB) expands to a header and ONE sequence line of MIB MiB.

    The line is made of identical gzip members of 64 MiB of ``A`` each (concatenated members are
    one stream), so the file is made in well under a second whatever its expanded size.
    """
    total = int(mib) * MIB
    block = 64 * MIB
    member = _gzip_member(b"A" * block)
    with open(dest, "wb") as out:
        out.write(_gzip_member(b"@bomb\n"))
        for _ in range(total // block):
            out.write(member)
        if total % block:
            out.write(_gzip_member(b"A" * (total % block)))
        out.write(_gzip_member(b"\n+\nI\n"))


def bgzf_compress(data: bytes, block: int = 4096, eof: bool = True) -> bytes:
    """DATA as BGZF: gzip members of BLOCK input bytes with the ``BC`` size field, then the EOF member."""
    out = bytearray()
    for start in range(0, len(data), block) if data else []:
        chunk = data[start:start + block]
        compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
        deflated = compressor.compress(chunk) + compressor.flush()
        size = 18 + len(deflated) + 8
        out += bytes([0x1F, 0x8B, 8, 4, 0, 0, 0, 0, 0, 0xFF, 6, 0]) + b"BC" + struct.pack("<HH", 2, size - 1)
        out += deflated + struct.pack("<II", zlib.crc32(chunk), len(chunk))
    if eof:
        out += bytes.fromhex("1f8b08040000000000ff0600424302001b0003000000000000000000")
    return bytes(out)


def _compressed(fmt: str, data: bytes) -> bytes:
    if fmt == "gzip":
        return _gzip_member(data)
    if fmt == "bgzf":
        return bgzf_compress(data)
    if fmt == "bzip2":
        return bz2.compress(data, 9)
    if fmt == "xz":
        return lzma.compress(data, preset=3)
    if fmt == "zstd":  # no zstd in the standard library: the committed file holds sample_fastq()
        return (FILES / "compressed" / "sample.fq.zst").read_bytes()
    raise ValueError(f"unknown format {fmt}")


#: The damages every damaged file knows, done by _cut().
_CUTS = ("none", "truncate", "header-only")


def _cut(blob: bytearray, damage: str, header_bytes: int) -> None:
    """BLOB cut as DAMAGE (one of _CUTS) says: ``none`` (whole), ``truncate`` (cut at half) or
    ``header-only`` (the first HEADER_BYTES bytes)."""
    if damage == "truncate":
        del blob[len(blob) // 2:]
    elif damage == "header-only":
        del blob[header_bytes:]


def damaged(dest: Path, fmt: str, damage: str) -> None:
    """sample_fastq() compressed as FMT (gzip, bgzf, bzip2, xz, zstd), then damaged.

    DAMAGE: ``none``; ``truncate`` (cut at half); ``header-only`` (the first 10 bytes);
    ``flip-middle`` (one byte in the middle of the compressed data inverted); ``crc``
    (gzip/bgzf: the last member's CRC32 changed; bzip2: the stream CRC; xz/zstd: the
    check at the end); ``isize`` (gzip: the length in the trailer wrong); ``garbage``
    (text appended after the stream); ``zeros`` (1024 zero bytes appended, as tape and
    block devices pad); ``bgzf-bsize`` (the second BGZF block claims a larger size);
    ``bgzf-no-eof`` (no end-of-file member); ``bgzf-block-crc`` (the CRC of BGZF block 3
    of many changed).
    """
    data = sample_fastq()
    if damage == "bgzf-no-eof":
        dest.write_bytes(bgzf_compress(data, eof=False))
        return
    blob = bytearray(_compressed(fmt, data))
    if damage in _CUTS:
        _cut(blob, damage, header_bytes=10)
    elif damage == "flip-middle":
        blob[len(blob) // 2] ^= 0xFF
    elif damage == "crc":
        # The check sits just before the end: gzip/bgzf 8-byte trailer (before bgzf's EOF member),
        # bzip2 the 32-bit combined CRC after the 48-bit end marker, xz its stream footer's index,
        # zstd the 4-byte content checksum.
        offset = {"gzip": 8, "bgzf": 28 + 8, "bzip2": 4, "xz": 20, "zstd": 4}[fmt]
        blob[len(blob) - offset] ^= 0x55
    elif damage == "isize":
        blob[-1] ^= 0x01
    elif damage == "garbage":
        blob += b"this is not compressed data\n"
    elif damage == "zeros":
        blob += bytes(1024)
    elif damage == "bgzf-bsize":
        second = blob.index(b"\x1f\x8b\x08\x04", 1)
        blob[second + 16] = (blob[second + 16] + 40) & 0xFF
    elif damage == "bgzf-block-crc":
        start = 0
        for _ in range(3):
            start = blob.index(b"\x1f\x8b\x08\x04", start + 1)
        end = blob.index(b"\x1f\x8b\x08\x04", start + 1)
        blob[end - 8] ^= 0x55
    else:
        raise ValueError(f"unknown damage {damage}")
    dest.write_bytes(bytes(blob))


def table_reads(dest: Path) -> None:
    """The reads the committed tables in files/tables/ were counted from: 100 sample reads and
    300 copies of one read (so that the byte table has bigcount entries)."""
    repeat = b"@rep\nACGTTGCAACGTTGCAACGTTGCAACGT\n+\nIIIIIIIIIIIIIIIIIIIIIIIIIIII\n"
    dest.write_bytes(sample_fastq(100) + repeat * 300)


#: Offsets in khmer's table files (format 4, docs/khmer-compat.md §3): for the byte table (type 1)
#: signature 0-3, version 4, type 5, bigcount flag 6, k 7-10, number of tables 11, occupied 12-19,
#: size of table 0 at 20-27; the bit and nibble tables lack the bigcount flag (1 byte less).
KHMER_K = 7
KHMER_TABLES = 11
KHMER_SIZE0 = 20


def damaged_table(dest: Path, source: str, damage: str) -> None:
    """The committed table tables/SOURCE, damaged.

    DAMAGE: ``none``; ``truncate`` (cut at half); ``header-only`` (the first 16 bytes);
    ``magic`` (first byte changed); ``version`` (khmer byte 4 / kmerflow bytes 8-11 set to 9);
    ``type`` (khmer type byte 5 set to 3, a tagset); ``k0`` / ``k99`` (k set to 0 / 99);
    ``tables0`` / ``tables255`` (the number of tables); ``huge-size`` (table 0 claims
    2**62 counters); ``max-size`` (table 0 claims 2**64-1 counters); ``huge-bigcount`` (the
    bigcount entry count set to 2**60); ``flip-data`` (one bit of the counters flipped);
    ``flip-header`` (one bit of a kmerflow header field flipped, so its checksum fails);
    ``flip-checksum`` (one bit of a kmerflow data checksum flipped); ``unfinished`` (kmerflow's
    "unfinished" flag set; the header checksum then fails too); ``single-strand`` (khmer type
    byte 5 given kmerflow's single-strand bit, 0x80).
    """
    blob = bytearray((FILES / "tables" / source).read_bytes())
    khmer = blob[:4] == b"OXLI"
    byte_table = khmer and blob[5] == 1
    shift = 0 if byte_table else -1
    if damage in _CUTS:
        _cut(blob, damage, header_bytes=16)
    elif damage == "magic":
        blob[0] ^= 0x20
    elif damage == "version":
        if khmer:
            blob[4] = 9
        else:
            blob[8:12] = struct.pack("<I", 9)
    elif damage == "type":
        blob[5] = 3
    elif damage in ("k0", "k99"):
        blob[KHMER_K + shift:KHMER_K + shift + 4] = struct.pack("<I", 0 if damage == "k0" else 99)
    elif damage in ("tables0", "tables255"):
        blob[KHMER_TABLES + shift] = 0 if damage == "tables0" else 255
    elif damage in ("huge-size", "max-size"):
        at = KHMER_SIZE0 + shift
        blob[at:at + 8] = struct.pack("<Q", 2**62 if damage == "huge-size" else 2**64 - 1)
    elif damage == "huge-bigcount":
        assert byte_table, "only byte tables have bigcount entries"
        at = KHMER_SIZE0
        for _ in range(blob[KHMER_TABLES]):
            size = struct.unpack_from("<Q", blob, at)[0]
            at += 8 + size
        blob[at:at + 8] = struct.pack("<Q", 2**60)
    elif damage == "flip-data":
        blob[len(blob) - 100] ^= 0x04
    elif damage == "flip-header":
        blob[25] ^= 0x01
    elif damage == "flip-checksum":
        blob[80] ^= 0x01
    elif damage == "unfinished":
        blob[34] |= 0x02
    elif damage == "trailing":
        blob += b"trailing garbage"
    elif damage == "single-strand":
        blob[5] |= 0x80
    else:
        raise ValueError(f"unknown damage {damage}")
    dest.write_bytes(bytes(blob))


def damaged_table_gz(dest: Path, source: str, damage: str) -> None:
    """damaged_table() of SOURCE, then gzip-compressed (khmer reads and writes .ct.gz)."""
    damaged_table(dest, source, damage)
    dest.write_bytes(_gzip_member(dest.read_bytes()))


def gzip_many_members(dest: Path, members: str = "1000") -> None:
    """A gzip of MEMBERS concatenated members, one FASTQ record each (a valid multi-member stream)."""
    with open(dest, "wb") as out:
        for i in range(int(members)):
            out.write(_gzip_member(f"@r{i}\nACGTACGTACGTACGTACGTA\n+\nIIIIIIIIIIIIIIIIIIIII\n".encode()))


def raw_deflate_only(dest: Path) -> None:
    """A raw deflate stream (no gzip header) named like a gzip: not a gzip file."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    dest.write_bytes(compressor.compress(b"@r\nACGT\n+\nIIII\n") + compressor.flush())


def long_header_fastq(dest: Path, mib: str = "8") -> None:
    """A valid FASTQ record whose header line is MIB MiB long."""
    dest.write_bytes(b"@" + b"h" * (int(mib) * MIB) + b"\nACGTACGTACGTACGTACGTA\n+\nIIIIIIIIIIIIIIIIIIIII\n")


def sparse_nodegraph(dest: Path, mib: str = "250", k: str = "21") -> None:
    """A khmer nodegraph of k K whose four empty tables take MIB MiB in all: a sparse file (its
    length without the disk), to load where that memory is not to be had."""
    table_bytes = int(mib) * MIB // 4
    with open(dest, "wb") as out:
        out.write(b"OXLI" + bytes([4, 2]) + struct.pack("<IBQ", int(k), 4, 0))
        for _ in range(4):
            out.write(struct.pack("<Q", table_bytes * 8 - 1))  # bits: the table holds bits // 8 + 1 bytes
            out.seek(table_bytes, 1)
        out.truncate()


#: The first 128 bytes of XXH3's default secret (all that inputs of up to 128 bytes use).
_XXH3_SECRET = bytes.fromhex(
    "b8fe6c3923a44bbe7c01812cf721ad1cded46de9839097db7240a4a4b7b3671f"
    "cb79e64eccc0e578825ad07dccff7221b8084674f743248ee03590e6813a264c"
    "3c2852bb91c300cb88d0658b1b532ea371644897a20df94e3819ef46a9deacd8"
    "a8fa763fe39c343ff9dcbbc7c70b4f1d8a51e04bcdb45931c89f7ec9d9787364"
)
_U64 = (1 << 64) - 1


def xxh3_64(data: bytes) -> int:
    """XXH3-64 (seed 0) of DATA of 17 to 128 bytes: the checksum of a kmerflow table's header."""
    assert 17 <= len(data) <= 128, "only the 17-128 byte case of XXH3 is written here"

    def mix16(at: int, secret_at: int) -> int:
        lo, hi = struct.unpack_from("<QQ", data, at)
        key_lo, key_hi = struct.unpack_from("<QQ", _XXH3_SECRET, secret_at)
        product = (lo ^ key_lo) * (hi ^ key_hi)
        return (product ^ (product >> 64)) & _U64

    n = len(data)
    acc = n * 0x9E3779B185EBCA87
    for i in reversed(range(4)):
        if n > 32 * i:
            acc += mix16(16 * i, 32 * i) + mix16(n - 16 * (i + 1), 32 * i + 16)
    acc &= _U64
    acc ^= acc >> 37
    acc = (acc * 0x165667919E3779F9) & _U64
    return acc ^ (acc >> 32)


def sparse_blocked_table(dest: Path, mib: str = "2000") -> None:
    """A kmerflow (blocked) table whose empty counters take MIB MiB: the header of
    tables/blocked.kt given that many lines (its checksum redone; the counters' checksum is
    left wrong), then a sparse file (its length without the disk), to load where that memory
    is not to be had."""
    header = bytearray((FILES / "tables" / "blocked.kt").read_bytes()[:88])
    data_bytes = int(mib) * MIB
    struct.pack_into("<Q", header, 24, data_bytes // 64)  # lines of 64 bytes
    struct.pack_into("<Q", header, 72, data_bytes)
    with open(dest, "wb") as out:
        out.write(header + struct.pack("<Q", xxh3_64(bytes(header))))
        out.truncate(4096 + data_bytes)


if __name__ == "__main__":
    function, dest, *args = sys.argv[1:]
    globals()[function](Path(dest), *args)
