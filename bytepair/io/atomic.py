"""Output files that appear under their name only when complete and on disk.

A run that fails or is interrupted half-way must neither leave a truncated file
that looks like a result nor replace a good file with one. So data goes to a
hidden temporary file beside the destination (same file system: the rename is
atomic), which is synced and renamed into place only at the end, and removed on
any failure, ``KeyboardInterrupt`` included.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import threading
from collections.abc import Iterator

__all__ = ["FdWriter", "atomic_output", "fsync_directory"]


class FdWriter:
    """Writes everything it is given to a file descriptor.

    Unbuffered on purpose: there is no buffer whose flush at close could fail
    again (a full disk) and hide the first error, or a ``KeyboardInterrupt``.
    """

    def __init__(self, fd: int, name: str) -> None:
        self.fd = fd
        self.name = name  # blamed in errors that do not name a file

    def write(self, data: bytes | memoryview) -> None:
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self.fd, view) :]
        except OSError as exc:
            if exc.filename is None:
                exc.filename = self.name
            raise


@contextlib.contextmanager
def atomic_output(
    dest: str, *, overwrite: bool, mode: int, times_ns: tuple[int, int] | None = None
) -> Iterator[FdWriter]:
    """Write *dest* all at once: through a temporary file, synced, then renamed.

    *mode* and *times_ns* (atime, mtime) are set on the file before it is synced.
    Without *overwrite* an existing *dest* raises ``FileExistsError``, even one
    that appeared while the data was being written. Every ``OSError`` names *dest*.
    """
    directory = os.path.dirname(dest) or os.curdir
    held = _hold_signals()  # until the cleanup below is armed: an interrupt must not leave the file
    try:
        fd, tmp = _create_temp(directory, os.path.basename(dest))
    except BaseException as exc:
        _release_signals(held)
        if isinstance(exc, OSError):
            _blame(exc, dest)
        raise
    try:
        _release_signals(held)
        try:
            yield FdWriter(fd, dest)
            os.fchmod(fd, mode)
            if times_ns is not None:
                os.utime(fd, ns=times_ns)
            os.fsync(fd)
        finally:
            os.close(fd)
        _publish(tmp, dest, overwrite)
        fsync_directory(directory)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            _blame(exc, dest)
        raise


_HELD = {signal.SIGINT, signal.SIGTERM}
"""The signals the command turns into an unwinding exception (``cli.main._signals``)."""


def _hold_signals() -> set[int | signal.Signals] | None:
    """Hold back SIGINT and SIGTERM in this thread (where they reach Python's handlers: the main
    one) and return the mask to restore; None where there is nothing to do. Between the
    temporary file's creation and the ``try`` that removes it on failure, a Ctrl-C left it
    behind (about one run in a few hundred, interrupted at random moments)."""
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        return None
    return signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)


def _release_signals(held: set[int | signal.Signals] | None) -> None:
    """Restore the mask :func:`_hold_signals` returned: a signal that came meanwhile is delivered now."""
    if held is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def _create_temp(directory: str, name: str) -> tuple[int, str]:
    """A new hidden file beside the destination, readable by its owner only until published."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
    for _ in range(100):
        # os.urandom, not secrets: importing secrets costs 3 ms of every command's start-up
        tmp = os.path.join(directory, f".{name[:200]}.{os.urandom(4).hex()}.tmp")
        try:
            return os.open(tmp, flags, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "cannot find a free temporary file name", directory)


def _publish(tmp: str, dest: str, overwrite: bool) -> None:
    """Give the finished file its name; without *overwrite*, never replace an existing file."""
    if overwrite:
        os.replace(tmp, dest)
        return
    try:
        os.link(tmp, dest)  # fails if dest exists, with no window between check and rename
    except FileExistsError:
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), dest) from None
    except OSError:  # a file system without hard links: check, then rename
        if os.path.lexists(dest):
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), dest) from None
        os.replace(tmp, dest)
        return
    os.unlink(tmp)


def fsync_directory(directory: str) -> None:
    """Make a rename in *directory* durable (file systems that cannot sync a directory are let be)."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


def _blame(exc: OSError, dest: str) -> None:
    """Name the destination in the error, not the temporary file the user never asked for."""
    exc.filename = dest
    exc.filename2 = None
