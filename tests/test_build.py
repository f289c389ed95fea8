"""``setup.py``: a machine without a working C compiler still gets a working install, on numpy,
and says why (CI checks the bounds-checked build, ``BYTEPAIR_CHECKED=1``, in ``.ci/run``)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.build import REPO

pytestmark = pytest.mark.skipif(importlib.util.find_spec("Cython") is None, reason="building needs Cython")


def checkout_copy(where: Path) -> Path:
    """The package and its build files, without anything built."""
    shutil.copytree(REPO / "bytepair", where / "bytepair", ignore=shutil.ignore_patterns("*.so", "*.c", "__pycache__"))
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(REPO / name, where / name)
    return where


def test_a_failed_compile_leaves_a_working_package_on_numpy(tmp_path: Path) -> None:
    tree = checkout_copy(tmp_path)
    env = {**os.environ, "CC": "/bin/false", "PYTHONDONTWRITEBYTECODE": "1"}
    built = subprocess.run(
        [sys.executable, "setup.py", "build_ext", "--inplace", "-t", str(tmp_path / "tmp")],
        cwd=tree,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr
    assert "bytepair.core.kernels._decode was not built" in built.stderr
    assert not list(tree.rglob("*.so"))
    env = {k: v for k, v in os.environ.items() if k != "BYTEPAIR_KERNELS"} | {"PYTHONPATH": str(tree)}
    probe = "import bytepair; d = b'abc' * 999; assert bytepair.decompress(bytepair.compress(d)) == d; "
    probe += "from bytepair import backend; print(backend.describe())"
    ran = subprocess.run([sys.executable, "-c", probe], cwd=tree, capture_output=True, text=True, env=env, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("numpy (bytepair.core.kernels._crc was not built: reinstall with a C compiler")
