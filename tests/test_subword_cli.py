"""``bytepair subword learn|apply`` and ``bytepair explain --subword``."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bytepair.cli.main import main
from bytepair.subword import Tokenizer, learn
from bytepair.subword.cli import explain_text
from tests.subword_reference import english

TEXT = "low lower lowest\nnewer wider\nlow lower lowest newer wider\n"


def _run(argv: list[str], stdin: str = "", monkeypatch: pytest.MonkeyPatch | None = None) -> int:
    assert monkeypatch is not None
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin.encode("utf-8")), encoding="utf-8"))
    return main(argv)


def test_learn_from_stdin_to_stdout(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["subword", "learn", "-s", "10"], TEXT, monkeypatch) == 0
    out, err = capsys.readouterr()
    expected = learn(TEXT.split("\n"), 10).merges
    assert out == "#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in expected) and err == ""


def test_learn_files_then_apply(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    one, two = tmp_path / "one.txt", tmp_path / "two.txt"
    one.write_text("low lower lowest\n", encoding="utf-8")
    two.write_text("newer wider\nlow lower lowest newer wider\n", encoding="utf-8")
    codes, out = tmp_path / "codes", tmp_path / "out"
    assert main(["subword", "learn", "-s", "10", "-i", str(one), str(two), "-o", str(codes)]) == 0
    assert Tokenizer.load(codes).merges == learn(TEXT.split("\n"), 10).merges
    source = tmp_path / "in"
    source.write_text("lowest  newer\r\n  wider\n", encoding="utf-8", newline="")
    assert main(["subword", "apply", "-c", str(codes), "-i", str(source), "-o", str(out)]) == 0
    tok = Tokenizer.load(codes)
    assert out.read_bytes().decode("utf-8") == tok.apply("lowest  newer\r\n") + tok.apply("  wider\n")


def test_byte_scheme_needs_an_output_directory(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["subword", "learn", "-s", "5", "--scheme", "byte", "-i", str(tmp_path)])
    assert stop.value.code == 2
    source = tmp_path / "in.txt"
    source.write_text("hello hello world\n", encoding="utf-8")
    assert main(["subword", "learn", "-s", "5", "--scheme", "byte", "-i", str(source), "-o", str(tmp_path / "m")]) == 0
    assert Tokenizer.load(tmp_path / "m").scheme == "byte"


@pytest.mark.parametrize(
    ("codes", "message"),
    [
        (None, "no such codes file"),
        ("#version: 0.2\na b\nc d e\n", ":3: 'c d e' is not a merge"),
    ],
)
def test_apply_errors_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], codes: str | None, message: str
) -> None:
    path = tmp_path / "codes"
    if codes is not None:
        path.write_text(codes, encoding="utf-8")
    assert main(["subword", "apply", "-c", str(path), "-i", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and message in err and err.startswith("bytepair subword apply: ")


def test_learn_missing_input_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["subword", "learn", "-s", "5", "-i", str(tmp_path / "absent")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "No such file" in err


def test_explain_shows_counts_ties_rule_and_words(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "--subword", "low lower lowest newer wider", "--merges", "10"]) == 0
    out = capsys.readouterr().out
    assert out == explain_text("low lower lowest newer wider", 10)
    lines = out.split("\n")
    assert lines[1] == "merge 1: w + e -> we   count 3"
    assert lines[2] == "  tied at 3: (l, o), (e, r</w>)"
    assert "lexicographically greater pair" in lines[3]
    assert lines[4] == "  words: l o w</w> | l o we r</w> | l o we s t</w> | n e we r</w> | w i d e r</w>"
    assert "disagrees" not in out and "stopped after 3 merges" in out


def test_explain_follows_the_engine_on_longer_text() -> None:
    text = english("calgary/paper4")
    out = explain_text(text[:3000], 40)
    assert "disagrees" not in out
    assert [line.split(":")[1].split("->")[0].strip() for line in out.split("\n") if line.startswith("merge ")] == [
        f"{a} + {b}" for a, b in learn([text[:3000]], 40).merges
    ]


def test_same_codes_as_the_subword_nmt_command(tmp_path: Path) -> None:
    command = shutil.which("subword-nmt")
    if command is None:
        pytest.skip("the subword-nmt command is a test extra")
    source = tmp_path / "in.txt"
    source.write_text(english("calgary/paper1"), encoding="utf-8")
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    subprocess.run(
        [command, "learn-bpe", "-s", "500", "-i", str(source), "-o", str(theirs)], check=True, capture_output=True
    )
    assert main(["subword", "learn", "-s", "500", "-i", str(source), "-o", str(ours)]) == 0
    assert ours.read_text(encoding="utf-8") == theirs.read_text(encoding="utf-8")
    applied_theirs, applied_ours = tmp_path / "a-theirs", tmp_path / "a-ours"
    subprocess.run(
        [command, "apply-bpe", "-c", str(theirs), "-i", str(source), "-o", str(applied_theirs)],
        check=True,
        capture_output=True,
    )
    assert main(["subword", "apply", "-c", str(ours), "-i", str(source), "-o", str(applied_ours)]) == 0
    assert applied_ours.read_bytes() == applied_theirs.read_bytes()


def test_learn_draws_its_progress_on_a_terminal_only(tmp_path: Path) -> None:
    """A terminal on standard error gets the redrawn ``learn: merge i/N`` line, erased at the end;
    a pipe gets nothing."""
    from tests.test_cli import run_on_pty

    (tmp_path / "in.txt").write_text("low lower lowest newer wider " * 200)
    args = ["subword", "learn", "-s", "5", "-i", "in.txt", "-o", "codes"]
    status, shown, _ = run_on_pty(args, tmp_path, "stderr")
    assert status == 0
    assert b"\rlearn: merge " in shown and b"/5 (count " in shown
    assert shown.endswith(b"\r\x1b[K")
    piped = subprocess.run([sys.executable, "-m", "bytepair", *args], cwd=tmp_path, capture_output=True, timeout=60)
    assert (piped.returncode, piped.stderr) == (0, b"")
    assert (tmp_path / "codes").read_text().startswith("#version: 0.2\n")
