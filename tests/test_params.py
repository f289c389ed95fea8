"""Parameters the Python API does not take directly: their validation and the presets' values."""

from __future__ import annotations

import pytest

from bytepair.core.params import LEVELS, MAX_MERGES_PER_STEP, Params


@pytest.mark.parametrize("merges", [0, -1, MAX_MERGES_PER_STEP + 1])
def test_merges_per_step_is_validated(merges: int) -> None:
    with pytest.raises(ValueError, match=r"merges_per_step must be in 1\.\."):
        Params(merges_per_step=merges)


def test_merges_per_step_must_be_an_integer() -> None:
    with pytest.raises(TypeError, match="merges_per_step must be an integer"):
        Params(merges_per_step=2.0)  # type: ignore[arg-type]


def test_every_level_merges_several_pairs_per_step() -> None:
    assert {p.merges_per_step for p in LEVELS.values()} == {Params().merges_per_step} == {8}
