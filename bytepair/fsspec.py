"""``compression="bytepair"`` (and ``"infer"`` for names ending in ``.bp``) in fsspec, and so pandas and Dask.

fsspec keeps its compressions in a dict filled by ``register_compression``
calls at import time; unlike its filesystems it reads no entry point for them.
So a process learns the name by importing this module: ``import bytepair.fsspec``
is the one line. Dask workers that never import it themselves get it from
``bytepair.dask.register_on(client)``, and ``bytepair.dask``'s own tasks import
it wherever they run.

Errors reading a damaged file keep their ``BytePairError`` class and gain the
file's path at the front of their message.
"""

from __future__ import annotations

import functools
import io
from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, TypeVar

import fsspec.compression

from . import BytePairError, BytePairFile

__all__ = ["EXTENSION", "NAME", "NamedBytePairFile", "open_compressed"]

NAME = "bytepair"
EXTENSION = "bp"

P = ParamSpec("P")
R = TypeVar("R")


def _naming_the_path(
    method: Callable[Concatenate[NamedBytePairFile, P], R],
) -> Callable[Concatenate[NamedBytePairFile, P], R]:
    @functools.wraps(method)
    def wrapper(self: NamedBytePairFile, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(self, *args, **kwargs)
        except BytePairError as exc:
            raise type(exc)(f"{self.path}: {exc}") from None

    return wrapper


class NamedBytePairFile(BytePairFile):
    """A ``BytePairFile`` that says which file it reads when the data is bad.

    fsspec hands the compression only an open file object, often one that
    names no local path, so the path is taken from the object (``path``, as
    fsspec's files have it, with its protocol; else ``name``).
    """

    def __init__(self, fileobj: Any, mode: str = "rb", **kwargs: Any) -> None:
        super().__init__(fileobj, mode, **kwargs)
        self.path = _path_of(fileobj)

    read = _naming_the_path(BytePairFile.read)
    read1 = _naming_the_path(BytePairFile.read1)
    readinto = _naming_the_path(BytePairFile.readinto)
    readinto1 = _naming_the_path(BytePairFile.readinto1)
    readline = _naming_the_path(BytePairFile.readline)
    peek = _naming_the_path(BytePairFile.peek)
    seek = _naming_the_path(BytePairFile.seek)


def _path_of(fileobj: Any) -> str:
    path = getattr(fileobj, "path", None)
    fs = getattr(fileobj, "fs", None)
    if isinstance(path, str) and fs is not None and hasattr(fs, "unstrip_protocol"):
        return str(fs.unstrip_protocol(path))
    return str(path or getattr(fileobj, "name", "<file object>"))


def open_compressed(infile: Any, mode: str = "rb", **kwargs: Any) -> io.BufferedIOBase:
    """fsspec's compression callback: *infile* (binary) read or written as bytepair streams.

    *kwargs* (``level``, ``threads``, ...) go to ``BytePairFile`` when writing.
    """
    return NamedBytePairFile(infile, mode, **kwargs)


def register() -> None:
    """Make fsspec know the name and the extension (done on import; repeating it is harmless)."""
    fsspec.compression.register_compression(NAME, open_compressed, EXTENSION, force=True)


register()
