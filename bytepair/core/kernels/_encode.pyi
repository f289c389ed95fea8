# The compiled encoder (_encode.pyx): its def entries. The wrappers encode.py, prepare.py
# and frame.py give them their numpy types and check what they pass.
from typing import Any

import numpy as np
import numpy.typing as npt

_U8 = npt.NDArray[np.uint8]
_I64 = npt.NDArray[np.int64]

VECTOR_LOOPS: str

def constants() -> dict[str, int]: ...
def use_vector_loops(name: str) -> str: ...
def split_blocks(data: Any, block_size: int, max_distinct: int) -> _I64: ...
def find_escapes(data: Any, bounds: Any, limit: int) -> tuple[_I64, _U8, _U8, _U8 | None]: ...
def split_and_find_escapes(
    data: Any, block_size: int, max_distinct: int, limit: int
) -> tuple[_I64, _I64, _U8, _U8, _U8 | None]: ...
def encode_blocks(
    data: Any, bounds: Any, threshold: int, recycle: bool, max_depth: int, merges_per_step: int
) -> tuple[_I64, _I64, _U8, _U8, _U8, _I64, _I64, _I64, _U8]: ...
def block_costs(n_merges: Any, n_fresh: Any, code: Any, payload_len: Any) -> _I64: ...
def pack_frame_body(
    data: Any,
    bounds: Any,
    n_merges: Any,
    n_fresh: Any,
    code: Any,
    left: Any,
    right: Any,
    expansion: Any,
    payload_len: Any,
    payload: Any,
    esc_count: Any,
    esc_mark: Any,
    literals: Any,
    budget: int,
) -> tuple[_U8, int]: ...
def encode_frame_body(
    data: Any,
    block_size: int,
    max_distinct: int,
    escape_limit: int,
    threshold: int,
    recycle: bool,
    merges_per_step: int,
    budget: int,
) -> tuple[_U8, int]: ...
def encode_stream(
    data: Any,
    block_size: int,
    max_distinct: int,
    escape_limit: int,
    threshold: int,
    recycle: bool,
    merges_per_step: int,
    budget: int,
) -> bytes: ...
