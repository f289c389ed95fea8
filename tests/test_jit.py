"""The kernel gate: BYTEPAIR_KERNELS, the size rule, and numba's cache chosen before its import."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from bytepair.core import jit


@pytest.fixture(autouse=True)
def _fresh_gate(monkeypatch: pytest.MonkeyPatch) -> None:
    jit._ready.cache_clear()
    jit._imports.cache_clear()
    jit._warn_once.cache_clear()
    monkeypatch.delenv(jit.KERNELS_ENV, raising=False)


def test_numpy_mode_never_compiles(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(jit.KERNELS_ENV, "numpy")
    assert not jit.use_numba(1 << 30)
    assert jit.kernels_name() == "numpy"


def test_auto_keeps_small_inputs_on_numpy() -> None:
    assert not jit.use_numba(jit.MIN_COMPILED_BYTES - 1)


def test_unknown_mode_warns_once_and_means_auto(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(jit.KERNELS_ENV, "fortran")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert jit.requested() == "auto"
        assert jit.requested() == "auto"
    assert [str(w.message).split(" is not")[0] for w in caught] == ["BYTEPAIR_KERNELS='fortran'"]


def test_numba_mode_without_numba_warns_and_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(jit.KERNELS_ENV, "numba")
    monkeypatch.setattr(jit.importlib.util, "find_spec", lambda name: None)
    with pytest.warns(jit.KernelWarning, match="numba is not installed"):
        assert not jit.use_numba(1 << 20)


def test_cache_dir_follows_numba_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    assert jit._cache_dir() == tmp_path / "cache"
    assert (tmp_path / "cache").is_dir()


def test_cache_dir_defaults_to_the_user_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert jit._cache_dir() == tmp_path / "bytepair" / "numba"


def test_no_writable_cache_falls_back_with_one_warning(tmp_path: Path) -> None:
    """A fresh process whose only cache choices are unwritable paths runs numpy, warns once,
    and never imports numba (a file stands where the directory would go: unwritable even for root)."""
    pytest.importorskip("numba", reason="numba is not installed (the fast extra)")
    blocker = tmp_path / "not-a-dir"
    blocker.write_bytes(b"")
    env = {**os.environ, "BYTEPAIR_KERNELS": "numba", "NUMBA_CACHE_DIR": str(blocker / "cache")}
    code = (
        "import sys, warnings; warnings.simplefilter('always'); from bytepair.core import jit; "
        "print(jit.use_numba(1 << 20), jit.use_numba(1 << 20), jit.kernels_name(), 'numba' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=True)
    assert proc.stdout.split() == ["False", "False", "numpy", "False"]
    assert proc.stderr.count("KernelWarning") == 1, proc.stderr


def test_name_gives_numba_version_without_importing_it(tmp_path: Path) -> None:
    pytest.importorskip("numba", reason="numba is not installed (the fast extra)")
    env = {**os.environ, "BYTEPAIR_KERNELS": "auto", "NUMBA_CACHE_DIR": str(tmp_path)}
    code = "import sys; from bytepair.core import jit; print(jit.kernels_name(), 'numba' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=True)
    name, version, imported = proc.stdout.split()
    assert (name, imported) == ("numba", "False")
    assert version[0].isdigit()


def test_broken_numba_falls_back_with_a_warning(tmp_path: Path) -> None:
    """A numba that is found but fails to import (a mismatched llvmlite, say) means numpy,
    with one warning, and compress/decompress still work."""
    fake = tmp_path / "numba"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('llvmlite is too old')\n")
    env = {**os.environ, "BYTEPAIR_KERNELS": "numba", "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ['PYTHONPATH']}"}
    env["NUMBA_CACHE_DIR"] = str(tmp_path / "cache")
    code = (
        "import warnings; warnings.simplefilter('always'); import bytepair; "
        "data = bytes(range(256)) * 4096; assert bytepair.decompress(bytepair.compress(data)) == data; print('ok')"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.stdout.split() == ["ok"], proc.stderr
    assert proc.stderr.count("KernelWarning") == 1 and "llvmlite is too old" in proc.stderr


def test_kernels_folder_follows_the_sources(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """numba checks only each cached function's own file: a change to any kernel source must
    move the cache to a new folder (and the old one of this installation goes)."""
    monkeypatch.setattr(jit, "_PACKAGE", tmp_path)
    sources = tmp_path / "kernels"
    (sources / "deeper").mkdir(parents=True)
    (sources / "decode.py").write_text("x = 1\n")
    (sources / "stream.py").write_text("y = 2\n")
    (sources / "deeper" / "format.py").write_text("SIZE = 21\n")
    tokenizer = tmp_path / "_kernels.py"
    tokenizer.write_text("z = 3\n")
    monkeypatch.setattr(jit, "KERNEL_SOURCES", (sources, tokenizer))
    cache = tmp_path / "cache"
    cache.mkdir()
    first = jit.kernels_folder(cache)
    assert first.parent == cache and first.name.startswith("kernels-")
    assert jit.kernels_folder(cache) == first
    assert jit.kernels_folder(first) == first  # a child process inherits the folder chosen
    first.mkdir()
    other_install = cache / "kernels-00000000-0000000000000000"
    other_install.mkdir()
    (sources / "decode.py").write_text("x = 10\n")  # stream.py unchanged: its cache would be stale
    second = jit.kernels_folder(cache)
    assert second != first and second.parent == cache
    assert not first.exists() and other_install.is_dir()
    (sources / "decode.py").write_text("x = 1\n")
    assert jit.kernels_folder(cache) == first
    tokenizer.write_text("z = 4\n")
    assert jit.kernels_folder(cache) != first
    tokenizer.write_text("z = 3\n")
    (sources / "deeper" / "format.py").write_text("SIZE = 22\n")  # a constant a kernel compiles in
    assert jit.kernels_folder(cache) != first


def _imported_modules(path: Path) -> set[Path]:
    """The package's modules *path* imports (relative imports)."""
    import ast

    found: set[Path] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.ImportFrom) or not node.level:
            continue
        base = path.parent
        for _ in range(node.level - 1):
            base = base.parent
        module = base.joinpath(*node.module.split(".")) if node.module else base
        names = [alias.name for alias in node.names] if node.module is None else [""]
        for name in names:
            target = module / name if name else module
            for candidate in (target.with_suffix(".py"), target / "__init__.py", module.with_suffix(".py")):
                if candidate.is_file():
                    found.add(candidate.resolve())
                    break
    return found


def test_kernels_folder_digests_everything_the_kernels_import() -> None:
    """Every module a kernel module imports, directly or not, is in ``KERNEL_SOURCES``: a
    constant or function compiled in from a module left out would go stale in the cache."""
    package = jit._PACKAGE
    kernels = {*(package / "core" / "kernels").glob("*.py"), package / "subword" / "_kernels.py"}
    seen: set[Path] = set()
    todo = [p.resolve() for p in kernels]
    while todo:
        path = todo.pop()
        if path not in seen:
            seen.add(path)
            todo += _imported_modules(path)
    covered = {
        p.resolve() for source in jit.KERNEL_SOURCES for p in (source.rglob("*.py") if source.is_dir() else [source])
    }
    assert len(seen) > len(kernels)
    assert seen <= covered, sorted(str(p.relative_to(package)) for p in seen - covered)


def test_the_cache_in_use_is_the_kernels_folder(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytest.importorskip("numba", reason="numba is not installed (the fast extra)")
    import numba.core.config

    monkeypatch.setattr(numba.core.config, "CACHE_DIR", numba.core.config.CACHE_DIR)  # put back after
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    assert jit._ready(quiet=True)
    assert str(jit.kernels_folder(tmp_path)) == numba.core.config.CACHE_DIR
    assert os.environ["NUMBA_CACHE_DIR"] == str(jit.kernels_folder(tmp_path))
