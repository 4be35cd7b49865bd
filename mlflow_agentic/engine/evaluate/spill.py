"""Where a search's big arrays and its fold models live on this machine's disk.

Fold matrices bigger than ``SPILL_BYTES`` and the training rows go to files that the workers
memory-map or read once, instead of through a pipe at every task. The fitted preprocessing and
model of every fold are kept as files too (for the best attempts only), so the selected attempt
can be served as the average of its fold models when its refit would not fit the time left.
One folder per search, removed with it; the folders of killed searches are swept.
"""

from __future__ import annotations

import os
import pickle
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from mlflow_agentic.core.processes import process_alive

SPILL_BYTES = 32 * 2**20
"""From this size a fold's matrices go to ``.npy`` files that the workers memory-map, instead of
being pickled through a pipe for every task (on a wide table the pipes cost more than the
preprocessing itself, and again for every fold fit). The pages are the
operating system's file cache, shared by all the workers and the main process."""
SPILL_PREFIX = "mlflow-agentic-folds-"


class _Shipped:
    """An object a worker reads from a file once (then from its memory), not from the pipe at
    every task: the training rows, sent with each of the 15 preprocessing tasks, were 99 MB."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce_ex__(self, protocol: Any) -> tuple:
        return _unship, (self.path,)


_UNSHIPPED: dict[str, object] = {}


def _unship(path: str) -> object:
    if path not in _UNSHIPPED:
        folder = os.path.dirname(path)  # one search's objects at a time (its rows, its extra)
        for old in [p for p in _UNSHIPPED if os.path.dirname(p) != folder]:
            del _UNSHIPPED[old]
        with open(path, "rb") as f:
            _UNSHIPPED[path] = pickle.load(f)  # noqa: S301 - written by this search, just now
    return _UNSHIPPED[path]


def ship(obj: Any, folder: str | None, name: str, at_bytes: int = SPILL_BYTES) -> Any:
    """``obj`` to hand to workers: as a file in ``folder`` when it is big, else itself."""
    if folder is None or obj is None or _size(obj) < at_bytes:
        return obj
    path = str(Path(folder) / f"{name}.pkl")
    if not os.path.exists(path):
        with open(path, "wb") as f:
            pickle.dump(obj, f, protocol=pickle.HIGHEST_PROTOCOL)
    return _Shipped(path)


def _size(obj: Any) -> int:
    frame = getattr(obj, "frame", obj)
    return int(frame.memory_usage(deep=False).sum()) if isinstance(frame, pd.DataFrame) else 0


def spill_folder() -> str:
    """A new folder for one search's spilled folds (removed with its ``FoldData``); folders
    left by a search that was killed (its process gone) are removed first."""
    root = Path(tempfile.gettempdir())
    for old in root.glob(f"{SPILL_PREFIX}*"):
        pid = old.name[len(SPILL_PREFIX):].split("-")[0]
        if pid.isdigit() and not process_alive(int(pid)):
            shutil.rmtree(old, ignore_errors=True)
    return tempfile.mkdtemp(prefix=f"{SPILL_PREFIX}{os.getpid()}-")




def steps_file(folder: str | None, name: str) -> str | None:
    """Where the preprocessing fitted on fold ``name`` (``<style>-<fold>``) is kept."""
    return None if folder is None else str(Path(folder) / f"{name}-steps.pkl")


def model_file(folder: str | None, index: int, fold: int) -> str | None:
    """Where attempt ``index``'s model of ``fold`` is kept (None: not kept)."""
    return None if folder is None else str(Path(folder) / "models" / f"{index}-{fold}.pkl")


def model_megabytes(folder: str | None, index: int, n_folds: int) -> float | None:
    """The mean size (MB) of attempt ``index``'s kept fold models (None: none kept)."""
    sizes = [os.path.getsize(path) for k in range(n_folds)
             if (path := model_file(folder, index, k)) is not None and os.path.exists(path)]
    return sum(sizes) / len(sizes) / 1e6 if sizes else None


def keep(obj: Any, path: str | None) -> None:
    """Pickle ``obj`` to ``path`` (a worker's fitted fold model or preprocessing)."""
    if path is None:
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path + ".part", "wb") as f:
        pickle.dump(obj, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(path + ".part", path)  # whole or absent: a cut fold leaves no half file


def load(path: str | None) -> Any:
    """What ``keep`` wrote, or None when it is not there."""
    if path is None or not os.path.exists(path):
        return None
    with open(path, "rb") as f:
        return pickle.load(f)  # noqa: S301 - written by this search's workers


def forget_models(folder: str | None, keep_indices: set[int], upto: int) -> None:
    """Delete the fold models of the attempts up to ``upto`` not in ``keep_indices`` (the
    disk stays bounded; later attempts' folds may still be running)."""
    if folder is None:
        return
    for path in (Path(folder) / "models").glob("*.pkl"):
        index = int(path.stem.split("-")[0])
        if index <= upto and index not in keep_indices:
            path.unlink(missing_ok=True)
