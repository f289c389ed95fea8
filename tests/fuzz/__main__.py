"""``python -m tests.fuzz``: fuzz bytepair's readers for a while, or replay one case."""

from __future__ import annotations

import argparse
import resource
import sys
from pathlib import Path

from . import build_case, default_save_dir, run, run_case
from .seeds import all_seeds
from .targets import available_targets, warm_up


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    parser.add_argument("--seconds", type=float, default=60.0, help="how long to run (default 60)")
    parser.add_argument("--seed", type=int, default=0, help="campaign seed (default 0)")
    parser.add_argument("--target", help=f"comma-separated targets (default all): {', '.join(available_targets())}")
    parser.add_argument("--save", type=Path, help="directory for findings (default: a new temporary directory)")
    parser.add_argument("--cases", type=int, help="stop after this many cases instead of --seconds")
    parser.add_argument("--first-case", type=int, default=0, help="start at this case number")
    parser.add_argument("--replay", type=int, metavar="I", help="rebuild and run case I only, and describe it")
    parser.add_argument(
        "--max-memory",
        type=float,
        default=6.0,
        help="address-space limit in GiB, so a memory bomb fails instead of swamping the machine",
    )
    parser.add_argument("--progress", type=float, default=60.0, help="seconds between progress lines")
    opts = parser.parse_args(argv)
    targets = opts.target.split(",") if opts.target else None
    if opts.max_memory > 0:
        limit = int(opts.max_memory * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    if opts.replay is not None:
        known = available_targets()
        chosen = [known[t] for t in targets] if targets else list(known.values())
        target, case = build_case(opts.seed, opts.replay, chosen, all_seeds())
        warm_up()
        outcome, findings, measure = run_case(target, case, opts.replay, traced=False)
        print(f"case {opts.replay}: {target.name}: {case.describe()}")
        result = (
            f"raised {type(outcome.exc).__name__}: {outcome.exc}"
            if outcome.exc is not None
            else f"returned {len(outcome.out)} bytes"
            if outcome.out is not None
            else "done"
        )
        print(f"  {result}; {measure.cpu:.3f} s CPU, {measure.wall:.3f} s wall")
        for kind, detail in findings:
            print(f"  FINDING {kind}: {detail}")
        if opts.save:
            opts.save.mkdir(parents=True, exist_ok=True)
            path = opts.save / f"case-{opts.replay}.{'npz' if case.tables is not None else 'bin'}"
            if case.tables is not None:
                from .targets import tables_digest

                path.write_bytes(tables_digest(case.tables))
            else:
                path.write_bytes(case.data)
            print(f"  input saved to {path}")
        return 1 if findings else 0

    save_dir = opts.save or default_save_dir()
    save_dir.mkdir(parents=True, exist_ok=True)
    print(
        f"fuzzing {', '.join(targets or available_targets())} for "
        f"{opts.cases if opts.cases is not None else opts.seconds} {'cases' if opts.cases else 'seconds'}, "
        f"seed {opts.seed}, findings to {save_dir}",
        flush=True,
    )
    report = run(
        opts.seconds,
        opts.seed,
        targets,
        save_dir,
        max_cases=opts.cases,
        first_case=opts.first_case,
        log=sys.stdout,
        progress_every=opts.progress,
    )
    print(report.summary(), flush=True)
    return 1 if report.findings else 0


if __name__ == "__main__":
    sys.exit(main())
