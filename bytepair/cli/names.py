"""File names in messages, as a shell shows them."""

from __future__ import annotations

import os
import sys

__all__ = ["shown"]


def shown(name: str) -> str:
    """*name* as a shell shows it: bytes that are not valid in the file system's encoding
    (Python holds them as lone surrogates, printed ``\\udce9``) escaped as ``\\xe9``."""
    return os.fsencode(name).decode(sys.getfilesystemencoding(), "backslashreplace")
