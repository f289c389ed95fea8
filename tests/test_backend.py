"""``bytepair.backend``: the path is chosen once per process, from ``BYTEPAIR_KERNELS`` and
whether the compiled core is built, and says why; both paths give the same bytes."""

from __future__ import annotations

import os
import subprocess
import sys
import zlib

import numpy as np
import pytest

import bytepair
from bytepair import backend
from tests.helpers import NOT_BUILT, compiled_available, kernels, use_kernels


def choose_in_a_fresh_process(value: str | None) -> tuple[str, str]:
    """What a fresh process with ``BYTEPAIR_KERNELS=value`` chooses: (describe(), warnings)."""
    env = {k: v for k, v in os.environ.items() if k != backend.KERNELS_ENV}
    if value is not None:
        env[backend.KERNELS_ENV] = value
    code = (
        "import warnings; warnings.simplefilter('always'); from bytepair import backend; "
        "print(backend.describe()); print(backend.compiled())"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout, done.stderr


def test_numpy_when_asked() -> None:
    out, err = choose_in_a_fresh_process("numpy")
    assert out == "numpy (BYTEPAIR_KERNELS=numpy)\nFalse\n" and not err


@pytest.mark.parametrize("value", [None, "auto", " Auto "])
def test_auto_takes_the_compiled_core_when_built(value: str | None) -> None:
    out, err = choose_in_a_fresh_process(value)
    if compiled_available():
        assert out == "compiled\nTrue\n"
    else:
        assert out.startswith("numpy (bytepair.") and "was not built" in out and out.endswith("\nFalse\n")
    assert not err


def test_an_unknown_value_warns_and_means_auto() -> None:
    out, err = choose_in_a_fresh_process("fortran")
    assert "KernelWarning: BYTEPAIR_KERNELS='fortran' is not one of auto, compiled, numpy; using auto" in err
    assert out.endswith(f"\n{compiled_available()}\n")


def test_compiled_warns_where_it_is_not_built() -> None:
    out, err = choose_in_a_fresh_process("compiled")
    if compiled_available():
        assert out == "compiled\nTrue\n" and not err
    else:
        assert "KernelWarning: BYTEPAIR_KERNELS=compiled, but" in err and out.endswith("\nFalse\n")


def test_a_missing_extension_names_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backend, "EXTENSIONS", ("bytepair.core.kernels._no_such_module",))
    chosen = backend._compiled_choice()
    assert chosen == backend.Choice(
        "numpy", "bytepair.core.kernels._no_such_module was not built: reinstall with a C compiler (pip install .)"
    )


def test_use_switches_the_path_for_a_block_and_back() -> None:
    before = backend.choice()
    with backend.use("numpy") as chosen:
        assert chosen.name == "numpy" and not backend.compiled()
    assert backend.choice() == before
    with pytest.raises(ValueError, match="no kernels named 'numba'"), backend.use("numba"):
        pass


def test_use_refuses_what_is_not_built(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backend, "EXTENSIONS", ("bytepair.core.kernels._no_such_module",))
    with pytest.raises(RuntimeError, match="the compiled kernels are not available"), backend.use("compiled"):
        pass


def test_crc32_is_zlibs_on_both_paths(kernels: str) -> None:
    rng = np.random.default_rng(4)
    for n in (0, 1, 7, 64, 1000, 4096, 100_003):
        data = rng.integers(0, 256, n, dtype=np.uint8)
        assert backend.crc32(data) == zlib.crc32(data)
        assert backend.crc32(data.tobytes(), 123456789) == zlib.crc32(data.tobytes(), 123456789)
        assert backend.crc32(memoryview(data.tobytes())[1:]) == zlib.crc32(data.tobytes()[1:])


def test_both_paths_write_the_same_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    if not compiled_available():
        pytest.skip(NOT_BUILT)
    data = b"".join(b"%d: both paths, the same bytes\n" % i for i in range(5000)) + bytes(range(256)) * 40
    with kernels("numpy"):
        expected = [bytepair.compress(data, level=level) for level in (1, 5, 9)]
    with kernels("compiled"):
        assert [bytepair.compress(data, level=level) for level in (1, 5, 9)] == expected
        assert all(bytepair.decompress(packed) == data for packed in expected)
    use_kernels("numpy", monkeypatch)
    assert all(bytepair.decompress(packed) == data for packed in expected)


def test_the_whole_stream_reader_follows_the_path() -> None:
    """``backend.read_whole`` (what ``bytepair.decompress`` calls, with no call on the way) is the
    compiled reader on the compiled path and None on the numpy one, looked up again whenever
    the path changes, and first chosen like any operation."""
    if not compiled_available():
        pytest.skip(NOT_BUILT)
    from bytepair.core.kernels import stream

    with kernels("compiled"):
        assert backend.read_whole is stream.decode_whole
        with backend.use("numpy"):
            assert backend.read_whole is None
            assert bytepair.decompress(bytepair.compress(b"numpy " * 50)) == b"numpy " * 50
        assert backend.read_whole is stream.decode_whole
    with pytest.raises(AttributeError, match="no attribute 'read_hole'"):
        backend.read_hole  # noqa: B018 (an attribute the module does not have)
    script = "from bytepair import backend; print(backend.read_whole is None, backend.describe())"
    for value, want in (("numpy", "True numpy"), ("auto", "False compiled")):
        env = {**os.environ, backend.KERNELS_ENV: value}
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True)
        assert done.stdout.startswith(want), done.stdout
