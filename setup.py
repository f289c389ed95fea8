"""Builds the compiled kernels (Cython 3) when ``pip install .`` runs; the rest is pyproject.toml.

A missing compiler, missing Python headers or any failed compile leaves the install
working: each extension that cannot be built is left out with a warning, and
``bytepair.backend`` then runs the numpy path and says why (``bytepair -V``).

``BYTEPAIR_CHECKED=1`` at build time compiles the kernels with Cython's bounds
and initialisation checks on and the over-copies made element by element, for
the tests (``.ci/run``): an out-of-bounds index then raises instead of writing.
``BYTEPAIR_BUILD_ONLY=bytepair.core.kernels._decode,...`` builds only the modules
named (while working on one of them).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

CHECKED = os.environ.get("BYTEPAIR_CHECKED", "") not in ("", "0")

KERNELS = {
    "bytepair.core.kernels._crc": "bytepair/core/kernels/_crc.pyx",
    "bytepair.core.kernels._decode": "bytepair/core/kernels/_decode.pyx",
    "bytepair.core.kernels._encode": "bytepair/core/kernels/_encode.pyx",
    "bytepair.subword._compiled": "bytepair/subword/_compiled.pyx",
}


class OptionalBuildExt(build_ext):
    """``build_ext`` that warns and goes on where an extension does not build."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:  # no compiler at all, for one
            _warn(f"the compiled kernels were not built ({exc}); bytepair will run on numpy")

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as exc:
            _warn(f"{ext.name} was not built ({exc}); bytepair will run on numpy")


def _warn(message: str) -> None:
    print(f"WARNING: {message}", file=sys.stderr)


def _extensions() -> list[Extension]:
    try:
        from Cython.Build import cythonize
    except ImportError:  # a build without Cython (an sdist built elsewhere, say): numpy path
        _warn("Cython is not installed; bytepair will run on numpy")
        return []
    directives = {
        "language_level": 3,
        "boundscheck": CHECKED,
        "wraparound": False,
        "initializedcheck": CHECKED,
        "cdivision": True,
        "embedsignature": True,
    }
    flags = ["-O3"] if os.name != "nt" else ["/O2"]
    macros = [("BYTEPAIR_CHECKED", "1")] if CHECKED else []
    only = set(filter(None, os.environ.get("BYTEPAIR_BUILD_ONLY", "").split(",")))
    present = {name: src for name, src in KERNELS.items() if Path(src).exists() and (not only or name in only)}
    exts = [Extension(name, [src], extra_compile_args=flags, define_macros=macros) for name, src in present.items()]
    try:
        # force: a .c generated under the other setting of BYTEPAIR_CHECKED must not be reused
        return list(cythonize(exts, compiler_directives=directives, quiet=True, force=True))
    except Exception as exc:
        _warn(f"Cython failed ({exc}); bytepair will run on numpy")
        return []


setup(ext_modules=_extensions(), cmdclass={"build_ext": OptionalBuildExt})
