"""``bytepair explain``: the steps it reports are the compressor's own, and they are right.

The worked examples come from Gage's notes (../shared/GAGE.md). Pair counts and
replacements are recomputed here from scratch, independently of the engine, and
real blocks are checked against what ``bytepair.compress`` writes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import bytepair
from bytepair.cli.explain import SHORT_BLOCK, Explanation, Merge, Step, explain, format_text, main, to_json_dict
from bytepair.container.format import (
    FRAME_HEADER_SIZE,
    KIND_FRAME,
    STREAM_HEADER_SIZE,
    unpack_frame_body,
    unpack_frame_header,
)
from bytepair.core.engine import encode_blocks
from tests.helpers import REPO, corpus_files, framed

PARAGRAPH = (
    b"Alice was beginning to get very tired of sitting by her sister on the bank, and of having nothing to do: "
    b"once or twice she had peeped into the book her sister was reading, but it had no pictures or "
    b"conversations in it, 'and what is the use of a book,' thought Alice 'without pictures or conversations?'\n"
    b"So she was considering in her own mind (as well as she could, for the hot day made her feel very sleepy "
    b"and stupid), whether the pleasure of making a daisy-chain would be worth the trouble of getting up and "
    b"picking the daisies, when suddenly a White Rabbit with pink eyes ran close by her.\n"
    b"There was nothing so very remarkable in that; nor did Alice think it so very much out of the way to hear "
    b"the Rabbit say to itself, 'Oh dear! Oh dear! I shall be late!' (when she thought it over afterwards, it "
    b"occurred to her that she ought to have wondered at this, but at the time it all seemed quite natural); "
    b"but when the Rabbit actually took a watch out of its waistcoat-pocket, and looked at it, and then hurried "
    b"on, Alice started to her feet, for it flashed across her mind that she had never before seen a rabbit "
    b"with either a waistcoat-pocket, or a watch to take out of it, and burning with curiosity, she ran across "
    b"the field after it, and fortunately was just in time to see it pop down a large rabbit-hole under the hedge.\n"
)


# -- independent reference: Gage's counting and replacement, written plainly -------


def pair_counts(seq: bytes) -> Counter[tuple[int, int]]:
    """Every adjacent pair, overlapping ones included (``aaa`` holds (a, a) twice)."""
    a = np.frombuffer(seq, dtype=np.uint8).astype(np.int64)
    cells = np.bincount(a[:-1] * 256 + a[1:], minlength=65536) if len(a) > 1 else np.zeros(65536, dtype=np.int64)
    return Counter({(int(c) >> 8, int(c) & 255): int(cells[c]) for c in np.flatnonzero(cells)})


def replace_pair(seq: bytes, left: int, right: int, code: int) -> bytes:
    """One left-to-right, greedy, non-overlapping pass (``aaaa`` becomes ``XX``): what bytes.replace does."""
    return seq.replace(bytes([left, right]), bytes([code]))


def check_steps_against_reference(e: Explanation) -> None:
    """Before every step, the merged pair has the reported count, and the maximal count
    if it is the first merge of its engine pass (no other of a pass can overlap it: its
    left symbol is none of theirs and no right one of theirs, its right symbol no left one,
    and neither is a code they made); after it, the sequence is exactly the reference
    replacement."""
    seq = e.changed  # the block as the engine sees it, escapes applied
    assert e.steps, "nothing to check"
    in_pass: list[Step] = []
    for s in e.steps:
        counts = pair_counts(seq)
        assert counts[(s.left, s.right)] == s.count, f"step {s.step}: count"
        if not in_pass or in_pass[0].engine_step != s.engine_step:
            in_pass = []
            assert s.count == max(counts.values()), f"step {s.step}: not the most frequent pair"
        for other in in_pass:
            assert s.left not in {other.left, other.right, other.code}, f"step {s.step}: can overlap"
            assert s.right not in {other.left, other.code}, f"step {s.step}: can overlap"
        in_pass.append(s)
        assert len(in_pass) <= e.params.merges_per_step
        assert s.count >= e.threshold + (0 if s.fresh else 1)
        after = replace_pair(seq, s.left, s.right, s.code)
        assert s.replaced == len(seq) - len(after)
        assert s.length_after == len(after)
        if s.sequence_after is not None:
            assert s.sequence_after == after, f"step {s.step}: sequence"
        seq = after
    assert seq == e.payload
    # the engine stopped for a reason: no pair frequent enough, or no code left for it
    top = max(pair_counts(seq).values(), default=0)
    n_fresh = sum(s.fresh for s in e.steps)
    if n_fresh < 256 - len(set(e.changed)):
        assert top < e.threshold
    else:
        recyclable = len(set(seq)) < 256 and len(e.steps) - n_fresh < 255
        assert top <= e.threshold or not (recyclable and e.params.recycle)


def expand(payload: bytes, table: tuple[Merge, ...]) -> bytes:
    """Undo the merges, last first (a code's byte value never occurs before its merge)."""
    seq = payload
    for m in reversed(table):
        seq = seq.replace(bytes([m.code]), bytes([m.left, m.right]))
    return seq


def container_blocks(data: bytes, **params: int) -> tuple[int, list[dict[str, object]]]:
    """Compress with ``bytepair.compress`` and read back the first frame's blocks."""
    packed = framed(bytepair.compress(data, **params))  # one block is written compact: as its frame
    at = STREAM_HEADER_SIZE
    assert packed[at] == KIND_FRAME
    header = unpack_frame_header(packed, at, 0)
    body = packed[at + FRAME_HEADER_SIZE : at + FRAME_HEADER_SIZE + header.body_size]
    t = unpack_frame_body(header, body, 0, 0)
    first_merge = np.cumsum(t.n_merges) - t.n_merges
    first_byte = np.cumsum(t.payload_len) - t.payload_len
    esc = t.escapes
    first_escaped = np.zeros(len(t.orig_len), dtype=np.int64) if esc is None else np.cumsum(esc.count) - esc.count
    blocks = []
    for b in range(len(t.orig_len)):
        m = slice(int(first_merge[b]), int(first_merge[b] + t.n_merges[b]))
        p = slice(int(first_byte[b]), int(first_byte[b] + t.payload_len[b]))
        blocks.append(
            {
                "orig_len": int(t.orig_len[b]),
                "merges": list(zip(t.code[m].tolist(), t.left[m].tolist(), t.right[m].tolist(), strict=True)),
                "payload": t.payload[p].tobytes(),
                "escape_mark": None if esc is None or not esc.count[b] else int(esc.mark[b]),
                "escaped": b""
                if esc is None
                else esc.literals[first_escaped[b] : first_escaped[b] + esc.count[b]].tobytes(),
            }
        )
    return header.body_size, blocks


def shown(e: Explanation, letters: bool = True) -> list[tuple[str, int]]:
    return [(s["shown"]["pair"], s["count"]) for s in to_json_dict(e, letters=letters)["steps"]]


# -- the worked examples -------------------------------------------------------------


def test_ababcabcd_letters() -> None:
    e = explain(b"ABABCABCD", threshold=2)
    assert shown(e) == [("AB", 3), ("ZC", 2)]
    assert [s.length_after for s in e.steps] == [6, 4]
    assert len(e.payload) == 4
    view = to_json_dict(e, letters=True)
    assert [s["shown"]["sequence_after"] for s in view["steps"]] == ["ZZCZCD", "ZYYD"]
    assert view["shown"]["payload"] == "ZYYD"
    assert [t["shown"]["expansion"] for t in view["table"]] == ["AB", "ABC"]
    check_steps_against_reference(e)


def test_ababcabcd_gage_threshold_stops_after_one_merge() -> None:
    e = explain(b"ABABCABCD", threshold=3)
    assert shown(e) == [("AB", 3)]
    assert e.payload == bytes([255, 255]) + b"C" + bytes([255]) + b"CD"


def test_aaabdaaabac_counts_overlaps_and_always_takes_the_most_frequent_pair() -> None:
    e = explain(b"aaabdaaabac", threshold=2)
    first = e.steps[0]
    assert (first.left, first.right, first.count) == (ord("a"), ord("a"), 4)
    assert first.replaced == 2  # "aaa" -> "Za": the overlap is counted, not replaced twice
    assert len(e.steps) == 3
    assert e.steps[-1].length_after == len(e.payload) == 5
    check_steps_against_reference(e)
    # one of the two tie-breaks Gage's notes list: ab -> Y, then ZY -> X
    assert shown(e) == [("aa", 4), ("ab", 2), ("ZY", 2)]
    assert to_json_dict(e, letters=True)["shown"]["payload"] == "XdXac"


def test_paragraph_steps_follow_gage_rules() -> None:
    e = explain(PARAGRAPH, threshold=2, keep_sequences=True)
    assert len(e.steps) > 20
    check_steps_against_reference(e)
    assert expand(e.payload, e.table) == PARAGRAPH


def test_sequences_kept_only_for_short_blocks_by_default() -> None:
    assert all(s.sequence_after is not None for s in explain(b"ab" * (SHORT_BLOCK // 2)).steps)
    long_steps = explain(b"ab" * (SHORT_BLOCK // 2 + 1)).steps
    assert long_steps and all(s.sequence_after is None for s in long_steps)
    assert [s.length_after for s in long_steps] == [41, 21, 11, 6, 4]


def test_no_merge() -> None:
    e = explain(b"abcdef", escape_limit=0)
    assert e.steps == () and e.table == () and e.payload == b"abcdef"
    assert e.stored and e.compressed_size == 9 + 6
    assert "nothing to merge" in format_text(e)


# -- the explanation is what the compressor writes ----------------------------------------


def assert_matches_engine_and_container(data: bytes, explanations: list[Explanation], **params: int) -> None:
    body_size, blocks = container_blocks(data, **params)
    assert len(blocks) == len(explanations) == explanations[0].n_blocks
    for e, stored in zip(explanations, blocks, strict=True):
        # the engine, run directly on the same block
        arr = np.frombuffer(e.changed, dtype=np.uint8)
        enc = encode_blocks(
            arr,
            np.array([0, len(arr)]),
            threshold=e.threshold,
            recycle=e.params.recycle,
            merges_per_step=e.params.merges_per_step,
        )
        assert [(s.code, s.left, s.right, s.count, s.fresh) for s in e.steps] == [
            (m.code, m.left, m.right, m.count, m.fresh) for m in e.table
        ]
        assert [m.code for m in e.table] == enc.code.tolist()
        assert [m.left for m in e.table] == enc.left.tolist()
        assert [m.right for m in e.table] == enc.right.tolist()
        assert [m.count for m in e.table] == enc.count.tolist()
        assert [len(m.expansion) for m in e.table] == enc.expansion.tolist()
        assert sum(m.fresh for m in e.table) == int(enc.n_fresh[0])
        assert e.payload == enc.payload.tobytes()
        assert expand(e.payload, e.table) == e.changed
        # the container's pair table and payload for that block (a stored block
        # here has no stored neighbour to be merged with)
        assert stored["orig_len"] == len(e.original)
        if e.stored:
            assert stored["merges"] == [] and stored["payload"] == e.original and stored["escape_mark"] is None
            continue
        assert stored["merges"] == [(m.code, m.left, m.right) for m in e.table]
        assert stored["payload"] == e.payload
        assert (stored["escape_mark"], stored["escaped"]) == (e.escape_mark, e.escaped)
    # and the sizes it reports add up to the frame's body
    assert sum(e.compressed_size for e in explanations) == body_size


def test_paragraph_matches_compressor() -> None:
    e = explain(PARAGRAPH)
    assert e.n_blocks == 1 and e.original == PARAGRAPH and e.block_start == 0
    assert_matches_engine_and_container(PARAGRAPH, [e])


def test_paragraph_in_small_blocks_matches_compressor() -> None:
    first = explain(PARAGRAPH, block_size=300, threshold=2)
    explanations = [explain(PARAGRAPH, block_size=300, threshold=2, block=b) for b in range(first.n_blocks)]
    assert [e.block_start for e in explanations] == list(range(0, len(PARAGRAPH), 300))
    assert b"".join(e.original for e in explanations) == PARAGRAPH
    assert [e.stored for e in explanations] == [False] * 4 + [True]  # 127 bytes would take 128
    assert_matches_engine_and_container(PARAGRAPH, explanations, block_size=300, threshold=2)


def test_alice_matches_compressor() -> None:
    (path,) = [p for p in corpus_files("canterbury") if p.name == "alice29.txt"]
    data = path.read_bytes()
    first = explain(data, level=5)
    explanations = [first] + [explain(data, level=5, block=b) for b in range(1, first.n_blocks)]
    assert first.n_blocks > 1
    assert any(not m.fresh for e in explanations for m in e.table), "expected recycled codes in real text"
    escaping = [e for e in explanations if e.escape_mark is not None]
    assert escaping, "expected escapes of rare bytes in real text"
    assert "escapes: " in format_text(escaping[0]) and f"+ {escaping[0].escape_size} escapes +" in format_text(
        escaping[0]
    )
    assert_matches_engine_and_container(data, explanations, level=5)
    check_steps_against_reference(explain(data, level=5, keep_sequences=True))


def test_recycled_codes_read_as_literals_before_and_codes_after() -> None:
    others = bytes(v for v in range(256) if v not in b"ab")[:253]
    data = b"ab" * 300 + others  # 255 distinct values: one fresh code only (if none is escaped)
    e = explain(data, threshold=3, max_distinct=255, escape_limit=0, keep_sequences=True)
    assert e.n_blocks == 1
    assert e.steps[0].fresh and (e.steps[0].left, e.steps[0].right, e.steps[0].code) == (97, 98, 255)
    assert not e.steps[1].fresh and e.steps[1].code == ord("b")  # the highest value that no longer occurs
    check_steps_against_reference(e)
    assert expand(e.payload, e.table) == data
    text = format_text(e)
    assert "* a recycled code" in text and "recycled" in text
    # "b" reads as a literal until the step that recycles it, as a code after
    view = to_json_dict(e)["steps"]
    assert view[0]["shown"]["pair"] == "ab"
    assert (view[1]["shown"]["pair"], view[1]["shown"]["code"]) == ("<255><255>", "<98>")
    assert view[1]["shown"]["sequence_after"].startswith("<98>" * 150 + "\\x00\\x01")
    assert (view[2]["shown"]["pair"], view[2]["shown"]["code"]) == ("<98><98>", "<255>")  # 255 recycled too
    assert [m.expansion for m in e.table[:3]] == [b"ab", b"abab", b"abababab"]


# -- views: letters, JSON, text ----------------------------------------------------------


def test_letters_skip_capitals_the_input_uses() -> None:
    e = explain(b"XYZXYZXYZ", threshold=2)
    view = to_json_dict(e, letters=True)
    assert [s["shown"]["code"] for s in view["steps"]] == ["W", "V", "U"]
    assert [s["shown"]["pair"] for s in view["steps"]] == ["XY", "WZ", "VV"]
    assert view["shown"]["payload"] == "UV"


def test_letters_fall_back_to_byte_values_when_they_run_out() -> None:
    capitals = b"ABCDEFGHIJKLMNOPQRSTUVWXY"  # leaves only Z
    e = explain(capitals + b"abab" + b"cdcd", threshold=2)
    assert [s["shown"]["code"] for s in to_json_dict(e, letters=True)["steps"]] == ["Z", "<254>"]
    assert "after the letters run out, <byte value>" in format_text(e, letters=True)


def test_text_view() -> None:
    text = format_text(explain(b"ABABCABCD", threshold=2), letters=True)
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("step"))
    assert lines[header].split() == [
        "step",
        "pass",
        "pair",
        "count",
        "replaced",
        "code",
        "length",
        "sequence",
        "after",
        "the",
        "step",
    ]
    assert lines[header + 1].split() == ["1", "1", '"AB"', "3", "3", "Z", "6", '"ZZCZCD"']
    assert lines[header + 2].split() == ["2", "2", '"ZC"', "2", "2", "Y", "4", '"ZYYD"']
    # aligned: every column starts at the same place on each row
    for column in ("pass", "pair", "count", "code", "length"):
        end = lines[header].index(column) + len(column)
        if column in ("pass", "count", "length"):  # right-aligned numbers end together
            assert lines[header + 1][end - 1] != " " and lines[header + 2][end - 1] != " "
        else:
            start = lines[header].index(column)
            assert lines[header + 1][start - 1] == " " and lines[header + 1][start] != " "
    assert 'result: 9 bytes -> 4 symbols: "ZYYD"' in text
    assert "compressed size: 18 bytes, stored as is" in text
    assert not any(line != line.rstrip() for line in lines)


def test_text_view_escapes_bytes() -> None:
    e = explain(b'\x00\x01\x00\x01\x00\x01\\"\\"\\"\n\n\n', threshold=2)
    text = format_text(e)
    assert '"\\x00\\x01"' in text and '"\\\\\\""' in text
    assert '"<255><255>"' in text or '"<254><254>"' in text
    assert all(32 <= ord(c) < 127 for c in text.replace("\n", ""))


def test_json_matches_typed_result(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ABABCABCD", "--threshold", "2", "--json", "--letters"]) == 0
    data = json.loads(capsys.readouterr().out)
    e = explain(b"ABABCABCD", threshold=2)

    def step(d: dict[str, object]) -> Step:
        fields = {k: v for k, v in d.items() if k != "shown"}
        seq = fields["sequence_after"]
        fields["sequence_after"] = None if seq is None else bytes.fromhex(str(seq))
        return Step(**fields)  # type: ignore[arg-type]

    def merge(d: dict[str, object]) -> Merge:
        fields = {k: v for k, v in d.items() if k != "shown"}
        fields["expansion"] = bytes.fromhex(str(fields["expansion"]))
        return Merge(**fields)  # type: ignore[arg-type]

    assert tuple(step(s) for s in data["steps"]) == e.steps
    assert tuple(merge(m) for m in data["table"]) == e.table
    assert bytes.fromhex(data["original"]) == e.original == b"ABABCABCD"
    assert bytes.fromhex(data["payload"]) == e.payload
    assert data["params"]["threshold"] == 2 and data["level"] == e.level
    for key in ("block", "n_blocks", "block_start", "table_size", "encoded_size", "compressed_size", "stored"):
        assert data[key] == getattr(e, key), key
    assert [s["shown"]["pair"] for s in data["steps"]] == ["AB", "ZC"]
    assert data["shown"]["payload"] == "ZYYD"


# -- command line ------------------------------------------------------------------------


def test_block_option(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ABABCABCD", "--block-size", "4", "--block", "1", "--threshold", "2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["block"], data["n_blocks"], data["block_start"]) == (1, 3, 4)
    assert bytes.fromhex(data["original"]) == b"CABC"
    assert main(["ABABCABCD", "--block-size", "4", "--block", "2"]) == 0
    assert "block 2 of 3: bytes 8..8 of the input (1 byte)" in capsys.readouterr().out


def test_file_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "in.bin"
    path.write_bytes(b"aaabdaaabac")
    assert main(["--file", str(path), "--threshold", "2"]) == 0
    out = capsys.readouterr().out
    assert '"aa"' in out and "<253>" in out and "11 bytes -> 5 symbols" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["abc", "--block", "1"], "block 1 is out of range: the input has 1 block (0..0)"),
        (["abc", "--block", "-1"], "block -1 is out of range"),
        ([""], "the input is empty"),
        (["--file", "/nonexistent/bytepair-explain-input"], "cannot read /nonexistent/bytepair-explain-input"),
    ],
)
def test_errors_are_one_line_exit_1(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and message in captured.err
    assert captured.err.startswith("bytepair explain: ")


@pytest.mark.parametrize(
    "argv",
    [[], ["abc", "--file", "x"], ["abc", "--block", "x"], ["abc", "--threshold", "1"], ["abc", "--level", "0"]],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert "usage: bytepair explain" in capsys.readouterr().err


def test_python_dash_m() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "bytepair.cli.explain", "ABABCABCD", "--threshold", "2"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert '"AB"' in run.stdout and '"<255>C"' in run.stdout
    assert 'result: 9 bytes -> 4 symbols: "<255><254><254>D"' in run.stdout
    help_run = subprocess.run(
        [sys.executable, "-m", "bytepair.cli.explain", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert help_run.returncode == 0 and "fall back to <byte value>" in " ".join(help_run.stdout.split())


def test_text_view_shows_which_merges_one_pass_made() -> None:
    e = explain(b"ab.cd;" * 50, threshold=2)
    assert [s.engine_step for s in e.steps[:2]] == [1, 1], "'.c' and 'ab' share no symbol: one pass"
    lines = format_text(e).splitlines()
    header = next(line for line in lines if line.startswith("step"))
    assert header.split()[:3] == ["step", "pass", "pair"]
    rows = [line.split() for line in lines[lines.index(header) + 1 :][: len(e.steps)]]
    assert [int(row[1]) for row in rows] == [s.engine_step for s in e.steps]
    assert any(line.startswith("pass: ") for line in lines)
