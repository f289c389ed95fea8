"""Subprocesses started by the tests import this checkout's bytepair, whatever is installed."""

import os

from tests.helpers import REPO

os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
