"""``import bytepair`` imports none of the PyData hosts: each integration imports its host, and only it."""

from __future__ import annotations

import subprocess
import sys

import pytest

HOSTS = ("numcodecs", "zarr", "fsspec", "dask", "distributed", "pandas")


def _loaded_after(statement: str) -> list[str]:
    code = f"import sys\n{statement}\nprint(' '.join(m for m in {HOSTS!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    return done.stdout.split()


def test_import_bytepair_imports_no_host() -> None:
    assert _loaded_after("import bytepair; bytepair.compress(b'abc'); bytepair.BytePairFile") == []


@pytest.mark.parametrize(
    ("module", "hosts"),
    [
        ("bytepair.numcodecs", ["numcodecs"]),
        ("bytepair.fsspec", ["fsspec"]),
    ],
)
def test_an_integration_imports_its_host(module: str, hosts: list[str]) -> None:
    pytest.importorskip(hosts[0], reason=f"{module} needs {hosts[0]}")
    assert _loaded_after(f"import {module}") == hosts
