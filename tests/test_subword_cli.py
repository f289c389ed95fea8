"""``bytepair subword learn|apply`` and ``bytepair explain --subword``."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

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


# -- bytepair subword encode|decode ---------------------------------------------------------------------------

LINES = ["Hello world! The café's 3 dogs", "  naïve résumé\tcoöperate 😀 ½", "", "it's they're we've I'm"]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Tokenizer]]:
    """A model in each format encode and decode read: name -> (path, the model loaded by the library)."""
    folder = tmp_path_factory.mktemp("models")
    byte = learn([line + "\n" for line in LINES] * 3, 60, scheme="byte")
    word = learn(LINES * 3, 30)
    word.save(folder / "codes")
    byte.save(folder / "gpt2")
    byte.save(folder / "tokenizer.json", format="tokenizer.json")
    byte.save(folder / "model.tiktoken", format="tiktoken")
    return {
        name: (folder / name, Tokenizer.load(folder / name))
        for name in ("codes", "gpt2", "tokenizer.json", "model.tiktoken")
    }


@pytest.mark.parametrize("name", ["codes", "gpt2", "tokenizer.json", "model.tiktoken"])
def test_encode_and_decode_each_format(
    name: str,
    models: dict[str, tuple[Path, Tokenizer]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path, tok = models[name]
    text = "".join(line + "\n" for line in LINES)
    assert _run(["subword", "encode", "-m", str(path)], text, monkeypatch) == 0
    assert capsys.readouterr().out == "".join(" ".join(tok.tokenize(line)) + "\n" for line in LINES)
    if name == "codes":  # a codes file names only the characters of its merges
        extra = ["--unk-token", "<unk>"]
        tok = Tokenizer.load(path, unk_token="<unk>")
    else:
        extra = []
    assert _run(["subword", "encode", "-m", str(path), "--ids", *extra], text, monkeypatch) == 0
    ids = capsys.readouterr().out
    assert ids == "".join(" ".join(map(str, tok.encode(line))) + "\n" for line in LINES)
    assert _run(["subword", "decode", "-m", str(path), *extra], ids, monkeypatch) == 0
    expected = [tok.decode(tok.encode(line)) for line in LINES]
    assert capsys.readouterr().out == "".join(line + "\n" for line in expected)
    if name != "codes":
        assert expected == LINES  # the byte scheme gives each line back


def test_encode_files_and_line_ends(tmp_path: Path, models: dict[str, tuple[Path, Tokenizer]]) -> None:
    path, tok = models["tokenizer.json"]
    source, out = tmp_path / "in", tmp_path / "out"
    source.write_bytes(b"a b\r\nc\rd\n\nlast")
    assert main(["subword", "encode", "-m", str(path), "--ids", "-i", str(source), "-o", str(out)]) == 0
    lines = ["a b", "c\rd", "", "last"]  # lines end at \n (a \r before it goes too); a lone \r is text
    assert out.read_text(encoding="utf-8") == "".join(" ".join(map(str, tok.encode(x))) + "\n" for x in lines)


def test_format_forced(
    models: dict[str, tuple[Path, Tokenizer]], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path, tok = models["model.tiktoken"]
    renamed = tmp_path / "ranks.json"  # the content decides, not the name
    renamed.write_bytes(path.read_bytes())
    source = tmp_path / "in"
    source.write_text("hello\n", encoding="utf-8")
    assert main(["subword", "encode", "-m", str(renamed), "--ids", "-i", str(source)]) == 0
    assert main(["subword", "encode", "-m", str(renamed), "--ids", "-i", str(source), "--format", "tiktoken"]) == 0
    assert capsys.readouterr().out == (" ".join(map(str, tok.encode("hello"))) + "\n") * 2
    assert main(["subword", "encode", "-m", str(renamed), "-i", str(source), "--format", "codes"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no '#version: 0.2' line" in err


@pytest.mark.parametrize(
    ("argv", "stdin", "message"),
    [
        (["encode", "-m", "{absent}"], "x\n", "no such codes file"),
        (["encode", "-m", "{absent}.json"], "x\n", "no such tokenizer.json"),
        (["encode", "-m", "{codes}", "--ids"], "low\nzebra\n", "line 2: 'zebra': the vocabulary has no token"),
        (["decode", "-m", "{codes}"], "1 2\n3 x\n", "line 2: 'x' is not an id"),
        (["decode", "-m", "{codes}"], "99999\n", "line 1: 99999 is not an id of this vocabulary"),
        (["encode", "-m", "{codes}", "--vocab", "{absent}"], "x\n", "no such vocabulary file"),
    ],
)
def test_encode_decode_errors_are_one_line(
    argv: list[str],
    stdin: str,
    message: str,
    models: dict[str, tuple[Path, Tokenizer]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    names = {"absent": str(tmp_path / "absent"), "codes": str(models["codes"][0])}
    assert _run(["subword", *(arg.format(**names) for arg in argv)], stdin, monkeypatch) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and err.startswith(f"bytepair subword {argv[0]}: ")
    if "--ids" in argv:
        assert "--unk-token" in err


@pytest.mark.parametrize(
    "argv",
    [["encode"], ["decode", "-m"], ["encode", "-m", "x", "--format", "sentencepiece"], ["decode", "-m", "x", "--ids"]],
)
def test_encode_decode_bad_usage(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["subword", *argv])
    assert stop.value.code == 2


class _Lines(io.RawIOBase):
    """Standard input that hands over one line per read, counting the lines handed over."""

    def __init__(self, lines: list[bytes]) -> None:
        self.lines = list(lines)
        self.given = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        if self.given == len(self.lines):
            return 0
        line = self.lines[self.given]
        self.given += 1
        buffer[: len(line)] = line
        return len(line)


def test_encode_writes_each_line_before_reading_the_rest(
    models: dict[str, tuple[Path, Tokenizer]], monkeypatch: pytest.MonkeyPatch
) -> None:
    source = _Lines([b"hello world\n"] * 50)
    stdin = io.TextIOWrapper(io.BufferedReader(source), encoding="utf-8")
    seen: list[int] = []

    class Out(io.StringIO):
        def write(self, text: str) -> int:
            seen.append(source.given)
            return super().write(text)

    out = Out()
    monkeypatch.setattr(sys, "stdin", stdin)
    monkeypatch.setattr(sys, "stdout", out)
    assert main(["subword", "encode", "-m", str(models["gpt2"][0])]) == 0
    assert seen[:3] == [1, 2, 3] and len(out.getvalue().splitlines()) == 50
