"""Subprocesses started by the tests import this checkout's bytepair, whatever is installed; the
``kernels`` fixture runs a test on both paths (numpy, and the compiled kernels when built)."""

import os

import pytest

from tests.helpers import KERNEL_PATHS, REPO, use_kernels

os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))


@pytest.fixture(params=KERNEL_PATHS)
def kernels(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs a test once on each path (``numpy``, then ``compiled``, skipped when the compiled
    kernels are not built); the value is the path."""
    return use_kernels(request.param, monkeypatch)
