"""The compiled reader of a whole stream, compact or framed, in one call (``_decode.pyx``).

``bytepair.decompress`` of one stream in the Python reader (``container.walk.Walker``)
takes some 60 Python calls a frame (headers, the limit, the tally, the end record):
16 us in a warm loop, but 65-75 us when the interpreter's code is cold, as it is after
other work, on a file whose decoding takes 100-300 us. :func:`decode_whole` takes any flat
buffer of bytes: a framed stream is checked as the reader checks it before it gives a
frame room (:func:`plan_stream` alone), its output made only then and decoded into; a
compact stream (a small input's) is decoded from its one record.

It is an accelerator, not a second reader: it decodes a buffer only when the buffer
is exactly one stream that passes every check the Python reader makes (the stream
header, each frame header's ranges, each frame's CRC, its columns and merges, its
content's CRC, the end record's check and its counts and CRC, nothing after it); for
anything else it returns None and the caller reads the buffer frame by
frame, which raises the precise error. So the errors a caller sees come from one
place, whatever the path.
"""

from __future__ import annotations

from ._crc import crc32_combine
from ._decode import decode_whole, plan_stream, stream_size

__all__ = [
    "crc32_combine",
    "decode_whole",
    "plan_stream",
    "stream_size",
]
