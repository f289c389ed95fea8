"""Worker processes that run bytepair's jobs and never import the caller's ``__main__``.

multiprocessing's spawn and forkserver children re-run the parent's main module
so that functions defined there can be unpickled: a script without an
``if __name__ == "__main__":`` guard then starts its own work again inside every
worker, and a script read from standard input, a ``-c`` string or a notebook has
no file to re-run; either way the pool breaks (``BrokenProcessPool``). bytepair's
jobs are its own module-level functions, pickled by reference, so a worker needs
nothing of the caller's: each is a fresh ``python -I -c`` given the caller's
``sys.path``, that imports bytepair and runs the jobs sent down its standard
input, one at a time, until that pipe closes. It always runs the numpy kernels
(the compiled path uses threads, not processes) and ignores SIGINT: an interrupt
is the caller's to handle, and a worker ends when the caller closes its pipe.

A worker that cannot start or dies mid-job costs speed, never the output: its
job runs in the calling process instead, after one ``WorkerWarning``.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pickle
import signal
import subprocess
import sys
import threading
import traceback
import warnings
from collections.abc import Callable
from typing import IO, Any

__all__ = ["WorkerProcesses", "WorkerWarning", "serve", "shared_workers"]

_READY = "bytepair worker ready"

START_SECONDS = 60.0
"""How long a new worker may take to say it is ready (a Python and a numpy import, on a
busy machine) before it is given up on."""
_LENGTH_BYTES = 8

# the worker's first lines: stdlib imports only, before the caller's sys.path is in place
_BOOT = (
    "import pickle, sys; "
    "sys.path[:] = pickle.loads(sys.stdin.buffer.read(int.from_bytes(sys.stdin.buffer.read(8), 'little'))); "
    "from bytepair.io.workers import serve; serve()"
)


class WorkerWarning(RuntimeWarning):
    """A worker process could not start or ended abruptly: its job ran in this process."""


class _WorkerLost(Exception):
    """The worker process is gone (or never came up); the job did not run there."""


def _send(stream: IO[bytes], message: object) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(len(data).to_bytes(_LENGTH_BYTES, "little"))
    stream.write(data)
    stream.flush()


def _receive(stream: IO[bytes]) -> bytes:
    """One message, whole (length-prefixed: a message that fails to unpickle leaves the next intact)."""
    head = stream.read(_LENGTH_BYTES)
    if len(head) < _LENGTH_BYTES:
        raise EOFError
    size = int.from_bytes(head, "little")
    data = stream.read(size)
    if len(data) < size:
        raise EOFError
    return data


def serve() -> None:
    """A worker's loop: run each ``(job, args)`` received, send back ``(True, result)`` or
    ``(False, exception)``; return when the caller closes the pipe."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    requests = sys.stdin.buffer
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # a stray print goes to stderr, never into the replies
    _send(replies, _READY)
    while True:
        try:
            request = _receive(requests)
        except EOFError:
            return
        try:
            job, args = pickle.loads(request)
            outcome: tuple[bool, Any] = (True, job(*args))
        except BaseException as exc:  # the caller raises it in its own thread
            exc.add_note("".join(["raised in a bytepair worker process:\n", *traceback.format_tb(exc.__traceback__)]))
            outcome = (False, exc)
        try:
            try:
                _send(replies, outcome)
            except (pickle.PicklingError, TypeError, AttributeError) as exc:  # an exception pickle cannot carry
                _send(replies, (False, RuntimeError(f"worker could not send back {outcome[1]!r}: {exc}")))
        except (BrokenPipeError, ValueError):  # the caller is gone
            return


def _search_path() -> list[str]:
    """The caller's ``sys.path`` for a worker: entries made absolute (``''`` is the
    directory now, and the worker's may differ), and the folder bytepair came from last
    (so that a checkout imported before a ``chdir`` is found)."""
    path = [os.path.abspath(entry) for entry in sys.path if isinstance(entry, str)]
    home = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    return path if home in path else [*path, home]


class _Worker:
    """One worker process, talked to over its standard input and output."""

    def __init__(self) -> None:
        if not sys.executable:
            raise _WorkerLost("sys.executable is empty: no Python to start")
        env = {**os.environ, "BYTEPAIR_KERNELS": "numpy"}
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-c", _BOOT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
            )
        except OSError as exc:
            raise _WorkerLost(f"cannot start {sys.executable}: {exc}") from exc
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.requests: IO[bytes] = self.proc.stdin
        self.replies: IO[bytes] = self.proc.stdout
        # a program that is not Python (some frozen or embedded ones) may never answer
        deadline = threading.Timer(START_SECONDS, self.proc.kill)
        deadline.start()
        try:
            path = pickle.dumps(_search_path())
            self.requests.write(len(path).to_bytes(_LENGTH_BYTES, "little") + path)
            self.requests.flush()
            ready = pickle.loads(_receive(self.replies))
        except (OSError, EOFError, pickle.UnpicklingError) as exc:
            self.close()
            raise _WorkerLost(f"{sys.executable} did not start a bytepair worker ({self._status()})") from exc
        finally:
            deadline.cancel()
        if ready != _READY:
            self.close()
            raise _WorkerLost(f"{sys.executable} did not start a bytepair worker (it said {ready!r})")

    def run(self, job: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        """*job* ``(*args)`` in the worker; its exception, if any, is raised here."""
        try:
            _send(self.requests, (job, args))
            reply = _receive(self.replies)
        except (OSError, EOFError, ValueError) as exc:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=1)  # its pipe closed as it ended: its status follows
            raise _WorkerLost(f"a bytepair worker process ended during a job ({self._status()})") from exc
        try:
            ok, value = pickle.loads(reply)
        except Exception as exc:  # an exception class this process cannot rebuild
            raise RuntimeError(f"a bytepair worker's reply could not be read: {exc!r}") from exc
        if not ok:
            raise value
        return value

    def _status(self) -> str:
        code = self.proc.poll()
        if code is None:
            return "still running"
        return f"killed by signal {-code}" if code < 0 else f"exit status {code}"

    def close(self, *, kill: bool = False) -> None:
        """End the worker: closing its input lets it finish its job and exit; *kill* does not wait."""
        if kill:
            self.proc.kill()
        for stream in (self.requests, self.replies):
            with contextlib.suppress(OSError):
                stream.close()
        try:
            self.proc.wait(timeout=None if kill else 5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def forget(self) -> None:
        """Drop this process's copies of the pipes (in a forked child: the worker is the parent's)."""
        for stream in (self.requests, self.replies):
            with contextlib.suppress(OSError, ValueError):
                os.close(stream.fileno())


class WorkerProcesses:
    """Worker processes kept between calls (starting one costs a Python and a numpy import).

    ``run`` takes an idle worker, or starts one, for each job: the number of
    workers grows to the most jobs ever running at once, no further.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._busy: set[_Worker] = set()
        self._unavailable: str | None = None  # why workers cannot start here: every job then runs in the caller
        self._closing = False
        self.started = 0
        """Workers started so far (tests look at it)."""

    def run(self, job: Callable[..., Any], *args: Any) -> Any:
        """*job* ``(*args)`` in a worker process, or in this thread when no worker can do it."""
        worker = self._take()
        if worker is None:
            return job(*args)
        try:
            result = worker.run(job, args)
        except _WorkerLost as lost:
            with self._lock:
                self._busy.discard(worker)
                closing = self._closing
            worker.close(kill=True)
            if closing:
                raise RuntimeError("bytepair's worker processes were shut down (the interpreter is exiting)") from None
            warnings.warn(f"{lost}; its job runs in this process", WorkerWarning, stacklevel=2)
            return job(*args)
        except BaseException:
            self._give_back(worker)
            raise
        self._give_back(worker)
        return result

    def _take(self) -> _Worker | None:
        with self._lock:
            if self._closing:
                raise RuntimeError("bytepair's worker processes were shut down (the interpreter is exiting)")
            if self._unavailable is not None:
                return None
            if self._idle:
                worker = self._idle.pop()
                self._busy.add(worker)
                return worker
        try:
            worker = _Worker()
        except _WorkerLost as lost:
            with self._lock:
                first = self._unavailable is None
                self._unavailable = str(lost)
            if first:
                warnings.warn(f"{lost}; bytepair compresses in this process", WorkerWarning, stacklevel=3)
            return None
        with self._lock:
            self.started += 1
            self._busy.add(worker)
        return worker

    def _give_back(self, worker: _Worker) -> None:
        with self._lock:
            self._busy.discard(worker)
            if not self._closing:
                self._idle.append(worker)
                return
        worker.close()

    def close(self) -> None:
        """End every worker: idle ones at once, busy ones killed (at exit nobody waits for them)."""
        with self._lock:
            self._closing = True
            idle, self._idle = self._idle, []
            busy = list(self._busy)
        for worker in busy:
            worker.close(kill=True)
        for worker in idle:
            worker.close()

    def _forget_in_child(self) -> None:
        self._lock = threading.Lock()
        for worker in [*self._idle, *self._busy]:
            worker.forget()
            _forgotten.append(worker)  # never collected: its Popen would reap, or warn about, another's child
        self._idle = []
        self._busy = set()


_forgotten: list[_Worker] = []


_shared: WorkerProcesses | None = None
_shared_lock = threading.Lock()


def shared_workers() -> WorkerProcesses:
    """The workers of this process, for its whole life."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = WorkerProcesses()
            atexit.register(_shared.close)
        return _shared


def _after_fork_in_child() -> None:
    """A forked child must not talk to its parent's workers: it starts its own when needed."""
    global _shared, _shared_lock
    _shared_lock = threading.Lock()
    if _shared is not None:
        _shared._forget_in_child()
        atexit.unregister(_shared.close)
        _shared = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
