"""The ``bytepair`` command refuses what gzip refuses, never ends in a traceback, and decodes in bounded memory.

Each test runs the command as a real subprocess, as a user meets it: exit status, the
one line on standard error, and which files exist afterwards. Anything that could
block (a FIFO) runs under a timeout, so a hang is a failure, not a stuck suite.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import bytepair
from bytepair import gage

CLI = [sys.executable, "-m", "bytepair"]
TIMEOUT = 60
DATA = b"a line of text that compresses well enough, " * 200


def run(*args: str | bytes, cwd: Path, input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*CLI, *args], cwd=cwd, input=input, capture_output=True, timeout=TIMEOUT)


def one_error_line(proc: subprocess.CompletedProcess[bytes]) -> str:
    """The single line a failure prints; no traceback."""
    lines = proc.stderr.decode("utf-8", "replace").splitlines()
    assert proc.returncode == 1, proc.stderr
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in lines[0]
    return lines[0]


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    path = tmp_path / "a"
    path.write_bytes(DATA)
    return path


# -- outputs whose names bytepair derives ------------------------------------------------------


@pytest.mark.parametrize("target", [os.devnull, "fifo"], ids=["devnull", "fifo"])
def test_derived_output_that_is_a_link_to_a_device_or_fifo_is_refused(
    sample: Path, tmp_path: Path, target: str
) -> None:
    """`ln -s /dev/null a.bp; bytepair a` must not send the data to /dev/null."""
    if target == "fifo":
        os.mkfifo(tmp_path / "fifo")
    (tmp_path / "a.bp").symlink_to(target)
    line = one_error_line(run("a", cwd=tmp_path))
    assert line == "bytepair: a.bp: already exists; use -f to overwrite"
    assert (tmp_path / "a.bp").is_symlink()
    # -f replaces the link itself, as gzip does; what it pointed to is untouched
    proc = run("-f", "a", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "a.bp").is_symlink()
    assert bytepair.decompress((tmp_path / "a.bp").read_bytes()) == DATA
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_derived_output_of_decompression_that_is_a_link_is_refused(sample: Path, tmp_path: Path) -> None:
    (tmp_path / "b.bp").write_bytes(bytepair.compress(DATA))
    (tmp_path / "b").symlink_to(os.devnull)
    assert one_error_line(run("-d", "b.bp", cwd=tmp_path)) == "bytepair: b: already exists; use -f to overwrite"


def test_explicit_output_to_a_device_stays_allowed(sample: Path, tmp_path: Path) -> None:
    (tmp_path / "null-link").symlink_to(os.devnull)
    for out in (os.devnull, "null-link"):
        proc = run("-o", out, "a", cwd=tmp_path)
        assert (proc.returncode, proc.stderr) == (0, b"")
    assert (tmp_path / "null-link").is_symlink()


# -- inputs that are not regular files ---------------------------------------------------------


def test_fifo_input_is_refused_at_once(tmp_path: Path) -> None:
    """A FIFO with no writer used to block the open forever; --rm used to delete the node."""
    os.mkfifo(tmp_path / "f")
    for args in (["f"], ["--rm", "f"], ["-d", "f"], ["-t", "f"], ["-l", "f"], ["-c", "f"]):
        line = one_error_line(run(*args, cwd=tmp_path))
        assert line == "bytepair: f: is a FIFO, not a regular file; use -f to read it", args
    assert stat.S_ISFIFO(os.lstat(tmp_path / "f").st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]


def feed_fifo(path: Path, data: bytes) -> threading.Thread:
    def write() -> None:
        with open(path, "wb") as f:
            f.write(data)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def test_fifo_input_with_force_is_read_and_never_removed(tmp_path: Path) -> None:
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    writer = feed_fifo(fifo, DATA)
    proc = run("-f", "-c", "f", cwd=tmp_path)
    writer.join(TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    assert bytepair.decompress(proc.stdout) == DATA
    writer = feed_fifo(fifo, DATA)
    proc = run("-f", "--rm", "f", cwd=tmp_path)
    writer.join(TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.decode() == "bytepair: f: not removed: not a regular file\n"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert bytepair.decompress((tmp_path / "f.bp").read_bytes()) == DATA


def test_device_input_is_refused_without_force(tmp_path: Path) -> None:
    line = one_error_line(run("-c", os.devnull, cwd=tmp_path))
    assert line == f"bytepair: {os.devnull}: is a character device, not a regular file; use -f to read it"
    proc = run("-f", "-c", os.devnull, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert bytepair.decompress(proc.stdout) == b""


def test_standard_input_and_stdout_keep_working(sample: Path, tmp_path: Path) -> None:
    proc = run(cwd=tmp_path, input=DATA)
    assert proc.returncode == 0, proc.stderr
    assert bytepair.decompress(proc.stdout) == DATA
    assert run("-dc", cwd=tmp_path, input=proc.stdout).stdout == DATA
    proc = run("-c", "a", cwd=tmp_path)
    assert proc.returncode == 0 and bytepair.decompress(proc.stdout) == DATA


def test_directory_input_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    assert one_error_line(run("d", cwd=tmp_path)) == "bytepair: d: Is a directory"


# -- symbolic links and hard links -------------------------------------------------------------


def test_symlink_input_is_refused_without_force(sample: Path, tmp_path: Path) -> None:
    (tmp_path / "link").symlink_to("a")
    line = one_error_line(run("link", cwd=tmp_path))
    assert line == "bytepair: link: is a symbolic link; use -f to follow it"
    assert not (tmp_path / "link.bp").exists()
    proc = run("-f", "--rm", "link", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert bytepair.decompress((tmp_path / "link.bp").read_bytes()) == DATA
    assert not (tmp_path / "link").is_symlink()  # --rm removed the link, not what it named
    assert sample.read_bytes() == DATA


def test_rm_of_a_file_with_other_hard_links_is_refused_without_force(sample: Path, tmp_path: Path) -> None:
    os.link(sample, tmp_path / "b")
    line = one_error_line(run("--rm", "a", cwd=tmp_path))
    assert line == "bytepair: a: has 1 other link; unchanged (use -f to remove it)"
    assert sample.exists() and not (tmp_path / "a.bp").exists()
    proc = run("a", cwd=tmp_path)  # keeping the input, the links do not matter
    assert proc.returncode == 0, proc.stderr
    (tmp_path / "a.bp").unlink()
    proc = run("-f", "--rm", "a", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not sample.exists() and (tmp_path / "b").read_bytes() == DATA


# -- Gage's format: block by block, memory bounded whatever the output size ---------------------


def doubling_chain_block(depth: int) -> bytes:
    """One Gage block of a few dozen bytes whose one payload symbol stands for 2**depth bytes of '0'."""
    leftcode, rightcode = list(range(256)), [0] * 256
    leftcode[255], rightcode[255] = 48, 48
    for k in range(1, depth):
        leftcode[255 - k] = rightcode[255 - k] = 256 - k
    return gage._pack_table(leftcode, rightcode) + b"\x00\x01" + bytes([256 - depth])


ONE_MIB_BLOCK = doubling_chain_block(20)


def test_crafted_gage_blocks_decode_to_what_they_say(tmp_path: Path) -> None:
    (tmp_path / "small.bpe").write_bytes(ONE_MIB_BLOCK * 3)
    proc = run("-dc", "small.bpe", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == gage.decompress(ONE_MIB_BLOCK * 3) == b"0" * (3 << 20)


PEAK_PROBE = """
import sys, tracemalloc
tracemalloc.start()
from bytepair.cli.main import main
status = main(sys.argv[1:])
print(status, tracemalloc.get_traced_memory()[1], file=sys.stderr)
"""


def traced_peak(tmp_path: Path, args: list[str], blocks: int) -> int:
    """The traced peak of ``bytepair ARGS FILE`` on *blocks* 1 MiB Gage blocks, in a fresh process."""
    bomb = ONE_MIB_BLOCK * blocks
    (tmp_path / "bomb.bpe").write_bytes(bomb)
    proc = subprocess.run(
        [sys.executable, "-c", PEAK_PROBE, *args, "bomb.bpe"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=TIMEOUT * 2,
    )
    status, peak = map(int, proc.stderr.splitlines()[-1].split())
    assert status == 0, proc.stderr
    return peak


@pytest.mark.parametrize("args", [["-t"], ["-dc"]], ids=["test", "decompress"])
def test_gage_decoding_memory_is_bounded_whatever_the_output_size(tmp_path: Path, args: list[str]) -> None:
    """18 KB of Gage blocks that expand to 380 MiB peak within a few MiB of 38 MiB's: memory does
    not follow the output's size (the fixed cost, the modules' own objects among them, is the same for both)."""
    assert len(ONE_MIB_BLOCK * 380) < 20_000
    small = traced_peak(tmp_path, args, 38)
    large = traced_peak(tmp_path, args, 380)
    assert large - small < 8 << 20, f"peak {large >> 20} MiB for 380 MiB of output, {small >> 20} MiB for 38 MiB"
    assert large < 128 << 20, f"peak {large >> 20} MiB (traced) for 380 MiB of output"


# -- no traceback: MemoryError is one line ------------------------------------------------------

RAISE_MEMORY_ERROR = """
import sys
import bytepair.cli.main as cli, bytepair.cli.bench as bench, bytepair.cli.explain as explain
import bytepair.container.listing as listing
def out_of_memory(*args, **kwargs):
    raise MemoryError
for module, name in [(cli, "compress_file"), (cli, "decompress_file"), (listing, "list_streams"),
                     (bench, "bench_command"), (explain, "main")]:
    setattr(module, name, out_of_memory)
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["-c", "a"], "bytepair: a: out of memory"),
        (["-d", "-o", "out", "a.bp"], "bytepair: a.bp: out of memory"),
        (["-l", "a.bp"], "bytepair: a.bp: out of memory"),
        (["-b", "a"], "bytepair: out of memory"),
        (["explain", "a"], "bytepair: out of memory"),
    ],
)
def test_memory_error_is_one_line_and_exit_1(sample: Path, tmp_path: Path, args: list[str], expected: str) -> None:
    (tmp_path / "a.bp").write_bytes(bytepair.compress(DATA))
    proc = subprocess.run(
        [sys.executable, "-c", RAISE_MEMORY_ERROR, *args], cwd=tmp_path, capture_output=True, timeout=TIMEOUT
    )
    assert one_error_line(proc) == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "a.bp"]  # no partial output left


def test_a_memory_error_does_not_stop_the_other_files(tmp_path: Path) -> None:
    for name in ("a.bp", "b.bp"):
        (tmp_path / name).write_bytes(bytepair.compress(DATA))
    proc = subprocess.run(
        [sys.executable, "-c", RAISE_MEMORY_ERROR, "-d", "a.bp", "b.bp"],
        cwd=tmp_path,
        capture_output=True,
        timeout=TIMEOUT,
    )
    assert proc.returncode == 1
    assert proc.stderr.decode().splitlines() == ["bytepair: a.bp: out of memory", "bytepair: b.bp: out of memory"]


# -- names that are not valid UTF-8 ------------------------------------------------------------


def test_names_that_are_not_utf8_are_shown_as_a_shell_shows_them(tmp_path: Path) -> None:
    name = b"caf\xe9-\xff"
    os.makedirs(tmp_path, exist_ok=True)
    with open(os.path.join(os.fsencode(tmp_path), name), "wb") as f:
        f.write(b"not compressed")
    line = one_error_line(run("-d", name, cwd=tmp_path))
    assert line.startswith("bytepair: caf\\xe9-\\xff: unknown suffix"), line
    assert "\\udc" not in line
    proc = run("-v", name, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    said = proc.stderr.decode()
    assert said.startswith("bytepair: caf\\xe9-\\xff: 14 -> ") and said.rstrip().endswith(", caf\\xe9-\\xff.bp")
    assert os.path.exists(os.path.join(os.fsencode(tmp_path), name + b".bp"))


def test_names_that_are_not_utf8_in_bench_and_explain(tmp_path: Path) -> None:
    name = b"caf\xe9"
    with open(os.path.join(os.fsencode(tmp_path), name), "wb") as f:
        f.write(DATA)
    proc = run("-b", "--runs", "1", name, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert b"| caf\\xe9 | bytepair-5 |" in proc.stdout and b"\\udc" not in proc.stdout
    proc = run("explain", "--file", b"missing\xff", cwd=tmp_path)
    assert proc.returncode != 0
    assert proc.stderr.decode().startswith("bytepair explain: cannot read missing\\xff: ")


def test_an_interrupt_as_the_temporary_file_is_made_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``io.atomic.atomic_output`` holds SIGINT back from the temporary file's creation until its
    removal on failure is armed: a Ctrl-C that came in between (here, sent the moment the file
    exists) is raised inside, and the file goes. Without the hold it was left behind."""
    import signal

    from bytepair.io import atomic

    if not hasattr(signal, "pthread_sigmask"):
        pytest.skip("no signal masks on this platform")
    made = atomic._create_temp

    def made_then_interrupted(directory: str, name: str) -> tuple[int, str]:
        got = made(directory, name)
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):  # bytecodes at which a pending handler would run
            pass
        return got

    monkeypatch.setattr(atomic, "_create_temp", made_then_interrupted)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt), atomic.atomic_output(str(tmp_path / "out"), overwrite=False, mode=0o644):
            raise AssertionError("the interrupt comes before the caller's block")
    finally:
        signal.signal(signal.SIGINT, before)
    assert os.listdir(tmp_path) == []
