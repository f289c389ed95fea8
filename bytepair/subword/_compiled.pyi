"""Type stub of the compiled subword loops (``_compiled.pyx``)."""

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
