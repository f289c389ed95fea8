from typing import Any

import numpy as np
import numpy.typing as npt

W: int
OK: int
BAD_PAYLOAD_LEN: int
FRESH_TWICE: int
FORWARD_REF: int
TOO_LONG: int
OVER_BUDGET: int
WRONG_TOTAL: int
ESCAPE_COUNT: int
SHORT_BODY: int
LONG_BODY: int
BAD_LENGTHS: int
WRONG_SIZE: int
BAD_SET_HEADER: int
BAD_RUNS: int
BAD_BITMAP: int
CONTENT_CRC: int
DISAGREE: int
NO_CRC: int

def constants() -> dict[str, Any]: ...
def frame_check(raw: Any, start: int, frame_crc: int, nb: int) -> int: ...
def decode_body(
    raw: Any,
    nb: int,
    orig_size: int,
    budget: int,
    status: npt.NDArray[np.int64],
    out: npt.NDArray[np.uint8],
    content_crc: int,
) -> npt.NDArray[np.uint8]: ...
def decode_blocks(
    orig_len: npt.NDArray[np.int64],
    n_merges: npt.NDArray[np.int64],
    n_fresh: npt.NDArray[np.int64],
    code: npt.NDArray[np.uint8],
    left: npt.NDArray[np.uint8],
    right: npt.NDArray[np.uint8],
    payload_len: npt.NDArray[np.int64],
    payload: npt.NDArray[np.uint8],
    esc_count: npt.NDArray[np.int64],
    esc_mark: npt.NDArray[np.uint8],
    esc_literals: npt.NDArray[np.uint8],
    budget: int,
    status: npt.NDArray[np.int64],
) -> npt.NDArray[np.uint8]: ...
def restore_escapes(
    out: npt.NDArray[np.uint8],
    start: int,
    end: int,
    mark: int,
    literals: npt.NDArray[np.uint8],
    lit: int,
    lit_end: int,
) -> int: ...
def stream_size(raw: Any) -> int: ...
def plan_stream(raw: Any) -> int: ...
def decode_whole(data: object, max_length: int, most_per_byte: int) -> bytes | None: ...

PAYLOAD_LOOP: str

def use_payload_loop(name: str) -> str: ...

ESCAPE_LOOP: str

def use_escape_loop(name: str) -> str: ...
