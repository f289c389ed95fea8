"""Fuzz targets: every way bytepair reads untrusted data, each with its oracle.

A target makes a case from the seeds (``make``), runs the library on it
(``run``: the only part that is timed and whose memory is measured) and judges
the outcome (``check``), returning findings as ``(kind, detail)``. Oracles:

* only ``BytePairError`` subclasses may escape (``EOFError`` from a finished
  ``BytePairDecompressor``, ``ValueError``/``io.UnsupportedOperation`` from
  ``BytePairFile`` for the seeks its documentation refuses);
* the library must agree with the independent reference decoder of the format
  (``reference.py``): same verdict, same output. A mutant that decodes although
  the reference refuses it is ``accepts-invalid``; with wrong output,
  ``silent-corruption``;
* damage the format promises to detect (``Mutant.must_fail``) must be an error;
* a ``max_length`` must hold;
* where the compiled kernels are built, the compiled decoder and the numpy one agree: the same
  output, or the same exception class (``kernels-disagree``);
* the command line exits 1 with exactly one line on stderr and no traceback,
  leaves no partial output and keeps its input when it fails.
"""

from __future__ import annotations

import dataclasses
import io
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import bytepair
from bytepair import BytePairError, OutputLimitError
from bytepair.core.escape import Escapes
from bytepair.core.expand import expand_reference
from bytepair.core.tables import PairTables

from ..helpers import compiled_decoder, expand_in_python, expand_python_nodes, expand_vectorized, kernels
from . import container as C
from . import mutators as M
from . import reference
from .seeds import Seed

try:
    from bytepair import gage as _gage
except ImportError:  # pragma: no cover
    _gage = None  # type: ignore[assignment]

_BytePairFile: Any = getattr(bytepair, "BytePairFile", None)
_decompress_range: Any = getattr(bytepair, "decompress_range", None)
if _BytePairFile is None:
    try:
        from bytepair.io.file import BytePairFile as _BytePairFile
        from bytepair.io.file import decompress_range as _decompress_range
    except ImportError:  # pragma: no cover - written by another developer
        pass

REFERENCE_LIMIT = 4 << 20  # inputs larger than this are not given to the (slow) reference decoders
GAGE_EXPAND_LIMIT = 2 << 20  # the Gage reference expands outputs up to this size, else compares lengths

Finding = tuple[str, str]


@dataclasses.dataclass
class Case:
    target: str
    data: bytes
    how: str
    seed: str = "-"
    mutant: M.Mutant | None = None
    max_length: int | None = None
    params: dict[str, Any] = dataclasses.field(default_factory=dict)
    tables: PairTables | None = None

    def describe(self) -> str:
        extra = f" max_length={self.max_length}" if self.max_length is not None else ""
        params = "".join(f" {k}={v}" for k, v in self.params.items() if k not in ("ops",))
        return f"{self.how} [seed {self.seed}, {len(self.data)} bytes{extra}{params}]"


@dataclasses.dataclass
class Outcome:
    out: bytes | None = None
    exc: BaseException | None = None
    info: dict[str, Any] = dataclasses.field(default_factory=dict)


def _choose(rng: random.Random, weighted: list[tuple[M.Mutator, float]]) -> M.Mutator:
    return rng.choices([m for m, _ in weighted], [w for _, w in weighted])[0]


def mutate(rng: random.Random, seeds: list[Seed], fmt: str) -> M.Mutant:
    """A mutant, mostly of a seed of format *fmt*, sometimes of another or of nothing."""
    own = [s for s in seeds if s.fmt == fmt]
    r = rng.random()
    if r < 0.03:
        seed = rng.choice(own)
        return M.Mutant(seed.stream, "identity", seed.fmt, seed.name, seed.original)
    seed = rng.choice(seeds) if r < 0.10 or not own else rng.choice(own)
    weighted = list(M.BYTE_MUTATORS)
    if seed.fmt == "bytepair":
        weighted += M.BYTEPAIR_MUTATORS
    elif seed.fmt == "gage":
        weighted += M.GAGE_MUTATORS
    mutant = _choose(rng, weighted)(rng, seed, seeds)
    if rng.random() < 0.15:  # a second mutation on top of the first
        again = Seed(seed.name, seed.fmt, seed.original, mutant.data, seed.boundaries)
        second = _choose(rng, list(M.BYTE_MUTATORS))(rng, again, seeds)
        # two mutations may undo each other (append, then cut back): only the reference judges
        mutant = dataclasses.replace(second, how=f"{mutant.how} + {second.how}", must_fail=False, expect=None)
    return mutant


# -- the bytepair oracle ------------------------------------------------------------


def bytepair_verdict(data: bytes, max_length: int | None = None) -> tuple[bytes | None, str]:
    """(output, "") if the reference decodes *data*, else (None, why); ("?" when not asked)."""
    if len(data) > REFERENCE_LIMIT:
        return None, "?"
    try:
        return reference.decode_bytepair(data, max_length), ""
    except reference.Invalid as exc:
        return None, f"{type(exc).__name__}: {exc}"


def judge_bytepair(
    case: Case,
    out: bytes | None,
    exc: BaseException | None,
    *,
    limit: int | None = None,
    allowed: tuple[type[BaseException], ...] = (),
) -> list[Finding]:
    found: list[Finding] = []
    if exc is not None and not isinstance(exc, (BytePairError, *allowed)):
        return [("crash", f"{type(exc).__name__}: {exc}")]
    ref_out, why = bytepair_verdict(case.data, limit)
    mutant = case.mutant
    if out is not None:
        if limit is not None and len(out) > limit:
            found.append(("limit-ignored", f"{len(out)} bytes out, max_length={limit}"))
        if why and why != "?":
            expect = mutant.expect if mutant else None
            kind = "silent-corruption" if expect is not None and out != expect else "accepts-invalid"
            found.append((kind, f"decoded {len(out)} bytes; the reference refuses it ({why})"))
        elif ref_out is not None and out != ref_out:
            found.append(("wrong-output", f"{len(out)} bytes, the reference decodes {len(ref_out)}"))
        elif why == "?" and mutant is not None and mutant.expect is not None and out != mutant.expect:
            found.append(("silent-corruption", f"{len(out)} bytes differ from the original"))
        if mutant is not None and mutant.must_fail:
            found.append(("undetected-damage", "damage the format promises to detect decoded without error"))
    elif ref_out is not None:
        found.append(("refuses-valid", f"{type(exc).__name__}: {exc}"))
    return found


class Target:
    name = ""
    weight = 1.0
    fmt = "bytepair"

    def available(self) -> bool:
        return True

    def make(self, rng: random.Random, seeds: list[Seed]) -> Case:
        mutant = mutate(rng, seeds, self.fmt)
        return Case(self.name, mutant.data, mutant.how, mutant.seed, mutant)

    def run(self, case: Case) -> Outcome:
        raise NotImplementedError

    def check(self, case: Case, outcome: Outcome) -> list[Finding]:
        return judge_bytepair(case, outcome.out, outcome.exc, limit=case.max_length)

    def declared(self, case: Case, outcome: Outcome) -> int:
        """Output the input may legitimately demand: the memory bound is proportional to it."""
        return C.declared_output(case.data, case.max_length)


def _call(fn: Any, *args: Any, **kwargs: Any) -> Outcome:
    try:
        return Outcome(out=fn(*args, **kwargs))
    except Exception as exc:  # judged by check()
        return Outcome(exc=exc)


EXPAND_COMPILED = compiled_decoder()
"""The compiled decoder, or None where it is not built: then the targets run the numpy path only."""


def warm_up() -> None:
    """Run the compiled decoder once before the first case, so that no case is charged
    its first import."""
    if EXPAND_COMPILED is None:
        return
    data = bytes(range(256)) * 64 + b"abcabcabc" * 2000
    blob = bytepair.compress(data)
    with kernels("compiled"):
        assert bytepair.decompress(blob) == data
        if _gage is not None:
            assert _gage.decompress(_gage.compress(data)) == data


def _both_kernels(fn: Any, *args: Any, **kwargs: Any) -> Outcome:
    """*fn* on the numpy path; where the compiled kernels are built, on the compiled path
    too (its output or exception in ``info["compiled"]``)."""
    with kernels("numpy"):
        outcome = _call(fn, *args, **kwargs)
    if EXPAND_COMPILED is not None:
        with kernels("compiled"):
            compiled = _call(fn, *args, **kwargs)
        outcome.info["compiled"] = compiled.exc if compiled.exc is not None else compiled.out
    return outcome


def kernels_agree(outcome: Outcome) -> list[Finding]:
    """The compiled path gave the same output as the numpy path, or the same exception class."""
    if "compiled" not in outcome.info:
        return []
    got = outcome.info["compiled"]
    if outcome.exc is not None:
        if type(got) is not type(outcome.exc):
            what = f"{type(got).__name__}: {got}" if isinstance(got, BaseException) else f"{len(got)} bytes"
            return [("kernels-disagree", f"numpy raised {type(outcome.exc).__name__}: {outcome.exc}; compiled: {what}")]
    elif got != outcome.out:
        what = f"{type(got).__name__}: {got}" if isinstance(got, BaseException) else f"{len(got)} other bytes"
        return [("kernels-disagree", f"numpy decoded {len(outcome.out or b'')} bytes; compiled: {what}")]
    return []


class Decompress(Target):
    name = "decompress"
    weight = 3.0

    def run(self, case: Case) -> Outcome:
        return _both_kernels(bytepair.decompress, case.data)

    def check(self, case: Case, outcome: Outcome) -> list[Finding]:
        return super().check(case, outcome) + kernels_agree(outcome)


def pick_limit(rng: random.Random, expect: int | None) -> int:
    n = expect if expect is not None else rng.randint(0, 1 << 16)
    return rng.choice((0, 1, max(0, n - 1), n, n + 1, n // 2, rng.randint(0, 2 * n + 1), 1 << 26, (1 << 63)))


class DecompressLimit(Target):
    name = "decompress_limit"
    weight = 2.0

    def make(self, rng: random.Random, seeds: list[Seed]) -> Case:
        case = super().make(rng, seeds)
        expect = case.mutant.expect if case.mutant else None
        case.max_length = pick_limit(rng, len(expect) if expect is not None else None)
        return case

    def run(self, case: Case) -> Outcome:
        return _both_kernels(bytepair.decompress, case.data, max_length=case.max_length)

    def check(self, case: Case, outcome: Outcome) -> list[Finding]:
        return super().check(case, outcome) + kernels_agree(outcome)


def _pieces(rng: random.Random, n: int) -> list[int]:
    style = rng.choice(("one", "bytes", "small", "large", "random"))
    if style == "one":
        return [n]
    if style == "bytes":
        return [1] * n if n <= 3000 else [rng.randint(1, 8) for _ in range(n // 4)]
    top = {"small": 64, "large": 65536, "random": max(1, n)}[style]
    return [rng.randint(1, top) for _ in range(n // max(1, top // 2) + 2)]


class Stream(Target):
    """``BytePairDecompressor`` fed random pieces, with a random ``max_length`` per call;
    several streams are read one after another, as gzip reads members."""

    name = "stream"
    weight = 2.0

    def make(self, rng: random.Random, seeds: list[Seed]) -> Case:
        case = super().make(rng, seeds)
        case.params["pieces"] = _pieces(rng, len(case.data))
        case.params["chunk"] = rng.choice((-1, -1, 0, 1, 7, 4096, rng.randint(1, 70000)))
        case.params["after_eof"] = rng.random() < 0.2
        return case

    def run(self, case: Case) -> Outcome:
        data = case.data
        pieces: list[int] = case.params["pieces"]
        chunk: int = case.params["chunk"]
        out = bytearray()
        info: dict[str, Any] = {}
        try:
            d = bytepair.BytePairDecompressor()
            pos = 0
            k = 0
            pending = b""
            while pos < len(data) or pending:
                if pending:
                    piece, pending = pending, b""
                else:
                    size = pieces[k % len(pieces)]
                    k += 1
                    piece = data[pos : pos + size]
                    pos += len(piece)
                out += d.decompress(piece, max_length=chunk)
                if chunk == 0:  # max_length=0 returns nothing: drain with a real size
                    while not d.needs_input and not d.eof:
                        out += d.decompress(b"", max_length=4096)
                while not d.eof and not d.needs_input:
                    out += d.decompress(b"", max_length=chunk if chunk > 0 else -1)
                if d.eof:
                    pending = d.unused_data + data[pos:]
                    pos = len(data)
                    if case.params["after_eof"] and not pending:
                        try:
                            d.decompress(b"x")
                            info["after_eof"] = "no error"
                        except EOFError:
                            pass
                        except Exception as exc:
                            info["after_eof"] = f"{type(exc).__name__}: {exc}"
                    if pending:
                        d = bytepair.BytePairDecompressor()
            if not d.eof:
                return Outcome(
                    exc=bytepair.TruncatedDataError("(fuzz) the data ended before the stream did"), info=info
                )
            return Outcome(out=bytes(out), info=info)
        except Exception as exc:
            return Outcome(exc=exc, info=info)

    def check(self, case: Case, outcome: Outcome) -> list[Finding]:
        found = judge_bytepair(case, outcome.out, outcome.exc)
        if "after_eof" in outcome.info:
            found.append(("eof-convention", f"decompress() after the end: {outcome.info['after_eof']}"))
        return found

    def declared(self, case: Case, outcome: Outcome) -> int:
        return C.declared_output(case.data)


class Unseekable(io.RawIOBase):
    """A file object that cannot seek, as a pipe: ``BytePairFile`` may only seek forward on it."""

    def __init__(self, data: bytes) -> None:
        self._f = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def readinto(self, b: Any) -> int:
        return self._f.readinto(b)


class File(Target):
    """``BytePairFile`` over a seekable file object: read all, read in pieces, or seek
    around and read (every piece compared with the reference's output at that
    position); the same forward only over a source that cannot seek (a pipe);
    ``decompress_range`` on random ranges."""

    name = "file"
    weight = 2.0

    def available(self) -> bool:
        return _BytePairFile is not None

    def make(self, rng: random.Random, seeds: list[Seed]) -> Case:
        case = super().make(rng, seeds)
        mode = rng.choice(("all", "pieces", "seeks", "seeks", "forward", "range"))
        case.params["mode"] = mode
        size = len(case.mutant.expect) if case.mutant and case.mutant.expect is not None else 4096
        ops = []
        for _ in range(rng.randint(1, 8)):
            whence = rng.choice((0, 0, 1, 2))
            offset = rng.randint(0, size + 10) if whence == 0 else rng.randint(-size - 10, size + 10)
            ops.append((offset, whence, rng.choice((0, 1, 10, 700, rng.randint(0, size + 1), -1))))
        case.params["ops"] = ops
        if mode == "range":
            case.max_length = rng.choice((None, None, rng.randint(0, size)))
        return case

    def run(self, case: Case) -> Outcome:
        mode = case.params["mode"]
        reads: list[tuple[int, bytes]] = []
        info: dict[str, Any] = {"reads": reads}
        try:
            if mode == "range":
                for offset, _, n in case.params["ops"]:
                    start, length = abs(offset), n if n >= 0 else 1 << 40
                    reads.append((start, _decompress_range(case.data, start, length, max_length=case.max_length)))
                return Outcome(out=None, info=info)
            source = io.BufferedReader(Unseekable(case.data)) if mode == "forward" else io.BytesIO(case.data)
            with _BytePairFile(source) as f:
                if mode == "all":
                    return Outcome(out=f.read(), info=info)
                if mode == "pieces":
                    parts = []
                    while piece := f.read(case.params["ops"][0][2] if case.params["ops"][0][2] > 0 else 333):
                        parts.append(piece)
                    return Outcome(out=b"".join(parts), info=info)
                for offset, whence, n in case.params["ops"]:
                    if whence == 0 and offset < 0:
                        continue
                    if mode == "forward":  # only forward seeks on a pipe
                        offset, whence = abs(offset), io.SEEK_CUR
                    pos = f.seek(offset, whence)
                    reads.append((pos, f.read(n)))
                return Outcome(out=None, info=info)
        except Exception as exc:
            return Outcome(exc=exc, info=info)

    def check(self, case: Case, outcome: Outcome) -> list[Finding]:
        if case.params["mode"] in ("all", "pieces"):
            return judge_bytepair(case, outcome.out, outcome.exc)
        exc = outcome.exc
        if exc is not None and not isinstance(exc, BytePairError):
            return [("crash", f"{type(exc).__name__}: {exc}")]
        ref_out, why = bytepair_verdict(case.data)
        known = ref_out if ref_out is not None else (case.mutant.expect if case.mutant else None)
        if case.params["mode"] == "forward" and ref_out is None and why != "?":
            # a reader of a pipe hands out each frame once checked: from a damaged stream it
            # may return the frames before the damage (repeated or foreign ones included)
            known = reference.streamable_prefix(case.data)
        found: list[Finding] = []
        if known is not None:
            ops = case.params["ops"]
            for k, (pos, piece) in enumerate(outcome.info["reads"]):
                n = ops[k][2]
                want = known[pos : pos + n] if n >= 0 else known[pos:]
                if piece != want:
                    kind = "silent-corruption" if why else "wrong-output"
                    found.append(
                        (
                            kind,
                            f"read at {pos} gave {len(piece)} bytes, not the {len(want)} bytes there"
                            + (f" (the stream is damaged: {why})" if why else ""),
                        )
                    )
                    break
        if ref_out is not None and exc is not None and not isinstance(exc, OutputLimitError):
            found.append(("refuses-valid", f"{type(exc).__name__}: {exc}"))
        return found


class Gage(Target):
    """``bytepair.gage.decompress`` against the Gage reference decoder."""

    name = "gage"
    weight = 2.5
    fmt = "gage"

    def available(self) -> bool:
        return _gage is not None

    def make(self, rng: random.Random, seeds: list[Seed]) -> Case:
        case = super().make(rng, seeds)
        if rng.random() < 0.3:
            expect = case.mutant.expect if case.mutant else None
            case.max_length = pick_limit(rng, len(expect) if expect is not None else None)
        return case

    def run(self, case: Case) -> Outcome:
        return _both_kernels(_gage.decompress, case.data, max_length=case.max_length)

    def _verdict(self, case: Case) -> tuple[list[int] | None, str]:
        if len(case.data) > REFERENCE_LIMIT:
            return None, "?"
        try:
            return reference.gage_lengths(case.data, case.max_length), ""
        except reference.Invalid as exc:
            return None, f"{type(exc).__name__}: {exc}"

    def check(self, case: Case, outcome: Outcome) -> list[Finding]:
        out, exc = outcome.out, outcome.exc
        if exc is not None and not isinstance(exc, BytePairError):
            return [("crash", f"{type(exc).__name__}: {exc}")]
        found = kernels_agree(outcome)
        lengths, why = self._verdict(case)
        if why == "?":
            return found
        if out is not None:
            if case.max_length is not None and len(out) > case.max_length:
                found.append(("limit-ignored", f"{len(out)} bytes, max_length={case.max_length}"))
            if lengths is None:
                found.append(("accepts-invalid", f"decoded {len(out)} bytes; the reference refuses ({why})"))
            elif len(out) != sum(lengths):
                found.append(("wrong-output", f"{len(out)} bytes, the reference makes {sum(lengths)}"))
            elif len(out) <= GAGE_EXPAND_LIMIT and out != reference.decode_gage(case.data, case.max_length):
                found.append(("wrong-output", "bytes differ from the reference's"))
        elif lengths is not None:
            found.append(("refuses-valid", f"{type(exc).__name__}: {exc}"))
        return found

    def declared(self, case: Case, outcome: Outcome) -> int:
        if outcome.out is not None:
            return len(outcome.out)
        lengths, _ = self._verdict(case)
        return sum(lengths) if lengths else reference.gage_declared(case.data)


class Decoders(Target):
    """``expand`` (all three numpy paths, and the compiled one where it is built)
    and ``expand_reference`` on crafted ``PairTables``: they must agree.

    The one documented difference: the frame budget (all merges of a run of blocks
    expand to at most 4x its size + 64 KiB) is enforced by ``expand`` only; the
    stack decoder has no such need (``bytepair.gage`` sends heavy tables to it). So
    ``expand`` is compared with the reference rules including the budget and
    ``expand_reference`` with the same rules without it.
    """

    name = "decoders"
    weight = 2.0
    decoders: tuple[tuple[str, Any], ...] = (
        ("expand", expand_vectorized),  # the numpy path, whatever the size
        ("expand_python_nodes", expand_python_nodes),  # ... with its nodes built in Python
        ("expand_small", expand_in_python),  # the path for small runs, whatever the size
        ("expand_reference", expand_reference),
        *((("expand_compiled", EXPAND_COMPILED),) if EXPAND_COMPILED is not None else ()),
    )

    def make(self, rng: random.Random, seeds: list[Seed]) -> Case:
        tables, note = M.tables_from_seed(rng, seeds) if rng.random() < 0.3 else M.craft_tables(rng, seeds)
        return Case(self.name, b"", note, "-", tables=tables)

    def run(self, case: Case) -> Outcome:
        t = case.tables
        assert t is not None
        results: dict[str, Any] = {}
        for name, decoder in self.decoders:
            try:
                results[name] = decoder(t)
            except Exception as exc:
                results[name] = exc
        return Outcome(info=results)

    @staticmethod
    def blocks(t: PairTables) -> list[reference.RefBlock]:
        out: list[reference.RefBlock] = []
        m = p = e = 0
        esc = t.escapes
        for b in range(len(t.orig_len)):
            n, k = int(t.n_merges[b]), int(t.payload_len[b])
            merges = list(
                zip(t.code[m : m + n].tolist(), t.left[m : m + n].tolist(), t.right[m : m + n].tolist(), strict=True)
            )
            block = (int(t.orig_len[b]), int(t.n_fresh[b]), merges, t.payload[p : p + k].tobytes())
            if esc is not None and esc.count[b]:
                c = int(esc.count[b])
                out.append((*block, (c, int(esc.mark[b]), esc.literals[e : e + c].tobytes())))
                e += c
            else:
                out.append(block)
            m, p = m + n, p + k
        return out

    def check(self, case: Case, outcome: Outcome) -> list[Finding]:
        assert case.tables is not None
        found: list[Finding] = []
        blocks = self.blocks(case.tables)
        for name, _decoder in self.decoders:
            budget = name != "expand_reference"
            got = outcome.info[name]
            if isinstance(got, BaseException) and not isinstance(got, bytepair.CorruptDataError):
                found.append(("crash", f"{name}: {type(got).__name__}: {got}"))
                continue
            try:
                want: bytes | None = reference.decode_blocks(blocks, budget=budget)
                why = ""
            except reference.Invalid as exc:
                want, why = None, str(exc)
            if isinstance(got, bytes) and want is None:
                found.append(("accepts-invalid", f"{name} decodes {len(got)} bytes; the rules refuse ({why})"))
            elif isinstance(got, bytes) and got != want:
                found.append(("wrong-output", f"{name}: {len(got)} bytes differ from the rules' {len(want or b'')}"))
            elif want is not None and not isinstance(got, bytes):
                found.append(("refuses-valid", f"{name}: {got}"))
        decoded = {got for got in outcome.info.values() if isinstance(got, bytes)}
        if len(decoded) > 1:
            found.append(("decoders-disagree", "two decoders decode, to different bytes"))
        if "expand_compiled" in outcome.info:
            numpy_got, compiled_got = outcome.info["expand"], outcome.info["expand_compiled"]
            if type(numpy_got) is not type(compiled_got) or (
                isinstance(numpy_got, bytes) and numpy_got != compiled_got
            ):
                found.append(
                    ("kernels-disagree", f"expand: {numpy_got!r:.200}; expand_compiled: {compiled_got!r:.200}")
                )
        return found

    def declared(self, case: Case, outcome: Outcome) -> int:
        assert case.tables is not None
        return int(case.tables.orig_len.sum()) + len(case.tables.payload)


class Cli(Target):
    """``python -m bytepair`` in a subprocess: ``-t``, ``-d -c``, ``-d`` and ``-d --rm`` on a temp file."""

    name = "cli"
    weight = 0.04
    baseline: tuple[float, int] | None = None  # (CPU seconds, max RSS KiB) of a run on a tiny valid file

    def available(self) -> bool:
        try:
            import bytepair.cli.main  # noqa: F401
        except ImportError:
            return False
        return True

    def make(self, rng: random.Random, seeds: list[Seed]) -> Case:
        case = super().make(rng, seeds)
        case.params["mode"] = rng.choice(("t", "dc", "d", "d-rm"))
        return case

    @staticmethod
    def baseline_env() -> dict[str, str]:
        """The environment of a baseline run: the same path as the runs it is compared with."""
        return dict(os.environ)

    @staticmethod
    def spawn(args: list[str], cwd: str, timeout: float = 60.0, env: dict[str, str] | None = None) -> dict[str, Any]:
        """Run the command; its exit status, output, CPU time (from wait4) and peak RSS.

        The peak is the child's own ``VmHWM``, polled from /proc while it runs: the
        ``ru_maxrss`` of a child counts the parent's image it was forked from.
        """
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", "bytepair", *args],
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=env,
            )
            status_file = f"/proc/{proc.pid}/status"
            peak = 0
            deadline = time.monotonic() + timeout
            while True:
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    break
                try:
                    with open(status_file) as f:
                        for line in f:
                            if line.startswith("VmHWM:"):
                                peak = max(peak, int(line.split()[1]))
                except OSError:
                    pass
                if time.monotonic() > deadline:
                    proc.kill()
                time.sleep(0.003)
            proc.returncode = os.waitstatus_to_exitcode(status)
            out.seek(0)
            err.seek(0)
            return {
                "rc": proc.returncode,
                "stdout": out.read(),
                "stderr": err.read().decode(errors="replace"),
                "cpu": usage.ru_utime + usage.ru_stime,
                "maxrss": peak,
            }

    def run(self, case: Case) -> Outcome:
        if Cli.baseline is None:
            with tempfile.TemporaryDirectory() as d:
                Path(d, "ok.bp").write_bytes(bytepair.compress(b"baseline"))
                r = self.spawn(["-t", "ok.bp"], d, env=self.baseline_env())
                Cli.baseline = (r["cpu"], r["maxrss"])
        mode = case.params["mode"]
        args = {"t": ["-t"], "dc": ["-d", "-c"], "d": ["-d"], "d-rm": ["-d", "--rm"]}[mode]
        with tempfile.TemporaryDirectory() as d:
            Path(d, "in.bp").write_bytes(case.data)
            info = self.spawn([*args, "in.bp"], d)
            info["listing"] = sorted(os.listdir(d))
            src = Path(d, "in.bp")
            info["input_intact"] = src.exists() and src.read_bytes() == case.data
            dest = Path(d, "in")
            info["written"] = dest.read_bytes() if dest.exists() else None
        return Outcome(info=info)

    def check(self, case: Case, outcome: Outcome) -> list[Finding]:
        info = outcome.info
        mode = case.params["mode"]
        rc, stderr = info["rc"], info["stderr"]
        found: list[Finding] = []
        lines = stderr.splitlines()
        if "Traceback" in stderr:
            found.append(("cli-traceback", lines[-1] if lines else ""))
        if rc not in (0, 1):
            found.append(("cli-status", f"exit status {rc}: {stderr[-300:]!r}"))
        if rc == 1 and len(lines) != 1:
            found.append(("cli-stderr", f"{len(lines)} lines on stderr: {stderr[-300:]!r}"))
        ref_out, why = bytepair_verdict(case.data)
        if why == "?":
            return found
        if rc == 0:
            if ref_out is None:
                found.append(("accepts-invalid", f"-{mode} exits 0; the reference refuses ({why})"))
            elif mode == "dc" and info["stdout"] != ref_out:
                found.append(("wrong-output", f"-dc wrote {len(info['stdout'])} bytes, not {len(ref_out)}"))
            elif mode in ("d", "d-rm") and info["written"] != ref_out:
                found.append(("wrong-output", "-d wrote other bytes than the reference decodes"))
            if mode == "d-rm" and "in.bp" in info["listing"]:
                found.append(("cli-rm", "--rm kept the input after success"))
            if mode != "d-rm" and not info["input_intact"]:
                found.append(("cli-input-lost", "the input changed or vanished"))
        elif rc == 1:
            if ref_out is not None:
                found.append(("refuses-valid", lines[-1] if lines else ""))
            if info["listing"] != ["in.bp"]:
                found.append(("cli-partial-output", f"files after a failure: {info['listing']}"))
            if not info["input_intact"]:
                found.append(("cli-input-lost", "the input changed or vanished after a failure"))
        if mode == "dc" and rc == 1 and info["stdout"] and ref_out is None:
            pass  # -c streams what decoded before the damage, as gzip -c does
        return found


TARGETS: list[Target] = [Decompress(), DecompressLimit(), Stream(), File(), Gage(), Decoders(), Cli()]


def available_targets() -> dict[str, Target]:
    return {t.name: t for t in TARGETS if t.available()}


def tables_digest(t: PairTables) -> bytes:
    """A ``PairTables`` as bytes, to save a decoders finding (``np.savez``; ``load_tables`` reads it)."""
    buf = io.BytesIO()
    columns: dict[str, Any] = {
        f.name: np.asarray(getattr(t, f.name)) for f in dataclasses.fields(t) if f.name != "escapes"
    }
    if t.escapes is not None:  # as three arrays: escape_count, escape_mark, escape_literals
        columns.update({f"escape_{f.name}": getattr(t.escapes, f.name) for f in dataclasses.fields(t.escapes)})
    np.savez(buf, **columns)
    return buf.getvalue()


def load_tables(path: Path) -> PairTables:
    """A ``PairTables`` saved by ``tables_digest``."""
    with np.load(path) as z:
        columns: dict[str, Any] = {f.name: z[f.name] for f in dataclasses.fields(PairTables) if f.name in z.files}
        if "escape_count" in z.files:
            columns["escapes"] = Escapes(z["escape_count"], z["escape_mark"], z["escape_literals"])
    columns["first_block"] = int(columns["first_block"])
    return PairTables(**columns)
