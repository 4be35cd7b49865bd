"""What the host reads back from a sandbox, as a hostile candidate would shape it, without Docker:
a tar stream whose member claims a terabyte (a sparse file) is refused by its header without
streaming it, a stream longer than the expected files can be is cut, and a ``pred.npy`` whose
header lies about its shape or size, or that holds objects (a pickle), is refused before any
allocation or unpickling."""

from __future__ import annotations

import io
import tarfile

import numpy as np
import pytest

from mlflow_agentic.sandbox.job import SandboxJob, _predictions
from mlflow_agentic.sandbox.outputs import read_archive, stream_bytes

CAPS = {"result.json": 1000, "candidate.log": 1000, "pred.npy": 4096}


class Endless:
    """A stream of ``header`` then zeros without end, counting what was taken."""

    def __init__(self, header: bytes) -> None:
        self.header, self.taken = header, 0

    def __iter__(self):
        yield self.header
        self.taken += len(self.header)
        while True:
            self.taken += 65536
            yield bytes(65536)


def tar_header(name: str, size: int) -> bytes:
    info = tarfile.TarInfo(name)
    info.size = size
    return info.tobuf(format=tarfile.GNU_FORMAT)


def test_a_terabyte_member_is_refused_by_its_header_not_streamed():
    stream = Endless(tar_header("out/pred.npy", 10 ** 12))
    outputs = read_archive(iter(stream), CAPS)
    assert "more than the 4,096" in outputs.refused["pred.npy"]
    assert stream.taken < 10 ** 6


def test_a_stream_longer_than_the_expected_files_is_cut():
    stream = Endless(tar_header("out/other.bin", 10 ** 12))  # a name the host skips
    with pytest.raises(OSError, match="ran past"):
        read_archive(iter(stream), CAPS)
    assert stream.taken <= stream_bytes(CAPS) + 2 * 65536


def job() -> SandboxJob:
    import pandas as pd

    rows = pd.DataFrame(np.zeros((3, 1)), columns=["x"])
    return SandboxJob("", "binary", (0, 1), model_bytes=b"-", rows=rows)


def saved(array, **kwargs) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, **kwargs)
    return buffer.getvalue()


def test_predictions_are_checked_by_their_header_first():
    good = saved(np.full((3, 2), 0.5))
    assert _predictions(good, job()).shape == (3, 2)
    lying = good.replace(b"'shape': (3, 2), ", b"'shape': (10**12, 2),")
    with pytest.raises(ValueError):
        _predictions(lying, job())
    with pytest.raises(ValueError, match="bytes of data"):
        _predictions(good[:-8], job())
    pickled = saved(np.array([[None, 1]] * 3, dtype=object), allow_pickle=True)
    with pytest.raises(ValueError, match="object"):
        _predictions(pickled, job())
    with pytest.raises(ValueError, match="NaN"):
        _predictions(saved(np.full((3, 2), np.nan)), job())


def test_a_selected_model_without_a_holdout_score_is_not_registered():
    """A code candidate whose scoring container dodged the holdout (a lying ``pred.npy``): no
    holdout score, no evidence, no registration (it was registered as @challenger before)."""
    import math
    from types import SimpleNamespace

    from mlflow_agentic.tracking.results.result import _unscored

    def report(holdout, error=None):
        return SimpleNamespace(selected=SimpleNamespace(holdout=holdout, error=error))

    assert _unscored(report(0.84)) == ""
    assert "no holdout score (the score is nan)" in _unscored(report(math.nan))
    dodged = _unscored(report(math.nan, "ValueError: predictions of shape (1000000000000, 2)"))
    assert dodged.startswith("the selected model has no holdout score (ValueError")
    assert _unscored(SimpleNamespace(selected=None)) == ""
