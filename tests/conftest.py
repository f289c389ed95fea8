"""The tests, and the subprocesses they start, import this checkout's bytepair, whatever is
installed, with its compiled kernels built in place first (``tests/build.py``); the
``kernels`` fixture runs a test on both paths (numpy, and the compiled kernels when built)."""

import os

import pytest

from tests.build import REPO, build_in_place

BUILT = build_in_place()  # before anything imports bytepair

from tests.helpers import KERNEL_PATHS, use_kernels  # noqa: E402

os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))


def pytest_report_header() -> list[str]:
    from bytepair import backend

    return [line for line in (BUILT, f"bytepair kernels: {backend.describe()}") if line]


@pytest.fixture(params=KERNEL_PATHS)
def kernels(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Runs a test once on each path (``numpy``, then ``compiled``, skipped when the compiled
    kernels are not built); the value is the path."""
    return use_kernels(request.param, monkeypatch)
