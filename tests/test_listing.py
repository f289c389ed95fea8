"""container.listing.list_frames: where each frame lies, from headers alone."""

from __future__ import annotations

import io
import itertools

import pytest

import bytepair
from bytepair.container.codec import decode_frame
from bytepair.container.format import FRAME_HEADER_SIZE, STREAM_HEADER_SIZE, unpack_frame_header
from bytepair.container.listing import list_frames, list_streams
from tests.helpers import frame_size


def _two_streams() -> tuple[bytes, bytes]:
    first = b"".join(b"line %d of the first stream\n" % i for i in range(400))
    second = bytes(range(256)) * 40
    with frame_size(3000):
        return bytepair.compress(first) + bytepair.compress(second, level=1), first + second


def test_frames_cover_the_file_and_its_content() -> None:
    blob, content = _two_streams()
    frames = list_frames(io.BytesIO(blob))
    listing = list_streams(io.BytesIO(blob))
    assert len(frames) == listing.frames
    assert sum(f.original_size for f in frames) == len(content)
    assert frames[0].offset == STREAM_HEADER_SIZE
    for before, after in itertools.pairwise(frames):
        assert after.original_offset == before.original_offset + before.original_size
        assert after.offset >= before.offset + before.size  # an end record and a stream header may lie between
    assert [f.number for f in frames] == [*range(len(frames) - 4), *range(4)]  # the second stream counts anew


def test_each_frame_decodes_alone_to_its_part() -> None:
    blob, content = _two_streams()
    blocks = 0
    for frame in list_frames(io.BytesIO(blob)):
        record = blob[frame.offset : frame.offset + frame.size]
        header = unpack_frame_header(record, 0, frame.number)
        if frame.number == 0:
            blocks = 0
        assert frame.first_block == blocks
        blocks += header.n_blocks
        out = decode_frame(header, record[FRAME_HEADER_SIZE:], frame.number, frame.first_block).tobytes()
        assert out == content[frame.original_offset : frame.original_offset + frame.original_size]


def test_a_damaged_header_is_an_error() -> None:
    blob, _ = _two_streams()
    damaged = bytearray(blob)
    damaged[STREAM_HEADER_SIZE + 3] ^= 0x40  # inside the first frame's header
    with pytest.raises(bytepair.CorruptDataError):
        list_frames(io.BytesIO(bytes(damaged)))
