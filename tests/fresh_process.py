"""Run code in a new interpreter that sees this checkout's entry points, as an installed bytepair would.

numcodecs, zarr and fsspec find plugins through package metadata, which a
source checkout does not have until it is installed. Rather than depend on how
(or whether) the tester installed it, the entry points declared in
pyproject.toml are written into a ``.dist-info`` folder in a temporary
directory that goes first on the child's path, beside the checkout itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.helpers import REPO


def write_dist_info(where: Path) -> None:
    """A minimal installed-package record of bytepair with pyproject's entry points."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    info = where / f"bytepair-{project['version']}.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: bytepair\nVersion: {project['version']}\n")
    lines = []
    for group, entries in project.get("entry-points", {}).items():
        lines.append(f"[{group}]")
        lines.extend(f"{name} = {target}" for name, target in entries.items())
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")


def run_fresh(code: str, where: Path, timeout: float = 120) -> str:
    """Run *code* in a new interpreter started in *where*; its stdout, or an assertion with its stderr."""
    write_dist_info(where)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(where), str(REPO)]))
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=where, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, done.stderr
    return done.stdout
