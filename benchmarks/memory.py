"""Memory benchmark: a stream far larger than memory, compressed and decompressed on the fly.

    python benchmarks/memory.py [--size 2GB] [--level 5] [--threads 1]
        [--via objects|pipe] [--seed 1] [--json FILE]

The input is generated in 1 MiB chunks (text-like pieces from a fixed pool, in
a seeded order, with numbered lines and runs of random bytes mixed in), fed to
a compressor, and every compressed piece goes straight to a decompressor;
nothing is stored, and the round trip is checked by CRC-32 and length; the first
line names the kernels (``BYTEPAIR_KERNELS`` chooses: threads on the compiled path,
worker processes on the numpy path, whose RSS is their own). Peak
RSS (``ru_maxrss``) is printed before and after, so a constant figure across
``--size 20MB``, ``200MB`` and ``2GB`` shows that memory does not grow with the
stream.

``--via objects`` (default) uses ``BytePairCompressor`` and
``BytePairDecompressor`` in this process and times the calls to each; the peak
RSS is that of whichever side needs more (compression, by far). ``--via pipe``
forks: the child writes with ``BytePairFile`` into an OS pipe, this process
reads it with ``BytePairFile`` (a source that cannot seek); each side's peak
RSS and CPU time are reported on their own (POSIX only).

Exit status: 0 done, 1 failed round trip, 2 bad option.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import sys
import time
import traceback
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import numpy as np

# this checkout's package, even where another copy is installed: a benchmark run
# from a working tree must time that tree's code
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import bytepair
from bytepair.cli.bench import kernels_in_use
from bytepair.io.file import BytePairFile

CHUNK = 1 << 20
PIECE = 1 << 16
FEED = 1 << 16
_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30}


def parse_size(text: str) -> int:
    """``2GB`` -> 2_000_000_000 (decimal units; ``KiB``/``MiB``/``GiB`` are binary)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    unit = match.group(2).lower() if match else ""
    if not match or unit not in _UNITS:
        raise argparse.ArgumentTypeError(f"not a size such as 200MB, 2GB or 1GiB: {text!r}")
    return int(float(match.group(1)) * _UNITS[unit])


def text_pool(rng: np.random.Generator, count: int = 48) -> list[bytes]:
    """Pieces of PIECE bytes of word-like text: a Zipf-ish vocabulary, punctuation, line breaks."""
    letters = np.frombuffer(b"etaoinshrdlcumwfgypbvkjxqz", dtype=np.uint8)
    weights = 1.0 / np.arange(1, len(letters) + 1)
    vocabulary = [
        bytes(rng.choice(letters, size=int(n), p=weights / weights.sum())) for n in rng.integers(1, 11, size=3000)
    ]
    rank = 1.0 / np.arange(1, len(vocabulary) + 1) ** 1.1
    rank /= rank.sum()
    seps = [b" ", b" ", b" ", b" ", b", ", b". ", b"\n", b" (", b") ", b"; "]
    pool = []
    for _ in range(count):
        words = rng.choice(len(vocabulary), size=PIECE // 4, p=rank)
        sep = rng.integers(0, len(seps), size=len(words))
        text = b"".join(vocabulary[w] + seps[s] for w, s in zip(words.tolist(), sep.tolist(), strict=True))
        pool.append(text[:PIECE].ljust(PIECE, b" "))
    return pool


def generate(size: int, seed: int) -> Iterator[bytes]:
    """*size* bytes in chunks of CHUNK, the same for the same seed, never all in memory."""
    rng = np.random.default_rng(seed)
    pool = text_pool(rng)
    made = 0
    number = 0
    while made < size:
        parts = [pool[i] for i in rng.integers(0, len(pool), size=CHUNK // PIECE).tolist()]
        chunk = bytearray(b"".join(parts))
        for at in rng.integers(0, CHUNK - 4096, size=4).tolist():  # numbered lines and random runs
            line = b"\nline %d of chunk %d\n" % (at, number)
            chunk[at : at + len(line)] = line
            noise = rng.bytes(int(rng.integers(16, 2048)))
            chunk[at + 64 : at + 64 + len(noise)] = noise
        piece = bytes(chunk[: size - made])
        made += len(piece)
        number += 1
        yield piece


def peak_rss() -> int:
    """Peak resident set size of this process so far, in bytes."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


class Totals:
    def __init__(self) -> None:
        self.original = 0
        self.compressed = 0
        self.produced = 0
        self.crc_in = 0
        self.crc_out = 0
        self.compress_s = 0.0
        self.decompress_s = 0.0
        self.child_peak = 0


def via_objects(size: int, seed: int, level: int, threads: int) -> Totals:
    """Compressor and decompressor objects, each compressed piece fed on at once."""
    t = Totals()
    compressor = bytepair.BytePairCompressor(level, threads=threads)
    decompressor = bytepair.BytePairDecompressor()

    def feed(packed: bytes) -> None:
        t.compressed += len(packed)
        for lo in range(0, len(packed), FEED):
            start = time.perf_counter()
            out = decompressor.decompress(packed[lo : lo + FEED])
            t.decompress_s += time.perf_counter() - start
            t.produced += len(out)
            t.crc_out = zlib.crc32(out, t.crc_out)

    for chunk in generate(size, seed):
        t.original += len(chunk)
        t.crc_in = zlib.crc32(chunk, t.crc_in)
        start = time.perf_counter()
        packed = compressor.compress(chunk)
        t.compress_s += time.perf_counter() - start
        feed(packed)
    start = time.perf_counter()
    tail = compressor.flush()
    t.compress_s += time.perf_counter() - start
    feed(tail)
    if not decompressor.eof:
        raise RuntimeError("the decompressor did not reach the end of the stream")
    return t


class _Counting:
    """A pipe's read end that counts the compressed bytes passing through."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self.count = 0

    def read(self, size: int = -1) -> bytes:
        data = self._raw.read(size)
        self.count += len(data)
        return data


def via_pipe(size: int, seed: int, level: int, threads: int) -> Totals:
    """A child process writes with BytePairFile into a pipe; this one reads it with BytePairFile.

    Two processes, so each side's peak RSS and CPU time are its own.
    """
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child compresses
        status = 0
        try:
            os.close(read_end)
            with os.fdopen(write_end, "wb") as sink, BytePairFile(sink, "wb", level=level, threads=threads) as f:
                for chunk in generate(size, seed):
                    f.write(chunk)
        except BaseException:
            traceback.print_exc()
            status = 1
        os._exit(status)
    os.close(write_end)
    t = Totals()
    with os.fdopen(read_end, "rb") as raw:
        counting = _Counting(raw)
        with BytePairFile(counting) as f:
            while out := f.read(CHUNK):
                t.produced += len(out)
                t.crc_out = zlib.crc32(out, t.crc_out)
    _, status, usage = os.wait4(pid, 0)
    if status != 0:
        raise RuntimeError(f"the compressing child failed (status {status:#x})")
    mine = resource.getrusage(resource.RUSAGE_SELF)
    t.compressed = counting.count
    t.compress_s = usage.ru_utime + usage.ru_stime
    t.decompress_s = mine.ru_utime + mine.ru_stime
    t.child_peak = usage.ru_maxrss if sys.platform == "darwin" else usage.ru_maxrss * 1024
    for chunk in generate(size, seed):  # the input again, for its CRC, after the clocks are read
        t.original += len(chunk)
        t.crc_in = zlib.crc32(chunk, t.crc_in)
    return t


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="memory.py", description="Compress and decompress a generated stream on the fly; report peak RSS."
    )
    parser.add_argument("--size", type=parse_size, default=parse_size("2GB"), help="stream size (2GB)")
    parser.add_argument("--level", type=int, default=bytepair.DEFAULT_LEVEL, choices=sorted(bytepair.LEVELS))
    parser.add_argument("--threads", type=int, default=1, help="compression worker processes, 0 = all cores (1)")
    parser.add_argument("--via", choices=["objects", "pipe"], default="objects")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON to FILE")
    args = parser.parse_args(argv)

    next(generate(1, args.seed))  # the pool: set up before the baseline
    before = peak_rss()
    wall = time.perf_counter()
    if args.via == "pipe" and not hasattr(os, "fork"):
        parser.error("--via pipe needs os.fork")
    run = via_objects if args.via == "objects" else via_pipe
    t = run(args.size, args.seed, args.level, args.threads)
    wall = time.perf_counter() - wall
    after = peak_rss()

    mb = 1e6
    kernels = kernels_in_use()
    print(f"size {args.size / mb:.1f} MB, level {args.level}, threads {args.threads}, via {args.via}")
    print(f"kernels {kernels}")
    print(f"compressed {t.compressed / mb:.1f} MB (ratio {t.compressed / max(t.original, 1):.3f})")
    clock = "s in calls" if args.via == "objects" else "s of CPU"
    for name, seconds in (("compress", t.compress_s), ("decompress", t.decompress_s)):
        print(
            f"{name:<10} {seconds:8.1f} {clock}  {seconds / max(t.original, 1) * 1e9:7.1f} ns/byte"
            f"  {t.original / mb / max(seconds, 1e-9):6.2f} MB/s"
        )
    print(f"wall       {wall:8.1f} s  {wall / max(t.original, 1) * 1e9:7.1f} ns/byte (generation included)")
    if args.via == "objects":
        print(f"peak RSS   {before / mb:.1f} MB before, {after / mb:.1f} MB after (+{(after - before) / mb:.1f} MB)")
    else:
        print(f"peak RSS   compressing process {t.child_peak / mb:.1f} MB")
        print(f"peak RSS   decompressing process {after / mb:.1f} MB ({before / mb:.1f} MB before)")
    ok = t.original == args.size and t.produced == t.original and t.crc_in == t.crc_out
    print(f"round trip {'OK' if ok else 'FAILED'} ({t.produced} of {t.original} bytes, CRC-32 {t.crc_out:#010x})")
    if args.json:
        figures = {
            "size": args.size,
            "level": args.level,
            "threads": args.threads,
            "via": args.via,
            "kernels": kernels,
            "compressed": t.compressed,
            "compress_s": t.compress_s,
            "decompress_s": t.decompress_s,
            "wall_s": wall,
            "peak_rss_before": before,
            "peak_rss_after": after,
            "peak_rss_compressing_child": t.child_peak if args.via == "pipe" else None,
            "ok": ok,
        }
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
