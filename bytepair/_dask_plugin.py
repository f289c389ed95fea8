"""The worker plugin of ``bytepair.dask.register_on``, apart because it needs ``distributed``."""

from __future__ import annotations

from typing import Any

from distributed.diagnostics.plugin import WorkerPlugin


class FsspecRegistration(WorkerPlugin):
    """Registers ``compression="bytepair"`` with fsspec in each worker's process.

    Unpickling the plugin on a worker imports this module; ``setup`` imports the
    registration, which is all there is to do.
    """

    idempotent = True

    def setup(self, worker: Any) -> None:
        import bytepair.fsspec  # noqa: F401
