"""Shared test helpers: where the ground-truth data lives, and how to skip without it."""

from __future__ import annotations

import contextlib
import hashlib
import os
import unittest.mock
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import bytepair.backend
import bytepair.core.expand
import bytepair.io.parallel
import bytepair.io.stream
from bytepair import BytePairError
from bytepair.core.tables import PairTables
from tests.build import REPO

TESTDATA = REPO / "testdata"
SHARED = Path(os.environ.get("BYTEPAIR_SHARED", REPO.parent / "shared"))
CORPUS = SHARED / "corpus"
GAGE_VECTORS = TESTDATA / "gage"
"""Gage's own vectors (a copy of ../shared/gage-vectors with its MANIFEST): in the repo, so they never skip."""


def gage_input(name: str) -> bytes:
    """The input of Gage's vector *name* (``NAME.bin``). Four inputs are corpus files, which are
    never copied into the repo: for those, Gage's own output is decoded and must match the input's
    SHA-256 in the MANIFEST (so a broken decoder fails here, not silently)."""
    path = GAGE_VECTORS / name
    if path.exists():
        return path.read_bytes()
    from bytepair import gage

    data = gage.decompress((GAGE_VECTORS / (name + ".gage")).read_bytes())
    for line in (GAGE_VECTORS / "MANIFEST").read_text().splitlines():
        fields = line.split("\t")
        if fields[0] == name:
            assert hashlib.sha256(data).hexdigest() == fields[2], f"{name}: Gage's output decodes to other bytes"
            return data
    raise AssertionError(f"{name} is not in testdata/gage/MANIFEST")


def corpus_files(name: str) -> list[Path]:
    """The files of one corpus (``canterbury`` or ``calgary``), or a skip if it is absent."""
    folder = CORPUS / name
    if not folder.is_dir():
        pytest.skip(f"{folder} is absent: the {name} corpus lives in ../shared beside the repo")
    return sorted(p for p in folder.iterdir() if p.is_file())


def require_shared(path: Path) -> Path:
    """*path* inside ../shared, or a skip naming what is missing."""
    if not path.exists():
        pytest.skip(f"{path} is absent: ground-truth data lives in ../shared beside the repo")
    return path


def assert_every_bit_flip_is_an_error(blob: bytes, data: bytes, decode: Callable[[bytes], bytes]) -> None:
    """Flip each bit of *blob* in turn: *decode* must raise a ``BytePairError`` every time."""
    damaged = bytearray(blob)
    for bit in range(8 * len(blob)):
        damaged[bit // 8] ^= 1 << (bit % 8)
        try:
            out = decode(bytes(damaged))
        except BytePairError:
            pass
        else:
            raise AssertionError(f"bit {bit} flipped: decoded {'the same' if out == data else 'wrong'} data")
        damaged[bit // 8] ^= 1 << (bit % 8)


@contextlib.contextmanager
def frame_size(size: int) -> Iterator[None]:
    """Make the compressor cut frames of *size* input bytes, so small data makes multi-frame streams."""
    names = vars(bytepair.io.stream)  # the compressor reads the module global
    saved = names["FRAME_SIZE"]
    names["FRAME_SIZE"] = size
    try:
        yield
    finally:
        names["FRAME_SIZE"] = saved


def expand_vectorized(t: PairTables) -> bytes:
    """The fast decoder's numpy path, whatever the size of *t*."""
    with (
        unittest.mock.patch.object(bytepair.core.expand, "SMALL_RUN", -1),
        unittest.mock.patch.object(bytepair.core.expand, "PYTHON_NODES", -1),
    ):
        return bytepair.core.expand.expand_numpy(t).tobytes()


def expand_python_nodes(t: PairTables) -> bytes:
    """The fast decoder's numpy path with its nodes built in Python, whatever the size of *t*."""
    with (
        unittest.mock.patch.object(bytepair.core.expand, "SMALL_RUN", -1),
        unittest.mock.patch.object(bytepair.core.expand, "PYTHON_NODES", 1 << 62),
    ):
        return bytepair.core.expand.expand_numpy(t).tobytes()


def expand_in_python(t: PairTables) -> bytes:
    """The fast decoder's path for small runs of blocks, whatever the size of *t*."""
    with (
        unittest.mock.patch.object(bytepair.core.expand, "SMALL_RUN", 1 << 62),
        unittest.mock.patch.object(bytepair.core.expand, "PYTHON_NODES", 1 << 62),
    ):
        return bytepair.core.expand.expand_numpy(t).tobytes()


def compiled_decoder() -> Callable[[PairTables], bytes] | None:
    """The compiled decoder (``bytepair.core.kernels.decode.expand``) as bytes, or None
    where the compiled kernels are not built."""
    if not compiled_available():
        return None
    from bytepair.core.kernels import decode

    def expand_compiled(t: PairTables) -> bytes:
        return decode.expand(t).tobytes()

    return expand_compiled


@contextlib.contextmanager
def kernels(mode: str) -> Iterator[None]:
    """Run the block on path *mode* (``numpy`` or ``compiled``), in this process and in the
    processes it starts (``BYTEPAIR_KERNELS``)."""
    bytepair.backend.choice()  # chosen from the real environment first: what the block ends by restoring
    saved = os.environ.get(bytepair.backend.KERNELS_ENV)
    os.environ[bytepair.backend.KERNELS_ENV] = mode
    try:
        with bytepair.backend.use(mode):
            yield
    finally:
        if saved is None:
            del os.environ[bytepair.backend.KERNELS_ENV]
        else:
            os.environ[bytepair.backend.KERNELS_ENV] = saved


DECODERS: tuple[Callable[[PairTables], bytes], ...] = (
    expand_vectorized,
    expand_python_nodes,
    expand_in_python,
    bytepair.core.expand.expand_reference,
)
"""Every way a run of blocks can be decoded: they must agree, and refuse alike."""


def record_pools(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, bool]]:
    """Every work queue of the parallel pipeline that starts its workers from now on: how many
    workers besides the caller's thread, and whether they are threads. Recorded when the queue
    starts them, which is certain; which thread then runs each job is a race (the caller's
    thread runs waiting jobs while it waits, and a fast kernel may leave a worker nothing)."""
    started: list[tuple[int, bool]] = []
    queue = bytepair.io.parallel._WorkQueue
    real_put = queue.put

    def put(self: Any, job: Callable[..., Any], *args: Any) -> int:
        if not self._feeders:
            started.append((self.n_feeders, self.in_threads))
        return real_put(self, job, *args)

    monkeypatch.setattr(queue, "put", put)
    return started


KERNEL_PATHS = ("numpy", "compiled")
"""The paths the ``kernels`` fixture (conftest.py) runs a test on."""

NOT_BUILT = "the compiled kernels are not built here (pip install . with a C compiler; docs/kernels.md)"


def compiled_available() -> bool:
    """Whether this checkout's compiled kernels are built (``bytepair.backend``)."""
    return bytepair.backend._compiled_choice().name == "compiled"


def use_kernels(path: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Make bytepair take *path* (``numpy`` or ``compiled``) until the test ends, here and in
    the processes it starts; a skip when the compiled kernels are asked for and not built.
    Returns *path*."""
    if path == "compiled" and not compiled_available():
        pytest.skip(NOT_BUILT)
    monkeypatch.setenv(bytepair.backend.KERNELS_ENV, path)
    chosen = bytepair.backend.Choice(path, "" if path == "compiled" else "asked for")
    monkeypatch.setattr(bytepair.backend, "_choice", chosen)
    monkeypatch.setattr(bytepair.backend, "_compiled", path == "compiled")
    reader = bytepair.backend.kernel("stream").decode_whole if path == "compiled" else None
    monkeypatch.setattr(bytepair.backend, "read_whole", reader, raising=False)  # (what backend._set looks up again)
    return path


def read_whole(blob: bytes, max_length: int | None = None) -> bytes | None:
    """The one-call reader's answer, as ``bytepair.decompress`` asks it (``backend.read_whole``):
    *blob*'s bytes, or None where it leaves the stream to the frame-by-frame reader (always,
    on the numpy path)."""
    from bytepair.container.codec import MOST_PER_BYTE

    reader = bytepair.backend.read_whole
    if reader is None:
        return None
    return reader(blob, -1 if max_length is None else min(max_length, 1 << 62), MOST_PER_BYTE)


def compiled(path: str) -> bool:
    """Whether bytepair takes the compiled path, given the ``kernels`` fixture's *path*."""
    return path == "compiled"


def frames_each_split_task_decodes(content: bytes, pieces: Any) -> list[int]:
    """How many frames each task of ``bytepair.dask.read_text(..., blocksize=...)`` should decode,
    worked out from the original bytes and the frames' places in them (the pieces of
    ``bytepair.dask.plan`` for one file): its own frames, except that a piece after the first
    with no newline stops there, any other reads on through the frames up to the one holding
    the first newline after its own bytes (or the last one)."""
    frames = [frame for piece in pieces for frame in piece.frames]
    counts = []
    lo = 0
    for piece in pieces:
        hi = lo + len(piece.frames)
        if lo == hi:
            counts.append(0)
            continue
        start = frames[lo].original_offset
        end = frames[hi - 1].original_offset + frames[hi - 1].original_size
        own = content[start:end]
        more = hi
        if not (lo and b"\n" not in own):
            newline = content.find(b"\n", end)
            stop = len(content) if newline < 0 else newline + 1
            while more < len(frames) and frames[more].original_offset < stop:
                more += 1
        counts.append(more - lo)
        lo = hi
    return counts


def replace_kernels(patch: pytest.MonkeyPatch, **modules: Any) -> None:
    """Make ``backend.kernel`` hand out *modules* by name (``frame=...``), the others as before."""
    real = bytepair.backend.kernel
    patch.setattr(bytepair.backend, "kernel", lambda name: modules[name] if name in modules else real(name))


def framed(blob: bytes) -> bytes:
    """*blob* (one stream) with a compact stream written out as the framed stream of the same
    block: a frame and an end record around it (docs/FORMAT.md). Tests that take a stream's
    frames apart, or edit them, get frames whatever form the writer chose."""
    from bytepair.container import format as fmt

    if blob[5] != fmt.COMPACT:
        return blob
    rec = fmt.compact_record(blob, fmt.STREAM_HEADER_SIZE)
    assert rec is not None and rec.end == len(blob), "not one whole compact stream"
    if not rec.orig_size:
        return fmt.pack_stream_header() + fmt.pack_end(0, 0, 0)
    body = bytes(blob[rec.start : rec.end])
    if rec.stored:
        size = rec.orig_size.to_bytes(2, "little")
        body = size + size + bytes(5) + body  # a stored block: payload_len = orig_len, no merges, no escapes
    frame = fmt.frame_from_body(body, 1, rec.orig_size, rec.content_crc)
    return fmt.pack_stream_header() + frame + fmt.pack_end(1, rec.orig_size, rec.content_crc)
