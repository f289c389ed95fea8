"""The bytepair fuzzer: mutated, crafted and random inputs for every reader, with oracles.

``python -m tests.fuzz --seconds N --seed S [--target NAME] [--save DIR]`` runs it;
``run()`` is the same from Python (``tests/test_hostile.py`` runs a short fixed-seed
campaign). Case *i* of seed *S* is built from ``random.Random(f"bytepair-fuzz/{S}/{i}")``
alone, so ``--replay i`` rebuilds it exactly (with the same ``--target`` option).

Each case is judged by its target's oracle (``targets.py``) and by two limits:
it must finish within 1 second of CPU time (plus 1 s per 20 MB of output it may
legitimately produce), and its memory must stay proportional to what the input
declares (or ``max_length``): every 4th case runs under ``tracemalloc`` (numpy
reports its buffers to it) and must peak below 4 MiB + 48 x the declared output
+ 16 x the input; the others must not raise the process's peak RSS by more than
32 MiB + 64 x (declared output + input).
"""

from __future__ import annotations

import collections
import dataclasses
import random
import resource
import signal
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import TextIO

from .seeds import Seed, all_seeds
from .targets import Case, Cli, Outcome, Target, available_targets, tables_digest, warm_up

__all__ = ["Finding", "Report", "build_case", "run", "run_case"]

CPU_LIMIT = 1.0
"""Seconds of CPU a case may take (plus SLOW_OUTPUT_RATE for what it may produce)."""
SLOW_OUTPUT_RATE = 20e6
"""Bytes per second: a case producing (or declaring) more output may take that much longer."""
TRACE_EVERY = 4
HANG_SECONDS = 60.0
SAVE_PER_SIGNATURE = 3


class Hang(BaseException):
    """Raised by the alarm in a case that runs far too long (not an ``Exception``: targets catch those)."""


@dataclasses.dataclass
class Finding:
    kind: str
    target: str
    detail: str
    index: int
    case: str
    data: bytes
    path: Path | None = None

    @property
    def signature(self) -> tuple[str, str, str]:
        return self.target, self.kind, self.case.split(" ", 1)[0]


@dataclasses.dataclass
class Measure:
    index: int
    target: str
    case: str
    wall: float
    cpu: float
    memory: int  # bytes: tracemalloc peak, or growth of peak RSS
    traced: bool


@dataclasses.dataclass
class Report:
    seed: int
    cases: int = 0
    seconds: float = 0.0
    per_target: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    findings: list[Finding] = dataclasses.field(default_factory=list)
    signatures: collections.Counter[tuple[str, str, str]] = dataclasses.field(default_factory=collections.Counter)
    slowest: Measure | None = None
    hungriest: Measure | None = None
    save_dir: Path | None = None

    @property
    def rate(self) -> float:
        return self.cases / self.seconds if self.seconds else 0.0

    def summary(self) -> str:
        lines = [
            f"seed {self.seed}: {self.cases} cases in {self.seconds:.1f} s ({self.rate:.1f} cases/s)",
            "per target: " + ", ".join(f"{k} {v}" for k, v in sorted(self.per_target.items())),
            f"findings: {sum(self.signatures.values())} in {len(self.signatures)} kinds"
            + (f", saved to {self.save_dir}" if self.save_dir else ""),
        ]
        for (target, kind, mutator), n in self.signatures.most_common():
            first = next(f for f in self.findings if f.signature == (target, kind, mutator))
            lines.append(f"  {n:6d} x {kind} in {target} via {mutator}: case {first.index}: {first.detail[:160]}")
        if self.slowest:
            s = self.slowest
            lines.append(
                f"slowest case: {s.cpu:.3f} s CPU ({s.wall:.3f} s wall), case {s.index} {s.target}: {s.case[:200]}"
            )
        if self.hungriest:
            h = self.hungriest
            lines.append(
                f"most memory: {h.memory / 2**20:.1f} MiB ({'tracemalloc peak' if h.traced else 'RSS growth'})"
                f", case {h.index} {h.target}: {h.case[:200]}"
            )
        return "\n".join(lines)


def case_rng(seed: int, index: int) -> random.Random:
    return random.Random(f"bytepair-fuzz/{seed}/{index}")


def build_case(seed: int, index: int, targets: list[Target], seeds: list[Seed]) -> tuple[Target, Case]:
    rng = case_rng(seed, index)
    target = rng.choices(targets, [t.weight for t in targets])[0] if len(targets) > 1 else targets[0]
    return target, target.make(rng, seeds)


def _maxrss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    raise Hang()


def run_case(target: Target, case: Case, index: int, traced: bool) -> tuple[Outcome, list[tuple[str, str]], Measure]:
    """Run and judge one case: the target's oracle, then the time and memory limits."""
    rss0 = _maxrss()
    if traced:
        tracemalloc.start()
    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, HANG_SECONDS)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    try:
        outcome = target.run(case)
    except Hang:
        outcome = Outcome(exc=TimeoutError(f"still running after {HANG_SECONDS} s"))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        peak = tracemalloc.get_traced_memory()[1] if traced else 0
        if traced:
            tracemalloc.stop()
    growth = _maxrss() - rss0
    findings = list(target.check(case, outcome))
    if isinstance(outcome.exc, TimeoutError):
        findings.append(("hang", str(outcome.exc)))
    declared = max(target.declared(case, outcome), len(outcome.out or b""))
    if isinstance(target, Cli):
        assert Cli.baseline is not None
        cpu = outcome.info["cpu"] - Cli.baseline[0]
        growth = (outcome.info["maxrss"] - Cli.baseline[1]) * 1024
        traced = False
    memory = peak if traced else growth
    measure = Measure(index, target.name, case.describe(), wall, cpu, memory, traced)
    limit = CPU_LIMIT + declared / SLOW_OUTPUT_RATE
    if not traced and cpu > limit:
        findings.append(("slow", f"{cpu:.2f} s CPU (limit {limit:.2f} s for {declared} bytes of output)"))
    if traced and peak > 4 * 2**20 + 48 * declared + 16 * len(case.data):
        findings.append(
            (
                "memory",
                f"tracemalloc peak {peak / 2**20:.1f} MiB for {len(case.data)} bytes in, {declared} declared out",
            )
        )
    if not traced and growth > 32 * 2**20 + 64 * (declared + len(case.data)):
        findings.append(
            ("memory", f"peak RSS grew {growth / 2**20:.1f} MiB for {len(case.data)} bytes in, {declared} declared out")
        )
    return outcome, findings, measure


def _save(finding: Finding, case: Case, save_dir: Path, n: int, seed: int, target_option: str | None) -> Path:
    stem = f"{n:04d}-{finding.target}-{finding.kind}"
    if case.tables is not None:
        path = save_dir / f"{stem}.npz"
        path.write_bytes(tables_digest(case.tables))
    else:
        path = save_dir / f"{stem}.bin"
        path.write_bytes(case.data)
    replay = f"python -m tests.fuzz --seed {seed} --replay {finding.index}" + (
        f" --target {target_option}" if target_option else ""
    )
    (save_dir / f"{stem}.txt").write_text(
        f"kind: {finding.kind}\ntarget: {finding.target}\ncase {finding.index}: {case.describe()}\n"
        f"detail: {finding.detail}\nreplay: {replay}\n"
    )
    return path


def run(
    seconds: float,
    seed: int = 0,
    targets: list[str] | None = None,
    save_dir: Path | None = None,
    *,
    max_cases: int | None = None,
    first_case: int = 0,
    log: TextIO | None = None,
    progress_every: float = 60.0,
    on_finding: Callable[[Finding], None] | None = None,
) -> Report:
    """Fuzz for *seconds* (or *max_cases*), from case *first_case* on; findings saved to *save_dir*."""
    known = available_targets()
    if targets:
        unknown = sorted(set(targets) - set(known))
        if unknown:
            raise ValueError(f"unknown or unavailable targets {unknown}; available: {sorted(known)}")
        chosen = [known[name] for name in targets]
    else:
        chosen = list(known.values())
    seeds = all_seeds()
    warm_up()
    report = Report(seed, save_dir=save_dir)
    target_option = ",".join(targets) if targets else None
    start = time.perf_counter()
    next_progress = start + progress_every
    index = first_case
    saved = 0
    while True:
        now = time.perf_counter()
        if (max_cases is not None and report.cases >= max_cases) or (max_cases is None and now - start >= seconds):
            break
        target, case = build_case(seed, index, chosen, seeds)
        _, problems, measure = run_case(target, case, index, traced=index % TRACE_EVERY == 0)
        report.cases += 1
        report.per_target[target.name] += 1
        if report.slowest is None or measure.cpu > report.slowest.cpu:
            report.slowest = measure
        if report.hungriest is None or measure.memory > report.hungriest.memory:
            report.hungriest = measure
        for kind, detail in problems:
            finding = Finding(kind, target.name, detail, index, case.describe(), case.data)
            report.signatures[finding.signature] += 1
            if report.signatures[finding.signature] <= SAVE_PER_SIGNATURE:
                if save_dir is not None:
                    saved += 1
                    finding.path = _save(finding, case, save_dir, saved, seed, target_option)
                report.findings.append(finding)
                if log:
                    print(
                        f"FINDING {kind} in {target.name}, case {index}: {detail[:300]}\n    {case.describe()[:300]}",
                        file=log,
                        flush=True,
                    )
                if on_finding:
                    on_finding(finding)
        index += 1
        if log and time.perf_counter() >= next_progress:
            next_progress += progress_every
            elapsed = time.perf_counter() - start
            print(
                f"[{elapsed:7.0f} s] {report.cases} cases ({report.cases / elapsed:.1f}/s), "
                f"{sum(report.signatures.values())} findings",
                file=log,
                flush=True,
            )
    report.seconds = time.perf_counter() - start
    return report


def default_save_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="bytepair-fuzz-"))
