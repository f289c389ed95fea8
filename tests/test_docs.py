"""Every example in README.md and docs/*.md runs, and shows what it prints.

The conventions (docs/README.md states them for writers):

* A fenced block opened with ```` ```python ```` runs. The Python blocks of one
  Markdown file run in order in one namespace, as a doctest file's examples do,
  in a fresh temporary directory that is also the file's console blocks'
  directory. A block written as a ``>>>`` session runs through ``doctest`` and
  its output must match (``...`` matches anything: ELLIPSIS is on).
* A fenced block opened with ```` ```console ```` runs each line that starts
  with ``$ `` in bash, in that directory, with ``bytepair`` meaning this
  checkout's ``python3 -m bytepair``. The lines after a command, up to the
  next ``$ ``, are its expected standard output and error, compared as doctest
  compares (``...`` matches anything, runs of blanks are one). With none shown
  the command must only exit 0; a last line ``[exit N]`` expects status N. A
  command continues onto the next line after a trailing backslash.
* ```` ```python no-run ```` and ```` ```console no-run ```` are shown, never
  run: for what cannot run here (an hour of fuzzing, a network). Use sparingly.
* ```` ```python requires=zarr,pandas ```` (or ``console``) runs only where
  those modules import; elsewhere the rest of that file is skipped, since later
  blocks may build on the skipped one.
* ```` ```text ```` holds what is not code (a grammar, a formula, a layout) and
  is never run. Every other fence (```` ```sh ````, a bare ```` ``` ````) is an
  error: a command is shown as ``console`` (and runs) or marked ``no-run``.
"""

from __future__ import annotations

import dataclasses
import doctest
import importlib.util
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers import REPO

TIMEOUT = 120
DOCS = sorted([REPO / "README.md", *(REPO / "docs").glob("**/*.md")])
FENCE = re.compile(r"^([ \t]*)```(\S*)[ \t]*(.*)$")  # indented too, as inside a list item
CHECKER = doctest.OutputChecker()
OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


@dataclasses.dataclass
class Block:
    lang: str
    flags: list[str]
    text: str
    line: int  # of the opening fence, 1-based

    @property
    def runs(self) -> bool:
        return self.lang in ("python", "console") and "no-run" not in self.flags

    @property
    def requires(self) -> list[str]:
        return [m for f in self.flags if f.startswith("requires=") for m in f[len("requires=") :].split(",") if m]


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file, in order."""
    found: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opened = FENCE.match(lines[i])
        if not opened:
            i += 1
            continue
        start = i
        indent = opened.group(1)
        i += 1
        body = []
        while i < len(lines) and not lines[i].lstrip().startswith("```"):
            body.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i].lstrip())
            i += 1
        if i == len(lines):
            raise AssertionError(f"{path.name}:{start + 1}: code block never closed")
        found.append(Block(opened.group(2), opened.group(3).split(), "\n".join(body) + "\n", start + 1))
        i += 1
    return found


def run_python(block: Block, where: str, namespace: dict[str, object]) -> None:
    if block.text.lstrip().startswith(">>>"):
        test = doctest.DocTestParser().get_doctest(block.text, namespace, where, where, block.line)
        runner = doctest.DocTestRunner(optionflags=OPTIONS)
        out: list[str] = []
        runner.run(test, out=out.append, clear_globs=False)
        assert not runner.failures, f"{where}:\n" + "".join(out)
        return
    code = compile(textwrap.dedent(block.text), where, "exec")
    exec(code, namespace)


@dataclasses.dataclass
class Command:
    text: str
    line: int
    want: str
    status: int


def commands(block: Block) -> list[Command]:
    """The ``$ `` lines of a console block, each with the output and status shown after it."""
    found: list[Command] = []
    lines = block.text.splitlines()
    i = 0
    while i < len(lines):
        if not lines[i].startswith("$ "):
            raise AssertionError(f"line {block.line + 1 + i}: output before any '$ ' command: {lines[i]!r}")
        line = block.line + 1 + i
        text = lines[i][2:]
        while text.endswith("\\") and i + 1 < len(lines):
            i += 1
            text = text[:-1] + " " + lines[i].strip()
        i += 1
        want = []
        while i < len(lines) and not lines[i].startswith("$ "):
            want.append(lines[i])
            i += 1
        while want and not want[-1].strip():
            want.pop()
        status = 0
        if want and re.fullmatch(r"\[exit \d+\]", want[-1].strip()):
            status = int(want.pop().strip()[6:-1])
        found.append(Command(text, line, "\n".join(want) + "\n" if want else "", status))
    return found


def shim(folder: Path) -> dict[str, str]:
    """An environment where ``bytepair`` is this checkout's command."""
    bin_dir = folder / ".bin"
    bin_dir.mkdir()
    script = bin_dir / "bytepair"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m bytepair "$@"\n')
    script.chmod(0o755)
    env = dict(os.environ)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.pop("COLUMNS", None)
    return env


def run_console(block: Block, where: str, cwd: Path, env: dict[str, str]) -> None:
    for cmd in commands(block):
        proc = subprocess.run(
            ["bash", "-c", cmd.text], cwd=cwd, env=env, capture_output=True, timeout=TIMEOUT, text=True
        )
        got = proc.stdout + proc.stderr
        at = f"{where.rsplit(':', 1)[0]}:{cmd.line}: $ {cmd.text}"
        assert proc.returncode == cmd.status, f"{at}\nexit {proc.returncode}, expected {cmd.status}\n{got}"
        if cmd.want:
            assert CHECKER.check_output(cmd.want, got, OPTIONS), f"{at}\nexpected:\n{cmd.want}\ngot:\n{got}"


@pytest.mark.parametrize("path", DOCS, ids=[str(p.relative_to(REPO)) for p in DOCS])
def test_every_block_runs_or_says_why(path: Path) -> None:
    """Code is ``python`` or ``console`` (run), or marked ``no-run``; ``text`` is for what is not code."""
    unmarked = [
        f"{path.name}:{b.line}: ```{b.lang}"
        for b in blocks(path)
        if b.lang not in ("python", "console", "text") and "no-run" not in b.flags
    ]
    assert not unmarked, "blocks that neither run nor say why (use console, python, text or no-run):\n" + "\n".join(
        unmarked
    )


def test_readme_is_a_front_door() -> None:
    """Short enough to read in five minutes, and it starts a newcomer with the two commands."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) < 250
    assert 'python3 -m pip install -e ".[test]" && python3 benchmarks/roundtrip.py --runs 1 --no-per-file' in text
    assert "$ python3 -m pytest" in text
    assert "## Differences from `lzma`" in text


def test_there_are_docs_to_check() -> None:
    assert REPO / "README.md" in DOCS
    assert any(b.runs for b in blocks(REPO / "README.md"))


@pytest.mark.parametrize("path", DOCS, ids=[str(p.relative_to(REPO)) for p in DOCS])
def test_examples_run(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every runnable block of *path*, in order, in one directory and (for Python) one namespace."""
    runnable = [b for b in blocks(path) if b.runs]
    if not runnable:
        return  # nothing to run (the fences were checked above)
    monkeypatch.chdir(tmp_path)
    env = shim(tmp_path)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for block in runnable:
        missing = [m for m in block.requires if importlib.util.find_spec(m) is None]
        if missing:
            pytest.skip(f"{path.name}:{block.line} and after need {', '.join(missing)}")
        where = f"{path.relative_to(REPO)}:{block.line}"
        if block.lang == "python":
            run_python(block, where, namespace)
        else:
            run_console(block, where, tmp_path, env)


# -- the checker itself ---------------------------------------------------------------------------


def test_blocks_and_commands_are_parsed_as_documented(tmp_path: Path) -> None:
    doc = tmp_path / "x.md"
    doc.write_text(
        "text\n```python\nx = 1\n```\n```python no-run\nboom\n```\n```sh\nrm -rf /\n```\n"
        "```console requires=numpy\n$ echo a \\\n  b\na b\n$ false\n[exit 1]\n$ true\n```\n"
        "* a list item:\n\n  ```python\n  y = 2\n  ```\n"
    )
    found = blocks(doc)
    assert [(b.lang, b.runs, b.line) for b in found] == [
        ("python", True, 2),
        ("python", False, 5),
        ("sh", False, 8),
        ("console", True, 11),
        ("python", True, 21),
    ]
    assert found[4].text == "y = 2\n"
    assert found[3].requires == ["numpy"]
    assert commands(found[3]) == [
        Command("echo a  b", 12, "a b\n", 0),
        Command("false", 15, "", 1),
        Command("true", 17, "", 0),
    ]


def test_a_wrong_example_fails(tmp_path: Path) -> None:
    env = shim(tmp_path)
    block = Block("console", [], "$ echo 41\n42\n", 1)
    with pytest.raises(AssertionError, match="expected"):
        run_console(block, "x.md:1", tmp_path, env)
    with pytest.raises(AssertionError, match="exit 1, expected 0"):
        run_console(Block("console", [], "$ bytepair -d missing.bp\n", 1), "x.md:1", tmp_path, env)
    with pytest.raises(AssertionError, match="Failed example"):
        run_python(Block("python", [], ">>> 1 + 1\n3\n", 1), "x.md:1", {})
    with pytest.raises(NameError):
        run_python(Block("python", [], "undefined_name\n", 1), "x.md:1", {})
