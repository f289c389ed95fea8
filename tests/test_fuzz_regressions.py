"""Every input the fuzzer ever found a problem with (testdata/fuzz), through the fuzzer's own oracles.

The list is the table in testdata/fuzz/README.md: file, targets, expectation and
status. An ``open`` row is a bug whose fix is not applied yet: a strict expected
failure, which fails as soon as the fix lands (then mark the row ``fixed``).
"""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import pytest

from bytepair import BytePairError
from tests.fuzz import reference, run_case
from tests.fuzz import targets as T
from tests.fuzz.container import VERSION, declared_output, parse_frame, records
from tests.fuzz.seeds import bytepair_seeds
from tests.helpers import TESTDATA

FUZZ = TESTDATA / "fuzz"


@dataclasses.dataclass(frozen=True)
class Regression:
    path: Path
    targets: tuple[str, ...]
    expect: str
    status: str
    what: str


def regressions() -> list[Regression]:
    rows = []
    for line in (FUZZ / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 6 or not (FUZZ / cells[0]).is_file():
            continue
        rows.append(
            Regression(FUZZ / cells[0], tuple(t.strip() for t in cells[1].split(",")), cells[2], cells[3], cells[5])
        )
    return rows


REGRESSIONS = regressions()


def test_every_file_is_listed() -> None:
    listed = {r.path.name for r in REGRESSIONS}
    present = {p.name for p in FUZZ.iterdir() if p.name != "README.md"}
    assert listed == present, "testdata/fuzz/README.md must list every regression file, and only those"


def test_files_are_in_the_current_format() -> None:
    """A regression file of an older format would be refused for its version alone, whatever it
    was kept for: convert it (``python -m tests.fuzz.convert_v1``, see testdata/fuzz/README.md)."""
    old = [r.path.name for r in REGRESSIONS if r.path.suffix == ".bp" and r.path.read_bytes()[4] != VERSION]
    assert not old, f"not format version {VERSION}: {old}"


def test_seeds_have_escapes_and_the_reference_decodes_them() -> None:
    """The fuzzer's own footing: its seeds include blocks with escapes (for the escape mutators
    to edit), and its reference decoder agrees with the library on every seed."""
    seeds = [s for s in bytepair_seeds() if s.fmt == "bytepair"]
    escaping = 0
    for seed in seeds:
        assert reference.decode_bytepair(seed.stream) == seed.original, seed.name
        for rec in records(seed.stream):
            if rec.kind == "frame":
                escaping += sum(1 for b in parse_frame(seed.stream, rec.start)[0].blocks if b.n_escaped)
    assert escaping >= 5


def _seek_problems(data: bytes, expect: str, seekable: bool = True) -> list[str]:
    size = declared_output(data)
    problems = []
    truth, _ = T.bytepair_verdict(data)
    for pos in sorted({size // 3, size // 2, 2 * size // 3, max(size - 1, 0)}):
        for n in (8, 64):
            try:
                source = io.BytesIO(data) if seekable else io.BufferedReader(T.Unseekable(data))
                with T._BytePairFile(source) as f:
                    f.seek(pos)
                    got = f.read(n)
            except BytePairError:
                continue
            if expect == "error":
                problems.append(f"seek({pos}) then read({n}) gave {len(got)} bytes without an error")
            elif truth is not None and got != truth[pos : pos + n]:
                problems.append(f"seek({pos}) then read({n}) gave wrong bytes")
    return problems


def _problems(target_name: str, path: Path, expect: str) -> list[str]:
    if target_name in ("file-seek", "file-pipe-seek"):
        return _seek_problems(path.read_bytes(), expect, seekable=target_name == "file-seek")
    targets = T.available_targets()
    name = "file" if target_name == "file-pipe" else target_name  # the same reader over a pipe
    if name not in targets:
        pytest.skip(f"target {name} is not available here")
    target = targets[name]
    if path.suffix == ".npz":
        case = T.Case(name, b"", path.name, tables=T.load_tables(path))
    else:
        case = T.Case(name, path.read_bytes(), path.name)
    case.params.update(
        {
            "pieces": [4096],
            "chunk": -1,
            "after_eof": True,
            "mode": {"file": "all", "file-pipe": "forward"}.get(target_name, "d"),
            "ops": [(0, 0, -1)],
        }
    )
    problems = []
    for traced in (True, False):  # memory under tracemalloc, then time without its overhead
        outcome, findings, _ = run_case(target, case, 0, traced=traced)
        problems += [f"{target_name}: {kind}: {detail}" for kind, detail in findings]
    if expect == "ok" and (outcome.exc is not None or outcome.info.get("rc", 0) != 0):
        problems.append(f"{target_name}: refused: {outcome.exc or outcome.info.get('stderr')}")
    if expect == "error" and outcome.exc is None and outcome.info.get("rc", 1) == 0:
        problems.append(f"{target_name}: decoded without an error")
    return sorted(set(problems))


@pytest.mark.parametrize("reg", REGRESSIONS, ids=[r.path.name for r in REGRESSIONS])
def test_regression(reg: Regression, request: pytest.FixtureRequest) -> None:
    if reg.status.startswith("open"):
        request.applymarker(pytest.mark.xfail(strict=True, reason=f"open bug: {reg.what[:200]}"))
    problems = [p for name in reg.targets for p in _problems(name, reg.path, reg.expect)]
    assert not problems, "\n".join(problems)
