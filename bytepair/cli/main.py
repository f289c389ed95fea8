"""The ``bytepair`` command: gzip/zstd-style handling of files around the stream API.

This module owns the command line only: parsing and checking options, deciding
where each input goes, refusing what gzip refuses, and reporting one line per
failure (a ``MemoryError`` included). Streaming is in ``io.pipe``, safe output
files in ``io.atomic``, the progress line in ``cli.progress`` and the header walk
of ``-l`` in ``container.listing``.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import io
import os
import signal
import stat
import sys
from collections.abc import Callable, Iterator
from types import FrameType
from typing import TYPE_CHECKING, BinaryIO, NoReturn

from .. import __version__
from .._errors import BytePairError, CorruptDataError, TruncatedDataError
from ..container.format import MAGIC
from ..io.atomic import FdWriter, atomic_output
from ..io.pipe import Write, compress_file, decompress_file, gage_compress_file, gage_decompress_file
from ..io.stream import BytePairCompressor
from .names import shown
from .progress import Progress

if TYPE_CHECKING:
    from ..container.listing import Listing

__all__ = ["main"]

PROG = "bytepair"
DEFAULT_SUFFIX = ".bp"
GAGE_SUFFIX = ".bpe"
STDIO = "-"
STDIN_LABEL = "(stdin)"
STDOUT_LABEL = "(stdout)"

EPILOG = f"""\
examples:
  {PROG} notes.txt                compress to notes.txt.bp (notes.txt is kept)
  {PROG} -d notes.txt.bp          restore notes.txt
  {PROG} -9 --rm *.log            best level; each input is removed once its .bp is on disk
  tar cf - dir | {PROG} > dir.tar.bp
  {PROG} -dc dir.tar.bp | tar xf -
  {PROG} -l *.bp                  frames, blocks, sizes, ratio and CRC-32 of each file
  {PROG} -t *.bp                  check files without writing anything
  {PROG} -b -1 -9 file            benchmark levels 1 and 9 on file
  {PROG} -b -T0 file              benchmark the default level on every core
  {PROG} explain ...              see how data is compressed ('{PROG} explain -h')
  {PROG} subword learn|apply ...  subword BPE as subword-nmt ('{PROG} subword -h', docs/subword.md)

A file named 'explain' is compressed with '{PROG} -- explain' or '{PROG} ./explain'.
Outputs keep the modification time and permission bits of their input; they are
written to a hidden temporary file and renamed into place only when complete.
As gzip does, without -f: an existing output is not replaced (even a link to
/dev/null; '-o /dev/null' is written to), inputs that are symbolic links, FIFOs
or devices are refused, and --rm refuses a file with other hard links.
Exit status: 0 success, 1 error (the other files are still processed),
2 usage error, 130 interrupted (SIGINT), 143 terminated (SIGTERM).
"""


class _Interrupted(BaseException):
    """Raised by the SIGINT and SIGTERM handlers, so that cleanup runs as for Ctrl-C."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class _Refused(Exception):
    """A file this run will not touch, for a reason that fits on one line."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"{name}: {reason}")
        self.name = name
        self.reason = reason


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors on one line: scripts read the last line, people the first."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see '{self.prog} --help')\n")


class _Version(argparse.Action):
    """``-V``: the version, then the kernels in use here (``compiled``, or ``numpy``
    and why)."""

    def __init__(self, option_strings: list[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> NoReturn:
        from .. import backend

        sys.stdout.write(f"{PROG} {__version__}\nkernels: {backend.describe()}\n")
        parser.exit()


def _counter(what: str, least: int, meaning: str = "") -> Callable[[str], int]:
    """An argparse type for a whole number of *what*, at least *least*."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid {what} {text!r}") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"{what} must be {least}{meaning} or more, got {value}")
        return value

    return parse


BENCH_RUNS = 5
"""Runs per input and codec of ``-b`` unless ``--runs`` says otherwise."""

_threads = _counter("thread count", 0, " (all cores)")
_runs = _counter("number of runs", 1)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        usage=f"{PROG} [OPTION]... [FILE]...\n       {PROG} explain [ARG]...",
        description="Compress or decompress FILEs with byte pair encoding (Gage 1994). "
        "FILE is compressed to FILE.bp, FILE.bp decompressed to FILE; "
        "with no FILE, or when FILE is -, standard input goes to standard output.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    parser.add_argument("files", nargs="*", metavar="FILE", help=argparse.SUPPRESS)
    op = parser.add_argument_group("operation")
    op.add_argument("-z", "--compress", action="store_true", help="compress (the default)")
    op.add_argument("-d", "--decompress", action="store_true", help="decompress")
    op.add_argument("-t", "--test", action="store_true", help="decompress and verify, writing nothing")
    op.add_argument(
        "-l", "--list", action="store_true", help="show frames, blocks, sizes, ratio and CRC-32 without decoding"
    )
    op.add_argument("-b", "--bench", action="store_true", help="benchmark on FILEs (or built-in samples)")
    out = parser.add_argument_group("output")
    out.add_argument("-c", "--stdout", action="store_true", help="write to standard output, keep inputs")
    out.add_argument("-o", dest="output", metavar="FILE", help="write to FILE (one input only)")
    out.add_argument("-k", "--keep", action="store_true", help="keep input files (the default)")
    out.add_argument(
        "--rm", dest="remove", action="store_true", help="remove each input once its output is complete and on disk"
    )
    out.add_argument(
        "-f",
        "--force",
        action="store_true",
        help="overwrite existing files; read symbolic links, FIFOs and devices; --rm files with other links; "
        "write compressed data to a terminal",
    )
    out.add_argument(
        "-S",
        "--suffix",
        metavar="SUF",
        help=f"suffix of compressed files ({DEFAULT_SUFFIX}; {GAGE_SUFFIX} with --format gage)",
    )
    out.add_argument(
        "--format",
        choices=("bytepair", "gage"),
        help="file format: bytepair's own (the default) or Gage's 1994 format; decompressing, a "
        f"{GAGE_SUFFIX} file is read as Gage's and a file with bytepair's magic number as bytepair's",
    )
    comp = parser.add_argument_group("compression")
    for level in range(1, 10):
        comp.add_argument(
            f"-{level}",
            dest="levels",
            action="append_const",
            const=level,
            help="levels: -1 fastest ... -9 smallest (default 5)" if level == 1 else argparse.SUPPRESS,
        )
    comp.add_argument(
        "-T",
        "--threads",
        type=_threads,
        metavar="N",
        help="compress with N workers (0: one per core; default: one per core with the compiled "
        "kernels, whose workers are threads, else 1; the same output for every N); with -b, "
        "benchmark that (default 1)",
    )
    comp.add_argument("--runs", type=_runs, metavar="N", help=f"with -b: runs per input and codec ({BENCH_RUNS})")
    msg = parser.add_argument_group("messages")
    msg.add_argument("-v", "--verbose", action="count", default=0, help="say what was done to each file")
    msg.add_argument("-q", "--quiet", action="count", default=0, help="no progress line")
    msg.add_argument("-V", "--version", action=_Version, help="show the version and the kernels in use, and exit")
    return parser


def _mode(parser: argparse.ArgumentParser, opts: argparse.Namespace) -> str:
    """The one operation asked for; two of them is a usage error (``-d -t`` is a test)."""
    asked = [
        (flag, mode)
        for flag, mode, on in (
            ("-z", "compress", opts.compress),
            ("-d", "decompress", opts.decompress and not opts.test),
            ("-t", "test", opts.test),
            ("-l", "list", opts.list),
            ("-b", "bench", opts.bench),
        )
        if on
    ]
    if len(asked) > 1:
        parser.error(f"{asked[0][0]} and {asked[1][0]} cannot be used together")
    flag, mode = asked[0] if asked else ("-z", "compress")
    if opts.stdout and opts.output is not None:
        parser.error("-c and -o cannot be used together")
    if opts.output is not None and len(opts.files) > 1:
        parser.error(f"-o names one output, but {len(opts.files)} files were given")
    if opts.keep and opts.remove:
        parser.error("-k and --rm cannot be used together")
    if opts.remove and (opts.stdout or opts.output == STDIO):
        parser.error("--rm cannot be used with standard output (it cannot be synced to disk)")
    if mode in ("test", "list", "bench"):
        for name, on in (("-c", opts.stdout), ("-o", opts.output is not None), ("--rm", opts.remove)):
            if on:
                parser.error(f"{name} cannot be used with {flag}")
    if opts.suffix is None:
        opts.suffix = GAGE_SUFFIX if opts.format == "gage" else DEFAULT_SUFFIX
    if not opts.suffix or os.sep in opts.suffix or (os.altsep and os.altsep in opts.suffix):
        parser.error(f"invalid suffix {opts.suffix!r}")
    if opts.runs is not None and mode != "bench":
        parser.error("--runs applies only to -b")
    if opts.format == "gage" and mode in ("list", "bench"):
        parser.error(f"--format gage cannot be used with {flag}")
    return mode


def main(argv: list[str] | None = None) -> int:
    """Run the command with *argv* (default ``sys.argv[1:]``); returns the exit status."""
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["explain"]:
        try:
            return _explain(args[1:])
        except MemoryError:
            return _out_of_memory()
    if args[:1] == ["subword"]:
        from ..subword import cli as subword_cli

        try:
            return subword_cli.main(args[1:])
        except MemoryError:
            return _out_of_memory()
    parser = build_parser()
    opts = parser.parse_args(args)
    mode = _mode(parser, opts)
    try:  # (outside the handlers' block too: a signal may land while they are put back)
        with _signals():
            try:
                return _Run(opts, mode).run()
            except KeyboardInterrupt:
                return 128 + signal.SIGINT
            except MemoryError:  # outside the files' own handling (-b, -l's total): still one line
                return _out_of_memory()
    except _Interrupted as exc:
        return 128 + exc.signum


THREADS_FROM = 4 << 20
"""Inputs of at least this many bytes (two frames), or of a size not known (a pipe), are
compressed on every core by default: below it, starting the workers costs more than
they save (a 1 MB file took 1.2x the wall time on two threads)."""


def _compress_threads(asked: int | None, size: int | None) -> int:
    """Workers for compressing: as asked; else every core where the compiled kernels run
    (threads of this process, as xz does since 5.4) and the input is large or of unknown
    size; else one (the numpy path's workers are processes, each with its own memory)."""
    if asked is not None:
        return asked
    if size is not None and size < THREADS_FROM:
        return 1
    from .. import backend

    return 0 if backend.compiled() else 1


def _size_of(src: BinaryIO) -> int | None:
    """The size of a regular file, or None (a pipe, a terminal, a stream of unknown length)."""
    try:
        info = os.fstat(src.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None


def _out_of_memory() -> int:
    print(f"{PROG}: out of memory", file=sys.stderr, flush=True)
    return 1


def _explain(args: list[str]) -> int:
    """``bytepair explain ...`` belongs to ``_explain``, imported only when asked for."""
    if any(arg == "--subword" or arg.startswith("--subword=") for arg in args):
        from ..subword import cli as subword_cli

        return subword_cli.explain_main(args)
    from . import explain as _explain

    return _explain.main(args)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    # one interruption is enough: a second must not break the cleanup of the first
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise _Interrupted(signum)


@contextlib.contextmanager
def _signals() -> Iterator[None]:
    """SIGINT and SIGTERM unwind (removing partial output); a file size limit is an
    ``OSError`` instead of a kill; SIGPIPE ends a pipeline quietly, as for gzip."""
    wanted: dict[int, Callable[[int, FrameType | None], None] | int] = {
        signal.SIGINT: _on_signal,
        signal.SIGTERM: _on_signal,
    }
    if hasattr(signal, "SIGXFSZ"):
        wanted[signal.SIGXFSZ] = signal.SIG_IGN
    if hasattr(signal, "SIGPIPE"):
        wanted[signal.SIGPIPE] = signal.SIG_DFL
    saved = {signum: signal.signal(signum, handler) for signum, handler in wanted.items()}
    try:
        yield
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)


def _label(name: str) -> str:
    return STDIN_LABEL if name == STDIO else shown(name)


def _kind(mode: int) -> str:
    """What a file that is not a regular file is, in a message."""
    for test, what in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return what
    return "not a regular file"


def _open_named(name: str, force: bool) -> BinaryIO:
    """Open an input file as gzip does: without -f, refuse a symbolic link and anything but a regular file.

    The file is opened without waiting (``O_NONBLOCK``: a FIFO with no writer
    would block the open forever) and without following a symbolic link, and
    checked on its descriptor, so nothing can be swapped in between the check
    and the read. With -f a symbolic link is followed and a FIFO is opened the
    usual way, to wait for its writer (reopening it after a first open could
    miss a writer that came and went in between).
    """
    if force:
        with contextlib.suppress(OSError):
            if stat.S_ISFIFO(os.stat(name).st_mode):
                return open(name, "rb")  # the caller closes it
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY | (0 if force else os.O_NOFOLLOW)
    try:
        fd = os.open(name, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not force and os.path.islink(name):
            raise _Refused(name, "is a symbolic link; use -f to follow it") from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), name)
        if not stat.S_ISREG(mode) and not force:
            raise _Refused(name, f"is {_kind(mode)}, not a regular file; use -f to read it")
        os.set_blocking(fd, True)
        return open(fd, "rb")  # the caller closes it
    except BaseException:
        os.close(fd)
        raise


@contextlib.contextmanager
def _open_input(name: str, force: bool) -> Iterator[tuple[BinaryIO, os.stat_result | None]]:
    """The input and, for a named regular file, its status (size, mode, times, links)."""
    if name == STDIO:
        yield sys.stdin.buffer, None
        return
    with _open_named(name, force) as f:
        st = os.fstat(f.fileno())
        yield f, st if stat.S_ISREG(st.st_mode) else None


def _describe(exc: BaseException) -> str:
    """The reason part of an error line."""
    if isinstance(exc, _Refused):
        return exc.reason
    if isinstance(exc, MemoryError):
        return "out of memory"
    if isinstance(exc, FileExistsError):
        return "already exists; use -f to overwrite"
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    if isinstance(exc, TruncatedDataError):
        return f"truncated data: {exc}"
    if isinstance(exc, CorruptDataError):
        return f"corrupt data: {exc}"
    return str(exc)


class _Run:
    """One invocation: its options, and the files it goes through one after another."""

    def __init__(self, opts: argparse.Namespace, mode: str) -> None:
        self.opts = opts
        self.mode = mode
        self.inputs: list[str] = opts.files or [STDIO]
        self.verbosity: int = opts.verbose - opts.quiet
        umask = os.umask(0)
        os.umask(umask)
        self.new_file_mode = 0o666 & ~umask
        self.status = 0
        self.listed: list[Listing] = []
        self.gage = False

    def run(self) -> int:
        if self.mode == "bench":
            return self._bench()
        if not self._terminals_ok():
            return 1
        for name in self.inputs:
            try:
                if self.mode == "list":
                    self._list_one(name)
                else:
                    self._process(name)
            except (OSError, BytePairError, _Refused, MemoryError) as exc:
                self._error(exc, name)
        if self.mode == "list":
            self._list_total()
        return self.status

    # -- messages --------------------------------------------------------

    def _error(self, exc: BaseException, name: str) -> None:
        if isinstance(exc, _Refused):
            who = shown(exc.name)
        elif isinstance(exc, OSError) and exc.filename is not None:
            who = shown(os.fsdecode(exc.filename))
        else:
            who = _label(name)
        print(f"{PROG}: {who}: {_describe(exc)}", file=sys.stderr, flush=True)
        self.status = 1

    def _say(self, text: str) -> None:
        if self.verbosity > 0:
            print(f"{PROG}: {text}", file=sys.stderr, flush=True)

    def _progress(self, name: str, st: os.stat_result | None) -> Progress:
        shown = self.verbosity >= 0 and sys.stderr.isatty()
        return Progress(_label(name), st.st_size if st else None, sys.stderr if shown else None)

    # -- checks before any work --------------------------------------------

    def _to_stdout(self, name: str) -> bool:
        return self.opts.stdout or self.opts.output == STDIO or (self.opts.output is None and name == STDIO)

    def _terminals_ok(self) -> bool:
        """Compressed data is never written to, nor read from, a terminal unless forced."""
        if self.opts.force:
            return True
        if self.mode == "compress" and any(self._to_stdout(n) for n in self.inputs) and os.isatty(1):
            reason = "refusing to write compressed data to a terminal; use -f to force"
        elif self.mode != "compress" and STDIO in self.inputs and os.isatty(0):
            reason = "refusing to read compressed data from a terminal; use -f to force"
        else:
            return True
        print(f"{PROG}: {reason}", file=sys.stderr)
        self.status = 1
        return False

    def _destination(self, name: str) -> str | None:
        """Where the output of *name* goes; ``None`` for standard output."""
        if self._to_stdout(name):
            return None
        if self.opts.output is not None:
            return str(self.opts.output)
        suffix: str = self.opts.suffix
        if self.mode == "compress":
            return name + suffix
        for known in (suffix, GAGE_SUFFIX) if self.opts.format is None else (suffix,):
            if name.endswith(known) and len(os.path.basename(name)) > len(known):
                return name[: -len(known)]
        raise _Refused(name, f"unknown suffix, expected {suffix} (use -o or -c to name the output)")

    def _is_gage(self, name: str, src: BinaryIO) -> bool:
        """Gage's format if asked for, or (decompressing) a .bpe file without bytepair's magic number."""
        if self.opts.format is not None or self.mode == "compress":
            return bool(self.opts.format == "gage")
        if not name.endswith(GAGE_SUFFIX):
            return False
        head = src.peek(len(MAGIC))[: len(MAGIC)] if hasattr(src, "peek") else b""
        return head != MAGIC

    # -- compress, decompress, test ------------------------------------------

    def _convert(self, src: BinaryIO, write: Write, meter: Progress) -> tuple[int, int]:
        """Run the stream through; returns (original, compressed) sizes."""
        if self.gage:
            if self.mode == "compress":
                return gage_compress_file(src, write, meter.update)
            compressed, original = gage_decompress_file(src, write, meter.update)
            return original, compressed
        if self.mode == "compress":
            level = self.opts.levels[-1] if self.opts.levels else None
            compressor = BytePairCompressor(level, threads=_compress_threads(self.opts.threads, _size_of(src)))
            return compress_file(src, write, compressor, meter.update)
        compressed, original = decompress_file(src, write, meter.update)
        return original, compressed

    def _process(self, name: str) -> None:
        with _open_input(name, self.opts.force) as (src, st):
            if self.opts.remove and st is not None and st.st_nlink > 1 and not self.opts.force:
                others = st.st_nlink - 1
                raise _Refused(
                    name, f"has {others} other link{'s' if others > 1 else ''}; unchanged (use -f to remove it)"
                )
            self.gage = self._is_gage(name, src)
            if self.mode == "test":
                sizes = self._through(name, src, st, lambda data: None)
                self._say(f"{_label(name)}: OK ({sizes[0]} bytes)")
                return
            dest = self._destination(name)
            if dest is None:
                out = FdWriter(sys.stdout.fileno(), STDOUT_LABEL)
                sizes = self._through(name, src, st, out.write)
            else:
                sizes = self._to_file(name, src, st, dest)
        self._report(name, dest, *sizes)
        if self.opts.remove and name != STDIO:
            if st is None:  # a FIFO or a device read with -f: not a file of ours to delete
                print(f"{PROG}: {_label(name)}: not removed: not a regular file", file=sys.stderr, flush=True)
            else:
                os.unlink(name)

    def _through(self, name: str, src: BinaryIO, st: os.stat_result | None, write: Write) -> tuple[int, int]:
        meter = self._progress(name, st)
        try:
            return self._convert(src, write, meter)
        finally:
            meter.close()

    def _to_file(self, name: str, src: BinaryIO, st: os.stat_result | None, dest: str) -> tuple[int, int]:
        """Write to *dest* through a temporary file; an existing *dest* is replaced only with -f.

        Only an output named with -o is written in place when it is a device or a
        FIFO (``-o /dev/null``): a name derived from the input's that exists, even
        as a symbolic link to ``/dev/null``, is refused as any existing file is,
        and -f replaces the link itself, as gzip does.
        """
        try:
            dest_st: os.stat_result | None = os.stat(dest)
        except FileNotFoundError:
            dest_st = None
        if dest_st is not None and stat.S_ISDIR(dest_st.st_mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), dest)
        if dest_st is not None and st is not None and os.path.samestat(st, dest_st):
            raise _Refused(name, f"input and output are the same file ({shown(dest)})")
        if dest_st is not None and not stat.S_ISREG(dest_st.st_mode) and self.opts.output is not None:
            # a device or a pipe (-o /dev/null): written in place, it is not ours to replace
            if self.opts.remove:
                raise _Refused(name, f"not removed: the output {shown(dest)} is not a regular file")
            with open(dest, "wb", buffering=0) as f:
                return self._through(name, src, st, FdWriter(f.fileno(), dest).write)
        if os.path.lexists(dest) and not self.opts.force:
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), dest)
        if st is not None:
            mode, times = stat.S_IMODE(st.st_mode) & 0o777, (st.st_atime_ns, st.st_mtime_ns)
        else:
            mode, times = self.new_file_mode, None
        with atomic_output(dest, overwrite=self.opts.force, mode=mode, times_ns=times) as out:
            return self._through(name, src, st, out.write)

    def _report(self, name: str, dest: str | None, original: int, compressed: int) -> None:
        ratio = compressed / original if original else 0.0
        where = STDOUT_LABEL if dest is None else shown(dest)
        self._say(f"{_label(name)}: {original} -> {compressed} bytes (ratio {ratio:.3f}), {where}")

    # -- list ------------------------------------------------------------

    def _list_one(self, name: str) -> None:
        from ..container.listing import list_streams  # for -l only

        with _open_input(name, self.opts.force) as (src, _):
            listing = list_streams(src)
        if not self.listed:
            print(f"{'Frames':>6}  {'Blocks':>7}  {'Compressed':>12}  {'Original':>12}  {'Ratio':>7}  CRC-32    File")
        self.listed.append(listing)
        self._list_row(listing, f"{listing.crc32:08x}", _label(name))

    def _list_total(self) -> None:
        listed = self.listed
        if len(self.inputs) > 1 and listed:
            from ..container.listing import Listing

            total = Listing(
                frames=sum(x.frames for x in listed),
                blocks=sum(x.blocks for x in listed),
                compressed_size=sum(x.compressed_size for x in listed),
                original_size=sum(x.original_size for x in listed),
                crc32=0,
            )
            self._list_row(total, "-" * 8, f"total ({len(listed)} file{'s' if len(listed) > 1 else ''})")

    @staticmethod
    def _list_row(x: Listing, crc: str, name: str) -> None:
        sizes = f"{x.compressed_size:>12}  {x.original_size:>12}"
        print(f"{x.frames:>6}  {x.blocks:>7}  {sizes}  {x.ratio:>7.3f}  {crc}  {name}")

    # -- bench -------------------------------------------------------------

    def _bench(self) -> int:
        """``-b`` belongs to ``_bench`` (imported only when asked for); failures become one line here."""
        from . import bench as _bench

        levels = sorted(set(self.opts.levels)) if self.opts.levels else None
        try:
            return _bench.bench_command(
                list(self.opts.files),
                levels=levels,
                runs=BENCH_RUNS if self.opts.runs is None else self.opts.runs,
                out=sys.stdout,
                threads=1 if self.opts.threads is None else self.opts.threads,
            )
        except OSError as exc:
            if exc.filename is None:  # its own message, e.g. "no such file or folder: X"
                print(f"{PROG}: {exc}", file=sys.stderr, flush=True)
                return 1
            self._error(exc, "")
        except (ValueError, _bench.RoundTripError) as exc:
            print(f"{PROG}: {exc}", file=sys.stderr, flush=True)
            return 1
        return self.status
