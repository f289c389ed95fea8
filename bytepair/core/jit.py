"""The one gate to the compiled kernels: which path runs, and numba's cache set up first.

numba is an optional extra (``bytepair[fast]``). Nothing here imports it: a
kernel module imports numba at its top and is itself imported only after
:func:`use_numba` said yes, so small inputs and the numpy path never pay
numba's import (about one more numpy import) or its compile (4-6 s once per
installation; a warm cache loads in well under a second).

``BYTEPAIR_KERNELS`` chooses: ``auto`` (the default: numba when it is installed
and the input has at least :data:`MIN_COMPILED_BYTES`), ``numba`` (whenever it
can) or ``numpy`` (never). Both paths write the same bytes.

numba's ``cache=True`` raises at import when it has nowhere to write, so the
cache directory is chosen here, before numba is imported: ``NUMBA_CACHE_DIR``
when set, else ``$XDG_CACHE_HOME/bytepair/numba`` (``~/.cache/...``). When no
writable place exists, or numba is missing though asked for, the numpy path
runs and one :class:`KernelWarning` says why.

Inside it, the kernels of one installation keep their code in a folder named by
the digest of their sources (:func:`kernels_folder`). numba checks only the
source file of each cached function, by its size and time, while a kernel's
compiled code also holds the kernels it calls from other files (``stream.py``
holds ``decode.py``'s, ``frame.py`` ``encode.py``'s) and the constants it reads
from other modules (``container/format.py``'s sizes, say): a change to one of
those alone, as a checkout of another branch makes, would run stale code.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import os
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

__all__ = ["KERNELS_ENV", "MIN_COMPILED_BYTES", "KernelWarning", "kernels_name", "requested", "use_numba"]

KERNELS_ENV = "BYTEPAIR_KERNELS"
CHOICES = ("auto", "numba", "numpy")

MIN_COMPILED_BYTES = 1 << 16
"""In ``auto`` mode, inputs smaller than this take the numpy path: for them, loading
the compiled kernels from the cache (0.6-0.9 s in a fresh process) costs more than
the numpy path spends on the whole input."""


class KernelWarning(RuntimeWarning):
    """The compiled kernels were asked for, or would have run, but cannot: numpy runs."""


def requested() -> str:
    """The path ``BYTEPAIR_KERNELS`` asks for; an unknown value warns once and means ``auto``."""
    value = os.environ.get(KERNELS_ENV, "auto")
    if value in CHOICES:  # as written: asked on every frame decoded
        return value
    value = value.strip().lower() or "auto"
    if value not in CHOICES:
        _warn_once(f"{KERNELS_ENV}={value!r} is not one of {', '.join(CHOICES)}; using auto")
        return "auto"
    return value


def use_numba(nbytes: int) -> bool:
    """Whether an input of *nbytes* takes the compiled path; when True, numba may be imported."""
    mode = requested()
    if mode == "numpy" or (mode == "auto" and nbytes < MIN_COMPILED_BYTES):
        return False
    return _ready(quiet=mode == "auto") and _imports()


def kernels_name() -> str:
    """``"numba 0.68.1"`` when large inputs take the compiled path here, else ``"numpy"``
    (without importing numba)."""
    mode = requested()
    if mode == "numpy" or not _ready(quiet=mode == "auto"):
        return "numpy"
    return f"numba {importlib.metadata.version('numba')}"


@functools.cache
def _ready(quiet: bool) -> bool:
    """numba is importable and has a writable cache directory (set up here, once)."""
    if importlib.util.find_spec("numba") is None:
        if not quiet:
            _warn_once(f"{KERNELS_ENV}=numba but numba is not installed (pip install 'bytepair[fast]'); using numpy")
        return False
    cache_dir = _cache_dir()
    if cache_dir is None:
        _warn_once(
            "no writable directory for numba's cache (set NUMBA_CACHE_DIR or make ~/.cache writable); "
            "bytepair uses its numpy kernels"
        )
        return False
    cache_dir = kernels_folder(cache_dir)
    os.environ["NUMBA_CACHE_DIR"] = str(cache_dir)
    # numba colours its error messages through colorama where that is installed, whose exit
    # handler then writes an escape code to a terminal standard output: into `bytepair -d`'s output
    os.environ.setdefault("NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING", "1")
    numba_config = sys.modules.get("numba.core.config")
    if numba_config is not None:  # imported before us: its config was read already
        numba_config.CACHE_DIR = str(cache_dir)  # type: ignore[attr-defined]
    return True


@functools.cache
def _imports() -> bool:
    """numba imports: an installed but broken numba (a mismatched llvmlite or numpy) means numpy."""
    try:
        import numba  # noqa: F401
    except Exception as exc:
        _warn_once(f"numba is installed but fails to import ({type(exc).__name__}: {exc}); using numpy")
        return False
    return True


def _cache_dir() -> Path | None:
    """The first writable of ``NUMBA_CACHE_DIR`` and the per-user cache, created if needed."""
    given = os.environ.get("NUMBA_CACHE_DIR")
    if given:
        return Path(given) if _writable(Path(given)) else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = Path(base) / "bytepair" / "numba"
    return path if _writable(path) else None


_PACKAGE = Path(__file__).resolve().parent.parent
KERNEL_SOURCES = (_PACKAGE / "core", _PACKAGE / "container", _PACKAGE / "subword", _PACKAGE / "_errors.py")
"""What numba's compiled code can hold: the kernels (``core/kernels``, ``subword/_kernels.py``)
and every module they import, whose functions and constants they compile in (the folders
whole; a test holds this to the kernels' imports)."""


def kernels_folder(cache_dir: Path) -> Path:
    """This installation's folder in *cache_dir*, named by where the package lives and a
    digest of its kernels' sources; the folders of its earlier sources are removed."""
    digest = hashlib.blake2b(digest_size=8)
    for source in KERNEL_SOURCES:
        for path in sorted(source.rglob("*.py")) if source.is_dir() else [source]:
            digest.update(path.relative_to(_PACKAGE).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    place = hashlib.blake2b(str(_PACKAGE).encode(), digest_size=4).hexdigest()
    name = f"kernels-{place}-{digest.hexdigest()}"
    if cache_dir.name == name:  # chosen already, by the process that started this one
        return cache_dir
    for old in cache_dir.glob(f"kernels-{place}-*"):
        if old.is_dir() and old.name != name:
            shutil.rmtree(old, ignore_errors=True)
    return cache_dir / name


def _writable(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError:
        return False
    return True


@functools.cache
def _warn_once(message: str) -> None:
    warnings.warn(message, KernelWarning, stacklevel=4)
