"""The ``bytepair`` command, run as a real subprocess (``python -m bytepair``).

What a user meets is tested here as they meet it: exit status, the one line on
standard error, and which files exist afterwards. Inputs are small except for
the interruption tests, which need a run long enough to be interrupted.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import io
import os
import pty
import random
import re
import resource
import select
import shutil
import signal
import stat
import subprocess
import sys
import time
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

import bytepair
import bytepair.backend
from tests.helpers import NOT_BUILT, compiled_available, use_kernels

CLI = [sys.executable, "-m", "bytepair"]
TIMEOUT = 120

_WORDS = (
    b"the of and to in is you that it he was for on are as with his they at be this have from or one had by "
    b"word but not what all were we when your can said there use an each which she do how their if will up"
).split()


def text(size: int, seed: int = 0) -> bytes:
    """Compressible, deterministic text of exactly *size* bytes."""
    rng = random.Random(seed)
    out = b" ".join(rng.choices(_WORDS, k=size // 3 + 1))
    return out[:size]


def run(
    *args: str | Path, cwd: Path, input: bytes | None = None, **kwargs: object
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [*CLI, *map(str, args)], cwd=cwd, input=input, capture_output=True, timeout=TIMEOUT, **kwargs
    )


def err_lines(proc: subprocess.CompletedProcess[bytes]) -> list[str]:
    return proc.stderr.decode().splitlines()


def listing(folder: Path) -> list[str]:
    return sorted(os.listdir(folder))


def digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


@pytest.fixture
def sample(tmp_path: Path) -> tuple[Path, bytes]:
    data = text(150_000)
    path = tmp_path / "a.txt"
    path.write_bytes(data)
    return path, data


# -- basics ------------------------------------------------------------------


@pytest.mark.parametrize("path", ["numpy", "auto"])
def test_version_prints_name_version_and_kernels(path: str, tmp_path: Path) -> None:
    env = {**os.environ, "BYTEPAIR_KERNELS": path}
    proc = run("-V", cwd=tmp_path, env=env)
    assert proc.returncode == 0
    if path == "numpy":
        kernels = "numpy (BYTEPAIR_KERNELS=numpy)"
    elif compiled_available():
        kernels = "compiled"
    else:
        kernels = f"numpy ({bytepair.backend._compiled_choice().reason})"
    assert proc.stdout.decode() == f"bytepair {bytepair.__version__}\nkernels: {kernels}\n"
    assert run("--version", cwd=tmp_path, env=env).stdout == proc.stdout


def imported(stderr: bytes) -> set[str]:
    """The modules a run with ``PYTHONPROFILEIMPORTTIME`` imported, from its report on stderr."""
    return {
        line.rsplit("|", 1)[1].strip()
        for line in stderr.decode(errors="replace").splitlines()
        if line.startswith("import time:") and "|" in line
    }


@pytest.mark.parametrize("threads", ["1", "0"])
def test_a_small_file_takes_the_compiled_kernels(threads: str, tmp_path: Path) -> None:
    """No size rule: the compiled core serves a small file from the first call, on either
    side, whatever the thread count."""
    if not compiled_available():
        pytest.skip(NOT_BUILT)
    env = {**os.environ, "BYTEPAIR_KERNELS": "auto"}
    probe = (
        "import sys; from bytepair.cli import run; status = run(sys.argv[1:]); "
        "print(status, sorted(m for m in sys.modules if m.startswith('bytepair.core.kernels._')))"
    )
    (tmp_path / "small.txt").write_bytes(b"a small file, compressed and decompressed\n" * 20)
    for args in (["-T", threads, "small.txt"], ["-dc", "small.txt.bp"]):
        proc = subprocess.run([sys.executable, "-c", probe, *args], cwd=tmp_path, capture_output=True, env=env)
        assert proc.returncode == 0, proc.stderr
        status, modules = proc.stdout.decode().splitlines()[-1].split(" ", 1)
        assert status == "0" and "bytepair.core.kernels._crc" in modules, (args, modules)


def test_help_documents_flags_and_explain(tmp_path: Path) -> None:
    proc = run("-h", cwd=tmp_path)
    assert proc.returncode == 0
    out = proc.stdout.decode()
    assert out.startswith("usage: bytepair")
    for flag in (
        "--decompress",
        "--compress",
        "--stdout",
        "-o FILE",
        "--keep",
        "--rm",
        "--force",
        "--test",
        "--list",
        "--verbose",
        "--quiet",
        "-1",
        "--threads",
        "--suffix",
        "--bench",
        "--version",
    ):
        assert flag in out, flag
    assert "bytepair -- explain" in out and "bytepair ./explain" in out
    assert run("--help", cwd=tmp_path).stdout == proc.stdout


def test_console_script_is_installed(tmp_path: Path) -> None:
    script = shutil.which("bytepair")
    if script is None:
        pytest.skip("the bytepair console script is not on PATH (package not installed)")
    proc = subprocess.run([script, "-V"], capture_output=True, timeout=TIMEOUT)
    assert proc.returncode == 0
    assert proc.stdout.decode().splitlines()[0] == f"bytepair {bytepair.__version__}"


# -- files -------------------------------------------------------------------


def test_compress_then_decompress_keeps_inputs(sample: tuple[Path, bytes], tmp_path: Path) -> None:
    path, data = sample
    proc = run(path.name, cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")
    packed = (tmp_path / "a.txt.bp").read_bytes()
    assert bytepair.decompress(packed) == data
    assert len(packed) < len(data) // 2
    assert path.read_bytes() == data  # -k is the default

    path.unlink()
    proc = run("-d", "a.txt.bp", cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")
    assert path.read_bytes() == data
    assert (tmp_path / "a.txt.bp").read_bytes() == packed
    assert listing(tmp_path) == ["a.txt", "a.txt.bp"]  # no temporary file left


def test_keep_flag_is_accepted(sample: tuple[Path, bytes], tmp_path: Path) -> None:
    path, data = sample
    assert run("-k", path.name, cwd=tmp_path).returncode == 0
    assert path.read_bytes() == data
    assert bytepair.decompress((tmp_path / "a.txt.bp").read_bytes()) == data


def test_levels_are_passed_to_the_compressor(sample: tuple[Path, bytes], tmp_path: Path) -> None:
    path, data = sample
    expected = {level: bytepair.compress(data, level=level) for level in (1, 3)}
    assert expected[1] != expected[3], "these levels cut blocks differently: their streams must differ"
    for level, packed in expected.items():
        proc = run(f"-{level}", "-c", path.name, cwd=tmp_path)
        assert (proc.returncode, proc.stdout) == (0, packed)
    # the last level given wins, as in gzip and zstd
    assert run("-3", "-1", "-c", path.name, cwd=tmp_path).stdout == expected[1]


def test_empty_file_round_trip(tmp_path: Path) -> None:
    (tmp_path / "empty").write_bytes(b"")
    assert run("empty", cwd=tmp_path).returncode == 0
    (tmp_path / "empty").unlink()
    assert run("-d", "empty.bp", cwd=tmp_path).returncode == 0
    assert (tmp_path / "empty").read_bytes() == b""


def test_rm_removes_input_after_success(sample: tuple[Path, bytes], tmp_path: Path) -> None:
    path, data = sample
    proc = run("--rm", path.name, cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, b"")
    assert listing(tmp_path) == ["a.txt.bp"]
    proc = run("--rm", "-d", "a.txt.bp", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, b"")
    assert listing(tmp_path) == ["a.txt"]
    assert path.read_bytes() == data


def test_modification_time_and_permissions_are_kept(sample: tuple[Path, bytes], tmp_path: Path) -> None:
    path, data = sample
    mtime_ns = 1_000_000_000_123_456_789
    path.chmod(0o640)
    os.utime(path, ns=(mtime_ns, mtime_ns))
    assert run(path.name, cwd=tmp_path).returncode == 0
    st = (tmp_path / "a.txt.bp").stat()
    assert stat.S_IMODE(st.st_mode) == 0o640
    assert st.st_mtime_ns == mtime_ns

    path.unlink()
    (tmp_path / "a.txt.bp").chmod(0o604)
    assert run("-d", "a.txt.bp", cwd=tmp_path).returncode == 0
    st = path.stat()
    assert stat.S_IMODE(st.st_mode) == 0o604
    assert st.st_mtime_ns == mtime_ns
    assert path.read_bytes() == data


def test_output_from_stdin_gets_the_usual_mode(tmp_path: Path) -> None:
    def umask_027() -> None:
        os.umask(0o027)

    proc = run("-o", "out.bp", cwd=tmp_path, input=b"hello" * 100, preexec_fn=umask_027)
    assert proc.returncode == 0
    assert stat.S_IMODE((tmp_path / "out.bp").stat().st_mode) == 0o640


def test_suffix_option(sample: tuple[Path, bytes], tmp_path: Path) -> None:
    path, data = sample
    assert run("-S", ".bpx", path.name, cwd=tmp_path).returncode == 0
    assert listing(tmp_path) == ["a.txt", "a.txt.bpx"]
    path.unlink()
    assert run("--suffix", ".bpx", "-d", "a.txt.bpx", cwd=tmp_path).returncode == 0
    assert path.read_bytes() == data


def test_decompress_needs_the_suffix_unless_output_is_named(sample: tuple[Path, bytes], tmp_path: Path) -> None:
    _, data = sample
    (tmp_path / "packed").write_bytes(bytepair.compress(data))
    proc = run("-d", "packed", cwd=tmp_path)
    assert proc.returncode == 1
    assert err_lines(proc) == ["bytepair: packed: unknown suffix, expected .bp (use -o or -c to name the output)"]
    assert listing(tmp_path) == ["a.txt", "packed"]

    proc = run("-d", "-o", "restored", "packed", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, b"")
    assert (tmp_path / "restored").read_bytes() == data
    proc = run("-dc", "packed", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, data)
    # the suffix alone is not a name
    (tmp_path / ".bp").write_bytes(bytepair.compress(b"x"))
    assert run("-d", ".bp", cwd=tmp_path).returncode == 1


def test_output_option(sample: tuple[Path, bytes], tmp_path: Path) -> None:
    path, data = sample
    assert run("-o", "x.bin", path.name, cwd=tmp_path).returncode == 0
    assert bytepair.decompress((tmp_path / "x.bin").read_bytes()) == data
    assert run("-d", "-o", "y", "x.bin", cwd=tmp_path).returncode == 0
    assert (tmp_path / "y").read_bytes() == data
    assert run("-o", "z.bp", cwd=tmp_path, input=data).returncode == 0  # standard input to a named file
    assert bytepair.decompress((tmp_path / "z.bp").read_bytes()) == data


def test_output_to_a_device(sample: tuple[Path, bytes], tmp_path: Path) -> None:
    path, _ = sample
    proc = run("-o", os.devnull, path.name, cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, b"")
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
    assert listing(tmp_path) == ["a.txt"]
    # --rm never removes an input whose output is not a file of its own
    proc = run("--rm", "-o", os.devnull, path.name, cwd=tmp_path)
    assert proc.returncode == 1
    assert path.exists()


# -- pipelines -----------------------------------------------------------------


def test_pipeline_through_stdin_and_stdout(sample: tuple[Path, bytes], tmp_path: Path) -> None:
    _, data = sample
    packed = run(cwd=tmp_path, input=data)
    assert (packed.returncode, packed.stderr) == (0, b"")
    assert packed.stdout == bytepair.compress(data)
    assert run("-", cwd=tmp_path, input=data).stdout == packed.stdout
    restored = run("-d", cwd=tmp_path, input=packed.stdout)
    assert (restored.returncode, restored.stdout, restored.stderr) == (0, data, b"")
    assert run("-d", "-", cwd=tmp_path, input=packed.stdout).stdout == data
    assert listing(tmp_path) == ["a.txt"]


def test_stdout_flag_writes_no_file(sample: tuple[Path, bytes], tmp_path: Path) -> None:
    path, data = sample
    proc = run("-c", path.name, cwd=tmp_path)
    assert proc.returncode == 0 and bytepair.decompress(proc.stdout) == data
    assert listing(tmp_path) == ["a.txt"]
    (tmp_path / "a.txt.bp").write_bytes(proc.stdout)
    proc = run("--stdout", "-d", "a.txt.bp", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (0, data)
    assert listing(tmp_path) == ["a.txt", "a.txt.bp"]


def test_concatenated_streams_and_trailing_garbage(tmp_path: Path) -> None:
    one, two = text(5000, 1), text(7000, 2)
    both = bytepair.compress(one) + bytepair.compress(two)
    proc = run("-d", cwd=tmp_path, input=both)
    assert (proc.returncode, proc.stdout) == (0, one + two)
    # several files to standard output make one concatenation, as with gzip -c
    (tmp_path / "one").write_bytes(one)
    (tmp_path / "two").write_bytes(two)
    proc = run("-c", "one", "two", cwd=tmp_path)
    assert bytepair.decompress(proc.stdout) == one + two

    for tail in (b"garbage!", b"xy"):
        proc = run("-d", cwd=tmp_path, input=both + tail)
        assert proc.returncode == 1
        assert err_lines(proc) == [
            f"bytepair: (stdin): corrupt data: data after the end of the stream at byte {len(both)} "
            "is not a bytepair stream"
        ]
    proc = run("-d", cwd=tmp_path, input=both + bytepair.compress(one)[:5])  # the start of a third stream
    assert proc.returncode == 1 and "truncated" in proc.stderr.decode()


# -- refusals and errors ---------------------------------------------------------


def test_refuses_to_overwrite_without_force(sample: tuple[Path, bytes], tmp_path: Path) -> None:
    path, data = sample
    target = tmp_path / "a.txt.bp"
    target.write_bytes(b"precious")
    proc = run(path.name, cwd=tmp_path)
    assert proc.returncode == 1
    assert err_lines(proc) == ["bytepair: a.txt.bp: already exists; use -f to overwrite"]
    assert target.read_bytes() == b"precious"
    assert listing(tmp_path) == ["a.txt", "a.txt.bp"]

    proc = run("-f", path.name, cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, b"")
    assert bytepair.decompress(target.read_bytes()) == data

    proc = run("-d", "a.txt.bp", cwd=tmp_path)  # a.txt is there
    assert proc.returncode == 1
    assert err_lines(proc) == ["bytepair: a.txt: already exists; use -f to overwrite"]
    assert run("--force", "-d", "a.txt.bp", cwd=tmp_path).returncode == 0
    assert path.read_bytes() == data


def test_refuses_to_write_over_its_own_input(sample: tuple[Path, bytes], tmp_path: Path) -> None:
    path, data = sample
    proc = run("-f", "-o", path.name, path.name, cwd=tmp_path)
    assert proc.returncode == 1
    assert len(err_lines(proc)) == 1 and "same file" in proc.stderr.decode()
    assert path.read_bytes() == data


def test_several_files_go_on_after_an_error(tmp_path: Path) -> None:
    for name in ("a", "c"):
        (tmp_path / name).write_bytes(text(20_000, ord(name)))
    proc = run("a", "missing", "c", cwd=tmp_path)
    assert proc.returncode == 1
    lines = err_lines(proc)
    assert len(lines) == 1 and lines[0].startswith("bytepair: ") and "missing" in lines[0], lines
    assert listing(tmp_path) == ["a", "a.bp", "c", "c.bp"]
    for name in ("a", "c"):
        assert bytepair.decompress((tmp_path / f"{name}.bp").read_bytes()) == (tmp_path / name).read_bytes()


def test_decompress_several_files_with_a_corrupt_one(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.bp").write_bytes(bytepair.compress(text(20_000, ord(name))))
    bad = bytearray((tmp_path / "b.bp").read_bytes())
    bad[len(bad) // 2] ^= 0x40
    (tmp_path / "b.bp").write_bytes(bad)
    proc = run("-d", "--rm", "a.bp", "b.bp", "c.bp", cwd=tmp_path)
    assert proc.returncode == 1
    lines = err_lines(proc)
    assert len(lines) == 1 and lines[0].startswith("bytepair: b.bp: corrupt data: ")
    assert listing(tmp_path) == ["a", "b.bp", "c"]  # b.bp kept (--rm), no partial b
    assert (tmp_path / "a").read_bytes() == text(20_000, ord("a"))


def test_error_messages_are_one_line(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    (tmp_path / "plain").write_bytes(b"just some text, not compressed")
    (tmp_path / "empty.bp").write_bytes(b"")
    packed = bytepair.compress(text(30_000))
    (tmp_path / "cut.bp").write_bytes(packed[: len(packed) // 2])
    cases = {
        ("nope",): "bytepair: nope: No such file or directory",
        ("dir",): "bytepair: dir: Is a directory",
        ("-d", "nope.bp"): "bytepair: nope.bp: No such file or directory",
        ("-d", "-o", "x", "plain"): "bytepair: plain: not a bytepair file",
        ("-t", "empty.bp"): "bytepair: empty.bp: not a bytepair file (it is empty)",
        ("-t", "cut.bp"): "bytepair: cut.bp: truncated data: compressed data ends before the end of the stream",
        ("-o", "dir", "plain"): "bytepair: dir: Is a directory",
    }
    for args, line in cases.items():
        proc = run(*args, cwd=tmp_path)
        assert proc.returncode == 1, args
        assert err_lines(proc) == [line], args
        assert "Traceback" not in proc.stderr.decode()
    assert listing(tmp_path) == ["cut.bp", "dir", "empty.bp", "plain"]


def obey_permissions() -> None:
    """In the child, as root: drop the capabilities that let root ignore file permissions."""
    if os.geteuid() != 0:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "cannot drop a capability")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="drops Linux capabilities when run as root")
def test_permission_denied(sample: tuple[Path, bytes], tmp_path: Path) -> None:
    path, data = sample
    path.chmod(0)
    try:
        proc = run(path.name, cwd=tmp_path, preexec_fn=obey_permissions)
    except subprocess.SubprocessError:
        pytest.skip("running as root without the right to drop capabilities")
    assert (proc.returncode, err_lines(proc)) == (1, ["bytepair: a.txt: Permission denied"])
    path.chmod(0o644)
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "b.txt").write_bytes(data)
    locked.chmod(0o555)
    try:
        proc = run("--rm", "locked/b.txt", cwd=tmp_path, preexec_fn=obey_permissions)
    finally:
        locked.chmod(0o755)
    assert (proc.returncode, err_lines(proc)) == (1, ["bytepair: locked/b.txt.bp: Permission denied"])
    assert sorted(os.listdir(locked)) == ["b.txt"]


@pytest.mark.parametrize(
    "args",
    [
        ["-d", "-z"],
        ["-t", "-z", "x"],
        ["-l", "-d", "x"],
        ["-b", "-t"],
        ["-o", "out", "a", "b"],
        ["-c", "-o", "out", "a"],
        ["-k", "--rm", "a"],
        ["--rm", "-c", "a"],
        ["-t", "-c", "a"],
        ["-l", "--rm", "a"],
        ["-T", "-1", "a"],
        ["-T", "many", "a"],
        ["-S", "", "a"],
        ["-S", "x/y", "a"],
        ["--runs", "0", "-b"],
        ["--runs", "3", "a"],  # runs mean something only to -b
        ["-d", "--runs", "3", "a"],
        ["--bogus"],
        ["-Q"],
        ["--comp"],  # no abbreviations: a later option could make them ambiguous
        ["-o"],
    ],
)
def test_usage_errors_are_one_line_and_exit_2(args: list[str], tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"data")
    proc = run(*args, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stdout == b""
    lines = err_lines(proc)
    assert len(lines) == 1 and lines[0].startswith("bytepair: "), lines
    assert listing(tmp_path) == ["a"]


# -- terminals -------------------------------------------------------------------


def run_on_pty(args: Sequence[str], cwd: Path, stream: str, input: bytes | None = None) -> tuple[int, bytes, bytes]:
    """Run with a terminal as its *stream* ("stdin", "stdout" or "stderr"); returns
    (status, what the terminal received, the other output stream)."""
    master, slave = pty.openpty()
    kwargs: dict[str, object] = {"stdin": subprocess.PIPE if input is not None else subprocess.DEVNULL}
    kwargs.update(stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    kwargs[stream] = slave
    proc = subprocess.Popen([*CLI, *args], cwd=cwd, **kwargs)  # type: ignore[call-overload]
    os.close(slave)
    if input is not None:
        proc.stdin.write(input)
        proc.stdin.close()
    other = proc.stderr if stream != "stderr" else proc.stdout
    seen = bytearray()
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError as exc:  # EIO: the child closed its end
                if exc.errno != errno.EIO:
                    raise
                chunk = b""
            if not chunk and proc.poll() is not None:
                break
            seen += chunk
        elif proc.poll() is not None:
            break
    rest = other.read()
    status = proc.wait(timeout=TIMEOUT)
    os.close(master)
    return status, bytes(seen), rest


def test_refuses_to_write_compressed_data_to_a_terminal(tmp_path: Path) -> None:
    status, shown, err = run_on_pty([], tmp_path, "stdout", input=b"hello world " * 10)
    assert status == 1
    assert shown == b""
    assert err.decode() == "bytepair: refusing to write compressed data to a terminal; use -f to force\n"
    (tmp_path / "a").write_bytes(b"abc")
    status, shown, _ = run_on_pty(["-c", "a"], tmp_path, "stdout")
    assert (status, shown) == (1, b"")
    status, shown, err = run_on_pty(["-f"], tmp_path, "stdout", input=b"hello world " * 10)
    assert (status, err) == (0, b"")
    assert shown.startswith(bytepair.container.format.MAGIC)
    # decompressed data may go to a terminal
    status, shown, _ = run_on_pty(["-d"], tmp_path, "stdout", input=bytepair.compress(b"plain words"))
    assert (status, shown) == (0, b"plain words")


def test_decompressing_to_a_terminal_writes_the_data_alone(tmp_path: Path, kernels: str) -> None:
    """Nothing but the data reaches a terminal, on either path (numba's colorama hook once
    wrote an escape code at exit, after the data; no newlines: a terminal turns them into CRLF)."""
    data = b"plain words " * 20_000
    status, shown, err = run_on_pty(["-d"], tmp_path, "stdout", input=bytepair.compress(data))
    assert (status, err) == (0, b"")
    assert shown == data


def test_refuses_to_read_compressed_data_from_a_terminal(tmp_path: Path) -> None:
    for args in (["-d"], ["-t"], ["-l"], ["-d", "-"]):
        status, _, err = run_on_pty(args, tmp_path, "stdin")
        assert status == 1, args
        assert err.decode() == "bytepair: refusing to read compressed data from a terminal; use -f to force\n"


def test_progress_is_drawn_on_a_terminal_only(tmp_path: Path) -> None:
    # several frames of text on one thread, so that the run lasts past the first redraw
    # (0.1 s) however fast the kernels are
    data = text(12 << 20)
    (tmp_path / "big").write_bytes(data)
    status, shown, _ = run_on_pty(["-T1", "big"], tmp_path, "stderr")  # one thread: long enough to draw
    assert status == 0
    drawn = shown.decode()
    assert re.search(r"\rbig: \d+\.\d MB  \d+%  \d+\.\d\d MB/s  ratio \d\.\d{3}\x1b\[K", drawn), drawn
    assert drawn.endswith("\r\x1b[K")  # the line is erased at the end
    assert bytepair.decompress((tmp_path / "big.bp").read_bytes()) == data

    assert run_on_pty(["-q", "-f", "big"], tmp_path, "stderr")[:2] == (0, b"")
    proc = run("-f", "big", cwd=tmp_path)  # standard error is a pipe
    assert (proc.returncode, proc.stderr) == (0, b"")


# -- test, list, verbose -----------------------------------------------------------


def test_test_flag_verifies_without_writing(sample: tuple[Path, bytes], tmp_path: Path) -> None:
    _, data = sample
    packed = bytepair.compress(data)
    (tmp_path / "good.bp").write_bytes(packed)
    proc = run("-t", "good.bp", cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")
    proc = run("-t", "-v", "good.bp", cwd=tmp_path)
    assert (proc.returncode, err_lines(proc)) == (0, [f"bytepair: good.bp: OK ({len(data)} bytes)"])
    assert run("-dt", "good.bp", cwd=tmp_path).returncode == 0  # -d -t tests, as in gzip
    assert run("--test", cwd=tmp_path, input=packed).returncode == 0

    bad = bytearray(packed)
    bad[len(bad) // 2] ^= 0x01
    (tmp_path / "bad.bp").write_bytes(bad)
    proc = run("-t", "good.bp", "bad.bp", cwd=tmp_path)
    assert proc.returncode == 1
    lines = err_lines(proc)
    assert len(lines) == 1 and lines[0].startswith("bytepair: bad.bp: corrupt data: "), lines
    assert listing(tmp_path) == ["a.txt", "bad.bp", "good.bp"]


def test_list_shows_frames_blocks_sizes_ratio_and_checksum(tmp_path: Path) -> None:
    one, two = text(40_000, 1), text(90_000, 2)
    (tmp_path / "one.bp").write_bytes(bytepair.compress(one))
    (tmp_path / "two.bp").write_bytes(bytepair.compress(two, level=1) + bytepair.compress(one))  # two streams
    proc = run("-l", "one.bp", "two.bp", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, b"")
    header, row1, row2, total = proc.stdout.decode().splitlines()
    assert header.split() == ["Frames", "Blocks", "Compressed", "Original", "Ratio", "CRC-32", "File"]

    def expect(frames: int, compressed: int, original: int, crc: str, name: str) -> list[str]:
        return [str(frames), "*", str(compressed), str(original), f"{compressed / original:.3f}", crc, *name.split()]

    def same(row: str, wanted: list[str]) -> None:
        fields = row.split()
        assert len(fields) == len(wanted), row
        assert all(w in ("*", f) for f, w in zip(fields, wanted, strict=True)), (row, wanted)
        assert int(fields[1]) >= int(fields[0])  # at least one block per frame

    size1, size2 = (tmp_path / "one.bp").stat().st_size, (tmp_path / "two.bp").stat().st_size
    same(row1, expect(1, size1, len(one), f"{zlib.crc32(one):08x}", "one.bp"))
    same(row2, expect(2, size2, len(two + one), f"{zlib.crc32(two + one):08x}", "two.bp"))
    blocks = int(row1.split()[1]) + int(row2.split()[1])
    same(total, expect(3, size1 + size2, len(one) * 2 + len(two), "--------", "total (2 files)"))
    assert int(total.split()[1]) == blocks

    # one file: no total; standard input (not seekable) is read and discarded, same figures
    proc = run("-l", "two.bp", cwd=tmp_path)
    assert proc.stdout.decode().splitlines()[1:] == [row2]
    proc = subprocess.run(
        f"cat two.bp | {' '.join(CLI)} -l", shell=True, cwd=tmp_path, capture_output=True, timeout=TIMEOUT
    )
    assert proc.stdout.decode().splitlines()[1] == row2.replace("two.bp", "(stdin)")


def test_list_many_frames_and_errors(tmp_path: Path) -> None:
    # a stream of three frames, built from one encoded frame and a matching end record
    # (encoding three real 4 MiB frames would cost seconds; -l reads headers only)
    part = text(100_000)
    fmt = bytepair.container.format
    frame = bytepair.compress(part)[fmt.STREAM_HEADER_SIZE : -fmt.END_SIZE]
    crc = zlib.crc32(part * 3)
    three = fmt.pack_stream_header() + frame * 3 + fmt.pack_end(3, 3 * len(part), crc)
    assert bytepair.decompress(three) == part * 3
    (tmp_path / "big.bp").write_bytes(three)
    proc = run("-l", "big.bp", cwd=tmp_path)
    fields = proc.stdout.decode().splitlines()[1].split()
    assert (fields[0], fields[2], fields[3], fields[5]) == ("3", str(len(three)), str(3 * len(part)), f"{crc:08x}")

    cases = {
        "cut.bp": three[:-100],  # ends inside the last frame's body
        "bad_end.bp": three[: -fmt.END_SIZE] + fmt.pack_end(2, 3 * len(part), crc),
        "garbage.bp": three + b"junk-not-a-stream",
        "plain.bp": b"plain text here",
    }
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
    proc = run("-l", "big.bp", *cases, cwd=tmp_path)
    assert proc.returncode == 1
    lines = err_lines(proc)
    assert len(lines) == 4, lines
    assert lines[0].startswith("bytepair: cut.bp: truncated data: data ends inside the body of frame 2")
    assert lines[1].startswith(f"bytepair: bad_end.bp: corrupt data: end of stream at byte {len(three) - fmt.END_SIZE}")
    assert lines[2] == (
        f"bytepair: garbage.bp: corrupt data: data after the end of the stream at byte {len(three)} "
        "is not a bytepair stream"
    )
    assert lines[3] == "bytepair: plain.bp: not a bytepair file"
    # the good file is still listed, and the total covers what could be listed
    out = proc.stdout.decode().splitlines()
    assert len(out) == 3 and out[2].endswith("total (1 file)")


def test_memory_stays_bounded_on_highly_compressible_input(tmp_path: Path) -> None:
    # 150 frames of 1 MiB of zeros in 140 KB: fed whole, the decompressor would hold 150 MiB
    # of output at once; fed in slices, a few frames at a time
    part = bytes(1 << 20)
    fmt = bytepair.container.format
    frame = bytepair.compress(part, level=1)[fmt.STREAM_HEADER_SIZE : -fmt.END_SIZE]
    n, crc = 150, 0
    for _ in range(n):
        crc = zlib.crc32(part, crc)
    (tmp_path / "bomb.bp").write_bytes(fmt.pack_stream_header() + frame * n + fmt.pack_end(n, n << 20, crc))
    (tmp_path / "tiny.bp").write_bytes(bytepair.compress(b"tiny"))

    def peak_of(name: str, kernels: str = "auto") -> int:
        """Peak RSS (KiB) of ``bytepair -dc name``, measured from a fresh process, so that
        the child's peak is not this one's, inherited across fork."""
        probe = (
            "import resource, subprocess, sys; "
            "status = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode; "
            "print(status, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
        )
        proc = subprocess.run(
            [sys.executable, "-c", probe, *CLI, "-dc", name],
            cwd=tmp_path,
            capture_output=True,
            timeout=TIMEOUT,
            env={**os.environ, "BYTEPAIR_KERNELS": kernels},
        )
        status, peak_kib = map(int, proc.stdout.split())
        assert status == 0, proc.stderr
        return peak_kib

    peak_kib = peak_of("bomb.bp")
    assert peak_kib < 100 * 1024, f"peak RSS {peak_kib // 1024} MiB for {n} MiB of output"


def test_verbose_reports_sizes(sample: tuple[Path, bytes], tmp_path: Path) -> None:
    path, data = sample
    proc = run("-v", path.name, cwd=tmp_path)
    size = (tmp_path / "a.txt.bp").stat().st_size
    assert err_lines(proc) == [f"bytepair: a.txt: {len(data)} -> {size} bytes (ratio {size / len(data):.3f}), a.txt.bp"]


# -- threads, bench, explain ------------------------------------------------------------


def test_threads_give_the_same_stream(tmp_path: Path) -> None:
    data = text(200_000)
    (tmp_path / "a").write_bytes(data)
    for n in ("2", "0"):
        proc = run("-T", n, "-c", "a", cwd=tmp_path)
        assert (proc.returncode, proc.stderr) == (0, b"")
        assert proc.stdout == bytepair.compress(data)
    assert run("--threads", "1", "-c", "a", cwd=tmp_path).stdout == bytepair.compress(data)


def test_bench_runs_on_files(tmp_path: Path) -> None:
    (tmp_path / "small").write_bytes(text(3000))
    proc = run("-b", "--runs", "1", "-1", "-9", "small", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, b""), proc.stderr
    out = proc.stdout.decode()
    assert "small" in out and "bytepair" in out and "zlib" in out
    proc = run("--bench", "--runs", "1", "missing", cwd=tmp_path)
    assert proc.returncode == 1
    lines = err_lines(proc)
    assert len(lines) == 1 and lines[0].startswith("bytepair: ") and "missing" in lines[0], lines


def test_bench_measures_the_threads_asked_for(tmp_path: Path) -> None:
    (tmp_path / "small").write_bytes(text(3000))
    proc = run("-b", "-T2", "--runs", "1", "-1", "small", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, b""), proc.stderr
    codecs = {line.split("|")[2].strip() for line in proc.stdout.decode().splitlines() if line.startswith("| small")}
    assert "bytepair-1-T2" in codecs and "bytepair-1" not in codecs, codecs


def test_explain_is_delegated_and_a_file_named_explain_can_be_compressed(tmp_path: Path) -> None:
    proc = run("explain", "--help", cwd=tmp_path)
    assert proc.returncode == 0
    assert "explain" in proc.stdout.decode()
    assert run("explain", "--no-such-option", cwd=tmp_path).returncode == 2

    (tmp_path / "explain").write_bytes(b"a file that happens to be called explain")
    assert run("--", "explain", cwd=tmp_path).returncode == 0
    assert bytepair.decompress((tmp_path / "explain.bp").read_bytes()) == (tmp_path / "explain").read_bytes()
    assert run("-f", "./explain", cwd=tmp_path).returncode == 0
    assert listing(tmp_path) == ["explain", "explain.bp"]


# -- never lose data ---------------------------------------------------------------


def limit_file_size(limit: int) -> Callable[[], None]:
    def preexec() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return preexec


NO_PYC = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}  # no .pyc file may run into the limit


def test_full_disk_leaves_no_partial_output(sample: tuple[Path, bytes], tmp_path: Path) -> None:
    path, data = sample
    limit = 8192
    assert len(bytepair.compress(data)) > limit
    proc = run("--rm", path.name, cwd=tmp_path, env=NO_PYC, preexec_fn=limit_file_size(limit))
    assert proc.returncode == 1
    assert err_lines(proc) == [f"bytepair: a.txt.bp: {os.strerror(errno.EFBIG)}"]
    assert listing(tmp_path) == ["a.txt"]  # input kept despite --rm, no temporary file
    assert path.read_bytes() == data

    (tmp_path / "b.bp").write_bytes(bytepair.compress(data))
    path.unlink()
    proc = run("-d", "--rm", "b.bp", cwd=tmp_path, env=NO_PYC, preexec_fn=limit_file_size(limit))
    assert proc.returncode == 1
    assert err_lines(proc) == [f"bytepair: b: {os.strerror(errno.EFBIG)}"]
    assert listing(tmp_path) == ["b.bp"]


def test_rm_keeps_input_when_output_is_refused(sample: tuple[Path, bytes], tmp_path: Path) -> None:
    path, data = sample
    (tmp_path / "a.txt.bp").write_bytes(b"other")
    proc = run("--rm", path.name, cwd=tmp_path)
    assert proc.returncode == 1
    assert path.read_bytes() == data and (tmp_path / "a.txt.bp").read_bytes() == b"other"


def big_input(path: Path) -> None:
    """40 MB of compressible text: many seconds of work, so a signal lands mid-way."""
    block = text(1 << 20)
    with open(path, "wb") as f:
        for i in range(40):
            f.write(block[i:] + block[:i])


PYTHON_STARTING_SITE = b"Fatal Python error: init_import_site"
PYTHON_STARTING_RUNPY = b"Could not import runpy module"
"""What Python itself prints when a Ctrl-C lands in its start-up, before the program's first line."""


@pytest.mark.parametrize("args", [["-f", "data.txt"], ["-f", "-d", "data.txt.bp"]])
def test_ctrl_c_at_any_moment_is_status_130_and_no_traceback(args: list[str], tmp_path: Path) -> None:
    """SIGINT at moments spread over a whole run, start-up (imports) included: each run ends
    at once with status 130 and nothing on stderr, or finishes; either way the input is
    intact and the output is absent or whole, with no temporary file left."""
    data = text(4 << 20)
    (tmp_path / "data.txt").write_bytes(data)
    (tmp_path / "data.txt.bp").write_bytes(packed := bytepair.compress(data))
    src, want = ("data.txt.bp", data) if "-d" in args else ("data.txt", packed)
    out = "data.txt" if "-d" in args else "data.txt.bp"

    def wall(command: list[str]) -> float:
        start = time.monotonic()
        assert subprocess.run(command, cwd=tmp_path, capture_output=True, timeout=TIMEOUT).returncode == 0
        return time.monotonic() - start

    whole_run = wall([*CLI, *args])
    # Python's own start-up, before any program's code runs (the interpreter, its site, and
    # runpy for -m): an empty module's run
    (tmp_path / "empty_module.py").write_text("")
    python_itself = max(wall([sys.executable, "-m", "empty_module"]) for _ in range(3))
    (tmp_path / "empty_module.py").unlink()
    statuses = set()
    for k in range(24):
        (tmp_path / out).unlink(missing_ok=True)
        proc = subprocess.Popen([*CLI, *args], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(python_itself + (whole_run - python_itself) * k / 24)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=TIMEOUT)
        assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
        assert (tmp_path / src).read_bytes() == (data if src == "data.txt" else packed)
        if proc.returncode == 1 and err.startswith((PYTHON_STARTING_SITE, PYTHON_STARTING_RUNPY)):
            # on a loaded machine the signal can still land in Python's own start-up (its site
            # module, runpy), before any of bytepair runs: not a moment this test is about
            assert not (tmp_path / out).exists()
            continue
        statuses.add(proc.returncode)
        # 130, or killed by SIGINT itself (-2: in Python's last moments, after its handler is
        # gone), which a shell reports as 130 too
        assert proc.returncode in (0, 130, -signal.SIGINT), (k, proc.returncode, err)
        assert err == b"", (k, err)
        # absent or whole: interrupted after its output was renamed into place, a run still
        # ends with 130 (as gzip does) and the output stays
        if proc.returncode == 0 or (tmp_path / out).exists():
            assert (tmp_path / out).read_bytes() == want
    assert 130 in statuses


@pytest.mark.parametrize(("signum", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupted_run_leaves_nothing_behind(signum: int, status: int, tmp_path: Path) -> None:
    src = tmp_path / "big.txt"
    big_input(src)
    before = digest(src)
    proc = subprocess.Popen([*CLI, "--rm", "big.txt"], cwd=tmp_path, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            temps = [p for p in tmp_path.iterdir() if p.name.startswith(".big.txt.bp.")]
            if temps and temps[0].stat().st_size > 0:
                break
            time.sleep(0.02)
        else:
            pytest.fail("the child never started writing its temporary file")
        proc.send_signal(signum)
        assert proc.wait(timeout=60) == status
    finally:
        proc.kill()
    assert proc.stderr is not None
    assert b"Traceback" not in proc.stderr.read()
    assert listing(tmp_path) == ["big.txt"]
    assert digest(src) == before


@pytest.mark.parametrize("path", ["numpy", "compiled"])
def test_default_threads_follow_the_input_and_the_path(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every core for large or unsized inputs where the compiled kernels (threads) run; one
    for small inputs, and on the numpy path (processes); as asked whenever -T is given."""
    from bytepair.cli.main import THREADS_FROM, _compress_threads

    use_kernels(path, monkeypatch)
    large = 0 if path == "compiled" else 1
    assert [_compress_threads(None, size) for size in (0, THREADS_FROM - 1, THREADS_FROM, None)] == [1, 1, large, large]
    assert _compress_threads(3, 10) == 3 and _compress_threads(0, 10) == 0


def test_size_of_knows_files_only(tmp_path: Path) -> None:
    from bytepair.cli.main import _size_of

    (tmp_path / "f").write_bytes(b"x" * 1234)
    with open(tmp_path / "f", "rb") as f:
        assert _size_of(f) == 1234
    read_end, write_end = os.pipe()
    with os.fdopen(read_end, "rb") as pipe:
        assert _size_of(pipe) is None
    os.close(write_end)
    assert _size_of(io.BytesIO(b"abc")) is None


@pytest.mark.parametrize(("given", "seen"), [(None, "1"), ("3", "3")])
def test_the_command_asks_numpy_for_one_blas_thread(given: str | None, seen: str) -> None:
    # bytepair never calls BLAS; a caller's own setting is kept, and a program importing the
    # library is left alone (only the command's entry sets it)
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    probe = (
        "import os, bytepair, bytepair.cli as cli; before = os.environ.get('OPENBLAS_NUM_THREADS'); "
        "cli._no_blas_threads(); print(before, os.environ.get('OPENBLAS_NUM_THREADS'))"
    )
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == [str(given), seen]
