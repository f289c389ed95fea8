"""Worker processes: every kind of caller gets its output, never ``BrokenProcessPool``.

multiprocessing's workers re-import the caller's ``__main__``; ours must not. Each
kind of caller runs as a subprocess on both paths (threads on the compiled one,
worker processes on numpy's): a script without a main guard, ``python -``,
``python -c``, an interactive session, and a Jupyter kernel executing a notebook.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from bytepair.io import workers
from tests.helpers import NOT_BUILT, REPO, compiled, compiled_available

CALLER = """\
import bytepair
import bytepair.io.parallel as parallel
import bytepair.io.stream as stream
from bytepair.io import workers
print("the caller's top level runs")
stream.FRAME_SIZE = 20_000
parallel.MIN_SHARE = 4_000
data = b"".join(b"line %d of a caller without a main guard\\n" % i for i in range(2500))
packed = bytepair.compress(data, block_size=3000, threads=2)
same = packed == bytepair.compress(data, block_size=3000) and bytepair.decompress(packed) == data
processes = workers._shared is not None and workers._shared.started > 0
print("result", same, *[kind for kind, on in (("processes", processes), ("threads", parallel._thread_pools)) if on])
"""
"""Work for one worker, done with threads=2 and compared with threads=1; it says which
workers ran. No statement spans lines, so that an interactive session takes it as it is."""

MARKER = "the caller's top level runs"


def check_caller(stdout: str, stderr: str, path: str) -> None:
    """The caller's code ran once, gave the same bytes, and (numpy path) in worker processes;
    the compiled path never starts one (its feeder threads may find every frame taken by
    the caller's thread already: the compiled encoder is quick)."""
    assert "Traceback" not in stderr, stderr
    assert (stdout + stderr).count(MARKER) == 1, "a worker ran the caller's code again"
    results = [line.split() for line in stdout.splitlines() if line.startswith("result")]
    assert len(results) == 1 and results[0][1] == "True", (stdout, stderr)
    assert ("processes" in results[0]) != compiled(path), (stdout, stderr)


def run_caller(args: list[str], path: str, tmp_path: Path, stdin: str | None = None) -> None:
    env = {**os.environ, "BYTEPAIR_KERNELS": path}
    done = subprocess.run(
        [sys.executable, *args], input=stdin, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    check_caller(done.stdout, done.stderr, path)


@pytest.fixture(params=["numpy", "compiled"])
def path(request: pytest.FixtureRequest) -> str:
    """The path a caller subprocess is given (``BYTEPAIR_KERNELS``)."""
    if request.param == "compiled" and not compiled_available():
        pytest.skip(NOT_BUILT)
    value: str = request.param
    return value


def test_a_script_without_a_main_guard(path: str, tmp_path: Path) -> None:
    script = tmp_path / "no_guard.py"
    script.write_text(CALLER)
    run_caller([str(script)], path, tmp_path)


def test_a_script_on_standard_input(path: str, tmp_path: Path) -> None:
    run_caller(["-"], path, tmp_path, stdin=CALLER)


def test_a_command_string(path: str, tmp_path: Path) -> None:
    run_caller(["-c", CALLER], path, tmp_path)


def test_an_interactive_session(path: str, tmp_path: Path) -> None:
    run_caller(["-i"], path, tmp_path, stdin=CALLER)


def test_a_checkout_imported_from_the_directory_it_then_leaves(tmp_path: Path) -> None:
    """``''`` on ``sys.path`` found bytepair in the directory left since: the worker finds it still."""
    code = f"import os, bytepair; os.chdir({str(tmp_path)!r})\n{CALLER}"
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["BYTEPAIR_KERNELS"] = "numpy"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    check_caller(done.stdout, done.stderr, "numpy")


def test_a_jupyter_notebook(path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real kernel (ipykernel, a subprocess) executes the caller as a notebook cell."""
    nbformat = pytest.importorskip("nbformat", reason="nbformat is not installed (the test extra)")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is not installed (the test extra)")
    pytest.importorskip("ipykernel", reason="ipykernel is not installed (the test extra)")
    monkeypatch.setenv("BYTEPAIR_KERNELS", path)
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(CALLER)])
    client = nbclient.NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    outputs = notebook.cells[0].outputs
    stdout = "".join(out.get("text", "") for out in outputs if out.get("name") == "stdout")
    stderr = "".join(out.get("text", "") for out in outputs if out.get("name") == "stderr")
    assert not [out for out in outputs if out.get("output_type") == "error"], outputs
    check_caller(stdout, stderr, path)


# -- the worker processes themselves -----------------------------------------------


def _facts() -> dict[str, Any]:
    main = sys.modules["__main__"]
    return {
        "pid": os.getpid(),
        "kernels": os.environ.get("BYTEPAIR_KERNELS"),
        "main_file": getattr(main, "__file__", None),
        "mp_main": "__mp_main__" in sys.modules,
        "tests_imported": "tests.conftest" in sys.modules,
    }


def _chatty(value: int) -> int:
    print("a job that prints to standard output")
    return value * 2


def _fails() -> None:
    raise ValueError("the job's own error")


def _dies_unless_in(pid: int) -> str:
    if os.getpid() != pid:
        os._exit(3)
    return "ran in the caller"


@pytest.fixture
def pool() -> Any:
    processes = workers.WorkerProcesses()
    yield processes
    processes.close()


def test_a_worker_imports_nothing_of_the_caller(pool: workers.WorkerProcesses) -> None:
    facts = pool.run(_facts)
    assert facts["pid"] != os.getpid()
    assert facts["kernels"] == "numpy", "a worker process always runs the numpy kernels"
    assert (facts["main_file"], facts["mp_main"], facts["tests_imported"]) == (None, False, False)


def test_workers_are_kept_between_jobs(pool: workers.WorkerProcesses) -> None:
    first, second = pool.run(_facts), pool.run(_facts)
    assert first["pid"] == second["pid"] and pool.started == 1


def test_a_stray_print_does_not_break_the_replies(pool: workers.WorkerProcesses) -> None:
    assert [pool.run(_chatty, n) for n in range(3)] == [0, 2, 4]


def test_a_job_error_is_raised_here_with_where_it_happened(pool: workers.WorkerProcesses) -> None:
    with pytest.raises(ValueError, match="the job's own error") as caught:
        pool.run(_fails)
    assert any("bytepair worker process" in note for note in caught.value.__notes__)
    assert pool.run(_chatty, 5) == 10, "the worker goes on after a job's error"


def test_a_worker_that_dies_costs_a_warning_not_the_job(pool: workers.WorkerProcesses) -> None:
    with pytest.warns(workers.WorkerWarning, match="exit status 3"):
        assert pool.run(_dies_unless_in, os.getpid()) == "ran in the caller"
    assert pool.run(_chatty, 1) == 2 and pool.started == 2, "a new worker replaces it"


def test_no_python_to_start_runs_every_job_here(pool: workers.WorkerProcesses, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "executable", str(Path(__file__).parent / "no-such-python"))
    with pytest.warns(workers.WorkerWarning, match="cannot start"):
        assert pool.run(_facts)["pid"] == os.getpid()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once: not again
        assert pool.run(_facts)["pid"] == os.getpid()
    assert pool.started == 0


@pytest.mark.skipif(os.name != "posix", reason="the silent program is a shell script")
def test_a_program_that_never_answers_is_given_up_on(
    pool: workers.WorkerProcesses, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """``sys.executable`` need not be a Python (frozen or embedded programs): one that reads
    its input and never answers is killed after ``START_SECONDS``, and jobs run here."""
    silent = tmp_path / "silent-program"
    silent.write_text("#!/bin/sh\nexec sleep 600\n")
    silent.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(silent))
    monkeypatch.setattr(workers, "START_SECONDS", 0.5)
    with pytest.warns(workers.WorkerWarning, match="did not start a bytepair worker"):
        assert pool.run(_facts)["pid"] == os.getpid()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_a_forked_child_starts_its_own_workers() -> None:
    parent_worker = workers.shared_workers().run(_facts)["pid"]
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe
        status = 1
        try:
            fresh = workers._shared is None
            worker = workers.shared_workers().run(_facts)["pid"]
            os.write(write_end, f"{fresh} {worker != parent_worker}".encode())
            workers.shared_workers().close()
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end) as report:
        said = report.read()
    _, status = os.waitpid(child, 0)
    assert status == 0 and said == "True True"
    assert workers.shared_workers().run(_facts)["pid"] == parent_worker, "the parent's worker is untouched"
