"""Type stub of the compiled subword loops (``_compiled.pyx``)."""

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

def learn(
    sym: npt.NDArray[np.int32],
    length: npt.NDArray[np.int64],
    freq: npt.NDArray[np.int64],
    chars: npt.NDArray[np.int32],
    clen: npt.NDArray[np.int64],
    merges: int,
    min_frequency: int,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64], int]: ...

class MergeRanks:
    def __init__(
        self, lefts: npt.NDArray[np.int64], rights: npt.NDArray[np.int64], mades: npt.NDArray[np.int64]
    ) -> None: ...
    def apply(self, sym: npt.NDArray[np.int64], length: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]: ...

class CharClasses:
    def __init__(self, blocks: npt.NDArray[np.uint16], classes: npt.NDArray[np.uint8]) -> None: ...
    def of(self, ch: int) -> int: ...

def split(text: str, mode: int, classes: CharClasses | None) -> list[str]: ...
def share_edges(items: list[Any], workers: int, min_share: int) -> list[tuple[int, int]]: ...

class WordCache:
    def __len__(self) -> int: ...

class Encoder:
    def __init__(
        self,
        mode: int,
        merges: MergeRanks,
        classes: CharClasses | None,
        byte_ids: npt.NDArray[np.int64],
        char_points: npt.NDArray[np.int64],
        char_inner: npt.NDArray[np.int64],
        char_final: npt.NDArray[np.int64],
        unk: int,
        unknown: Callable[[str], BaseException],
        token_bytes: npt.NDArray[np.uint8],
        token_start: npt.NDArray[np.int64],
        token_length: npt.NDArray[np.int64],
        decode_flags: int,
        decode_errors: str,
        nints: int,
    ) -> None: ...
    def __len__(self) -> int: ...
    def clear(self) -> None: ...
    def encode(self, text: str) -> list[int]: ...
    def hold(self) -> None: ...
    def release(self) -> None: ...
    def adopt(self, words: WordCache | None) -> None: ...
    def encode_share(
        self,
        texts: list[str],
        lo: int,
        hi: int,
        out: list[list[int] | None],
        after_block: Callable[[], object] | None = None,
    ) -> WordCache: ...
    def decode(self, ids: list[int] | tuple[int, ...]) -> str | None: ...
    def decode_share(self, batch: list[Sequence[int]], lo: int, hi: int, out: list[str | None]) -> None: ...
