"""The compiled reader of a whole stream: its header, every frame and its end, in one call.

``bytepair.decompress`` of one stream in the Python reader (``container.walk.Walker``)
takes some 60 Python calls a frame (headers, the limit, the tally, the end record):
16 us in a warm loop, but 65-75 us when the interpreter's code is cold, as it is after
other work, on a file whose decoding takes 100-300 us. :func:`decode_stream` checks what
the reader checks before it gives a frame room (:func:`plan_stream` alone), makes the
output only then, and decodes it all. The kernels are in ``_decode.pyx``.

:func:`decode_compact` takes a compact stream (a small input's) in one call, and
:func:`decode_whole` either form, from any flat buffer of bytes: ``bytepair.decompress``
calls it first.

They are accelerators, not second readers: it decodes a buffer only when the buffer
is exactly one stream that passes every check the Python reader makes (the stream
header, each frame header's ranges, each frame's CRC, its columns and merges, its
content's CRC, the end record's check and its counts and CRC, nothing after it); for
anything else it returns None and the caller reads the buffer frame by
frame, which raises the precise error. So the errors a caller sees come from one
place, whatever the path.
"""

from __future__ import annotations

from ._crc import crc32_combine
from ._decode import decode_compact, decode_stream, decode_whole, plan_stream, stream_size

__all__ = [
    "crc32_combine",
    "decode_compact",
    "decode_stream",
    "decode_whole",
    "plan_stream",
    "stream_size",
]
