"""The integrations on a real Dask cluster: two worker processes that import nothing of bytepair themselves.

One ``distributed.LocalCluster`` serves the module (started by the fixture,
closed at its end). The workers learn bytepair the way a user's would: from
pickled codecs and tasks, from an entry point, or from ``register_on``.
"""

from __future__ import annotations

import io
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import bytepair
from tests.helpers import frame_size, frames_each_split_task_decodes

distributed = pytest.importorskip("distributed", reason="the cluster tests need distributed (bytepair[dask])")
da = pytest.importorskip("dask.array", reason="the cluster tests need dask[array] (bytepair[dask])")
db = pytest.importorskip("dask.bag", reason="the cluster tests need dask[bag] (bytepair[dask])")
zarr = pytest.importorskip("zarr", reason="the cluster tests need zarr 3 (bytepair[zarr])")

import bytepair.dask  # noqa: E402
import bytepair.zarr  # noqa: E402


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    with (
        distributed.LocalCluster(
            n_workers=2, processes=True, threads_per_worker=1, dashboard_address=":0", worker_dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        client.wait_for_workers(2)
        yield client


def _text(seed: int, n_lines: int) -> str:
    rng = random.Random(seed)
    words = ["byte", "pair", "frame", "zarr", "dask", "worker", "chunk", "line", "the", "of", "a"]
    return "".join(" ".join(rng.choices(words, k=rng.randint(0, 25))) + "\n" for _ in range(n_lines))


def _damage(path: Path) -> None:
    blob = bytearray(path.read_bytes())
    blob[len(blob) // 2] ^= 0x04
    path.write_bytes(bytes(blob))


def test_bag_read_text_of_bp_files(client: Any, tmp_path: Path) -> None:
    client.restart()  # workers that have seen nothing of bytepair
    knows = "import fsspec.compression; result = 'bytepair' in fsspec.compression.compr"

    def known() -> bool:
        scope: dict[str, Any] = {}
        exec(knows, scope)
        return bool(scope["result"])

    assert set(client.run(known).values()) == {False}
    texts = [_text(i, 300 + 100 * i) for i in range(5)]
    for i, text in enumerate(texts):
        (tmp_path / f"part-{i}.txt.bp").write_bytes(bytepair.compress(text.encode()))
    bytepair.dask.register_on(client)  # the documented line, for Dask's own readers
    assert set(client.run(known).values()) == {True}
    bag = db.read_text(str(tmp_path / "*.txt.bp"), encoding="utf-8")  # compression="infer" is its default
    assert bag.compute() == [line for text in texts for line in io.StringIO(text)]
    _damage(tmp_path / "part-3.txt.bp")
    with pytest.raises(bytepair.CorruptDataError, match=r"part-3\.txt\.bp: frame 0"):
        db.read_text(str(tmp_path / "*.txt.bp"), encoding="utf-8").compute()


def test_zarr_array_written_and_read_by_workers(client: Any, tmp_path: Path) -> None:
    rng = np.random.default_rng(34)
    values = np.frombuffer(_text(9, 6000).encode()[: 400 * 250], dtype="u1").reshape(400, 250).astype("i2")
    values = values + rng.integers(0, 4, size=values.shape, dtype="i2")
    data = da.from_array(values, chunks=(100, 125))
    store = str(tmp_path / "a.zarr")
    array = zarr.create_array(
        store, shape=values.shape, chunks=(100, 125), dtype="i2", compressors=bytepair.zarr.BytePair(level=2)
    )
    data.store(array, lock=False)  # the chunks are compressed on the workers
    back = da.from_zarr(store)
    np.testing.assert_array_equal(back.compute(), values)
    assert (back.sum().compute()) == values.astype("i8").sum()
    (tmp_path / "a.zarr" / "c" / "2" / "1").write_bytes(b"BYPR not really")
    with pytest.raises(bytepair.BytePairError):
        da.from_zarr(store).compute()
    with zarr.config.set({"codec_pipeline.path": "bytepair.zarr.ChunkKeyPipeline"}):
        opened = zarr.open_array(store)  # the pipeline goes to the workers with the pickled array
    with pytest.raises(bytepair.UnsupportedFormatError, match=r"zarr chunk '.*a\.zarr/c/2/1'"):
        da.from_zarr(opened).compute()


def test_one_large_file_read_in_parallel(client: Any, tmp_path: Path) -> None:
    frame = 128 * 1024
    text = _text(11, 40_000)  # about 4 MB: 30-odd frames
    with frame_size(frame):
        blob = bytepair.compress(text.encode(), level=1)
    (tmp_path / "big.txt.bp").write_bytes(blob)
    blocksize = 2 * frame * len(blob) // len(text.encode())  # about two compressed frames a partition
    pieces = bytepair.dask.plan(str(tmp_path / "big.txt.bp"), blocksize)
    bag = bytepair.dask.read_text(str(tmp_path / "big.txt.bp"), blocksize=blocksize)
    assert bag.npartitions == len(pieces) >= 6
    with distributed.get_task_stream(client) as stream:
        assert bag.compute() == list(io.StringIO(text))
    decoders = {t["worker"] for t in stream.data if "bytepair-decode-" in str(t["key"])}
    assert len(decoders) == 2  # both workers decoded frames
    graph = dict(bag.__dask_graph__())
    keys = sorted((k for k in graph if str(k[0]).startswith("bytepair-decode-")), key=lambda k: k[1])
    decoded = client.get(graph, keys)
    assert [d.frames_decoded for d in decoded] == frames_each_split_task_decodes(text.encode(), pieces)
    _damage(tmp_path / "big.txt.bp")
    with pytest.raises(bytepair.CorruptDataError, match=r"big\.txt\.bp: frame \d+"):
        bytepair.dask.read_text(str(tmp_path / "big.txt.bp"), blocksize=blocksize).compute()
