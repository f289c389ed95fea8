"""Subprocesses started by the tests import this checkout's bytepair, whatever is installed; the
``kernels`` fixture runs a test on both paths (numpy, and numba when installed)."""

import os

import pytest

from tests.helpers import KERNEL_PATHS, REPO, use_kernels

os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))


@pytest.fixture(params=KERNEL_PATHS)
def kernels(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs a test once on each path (``BYTEPAIR_KERNELS=numpy``, then ``numba``, skipped when
    numba is not installed); the value is the path."""
    return use_kernels(request.param, monkeypatch)
