"""Big fold matrices go to files the workers memory-map (wide data: the pipes took longer than
the preprocessing). The threshold is lowered here so the small churn sample spills; the
matrices, the fold outputs and the CV scores must be those of the unspilled folds, and no file
may outlive its search."""

from __future__ import annotations

import gc
import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier

from mlflow_agentic.engine.evaluate import folds as F
from mlflow_agentic.engine.evaluate import spill
from mlflow_agentic.engine.evaluate.cv import make_splits
from mlflow_agentic.engine.workers.parallel import WorkerPool

STYLES = ["native", "scaled"]


def _folds(dataset, spill: bool) -> F.FoldData:
    data = F.FoldData(dataset, make_splits(dataset, 3), dataset.X.iloc[:50], spill=spill)
    data.spill_bytes = 0  # everything spills
    return data


@pytest.mark.slow
def test_spilled_folds_are_files_the_workers_map_and_score_the_same(churn_small):
    pool = WorkerPool(2)
    plain, spilled = _folds(churn_small, spill=False), _folds(churn_small, spill=True)
    plain.prepare(STYLES, pool)
    spilled.prepare(STYLES, pool)
    folder = Path(spilled.spill_to)
    assert sorted(p.name for p in folder.iterdir())[:2] == ["dataset.pkl", "extra.pkl"]
    classes = tuple(churn_small.classes)
    model = HistGradientBoostingClassifier(max_iter=30, random_state=0)
    for style in STYLES:
        for a, b in zip(plain.matrices(style), spilled.matrices(style), strict=True):
            assert a.files is None and b.files is not None
            assert all(Path(f).parent == folder for f in b.files if f)
            assert isinstance(b.X_train, np.memmap)
            np.testing.assert_array_equal(a.X_train, b.X_train)
            np.testing.assert_array_equal(a.X_extra, b.X_extra)
            assert list(a.y_train) == list(b.y_train)
            assert len(pickle.dumps(b)) < 2000 < len(pickle.dumps(a))  # paths, not arrays
            outputs = [pool.submit(F.fit_fold, model, m, classes, True).result()
                       for m in (a, b)]
            np.testing.assert_allclose(outputs[0].test, outputs[1].test)
            np.testing.assert_allclose(outputs[0].extra, outputs[1].extra)
    del spilled
    gc.collect()
    assert not folder.exists()  # removed with its folds


def test_a_model_may_write_to_its_mapped_input_without_touching_the_file(churn_small, tmp_path):
    fold = F.preprocess_fold(churn_small, "native", *make_splits(churn_small, 3)[0], None,
                             str(tmp_path), "f", 0)
    mapped = pickle.loads(pickle.dumps(fold))
    mapped.X_train[0, 0] = 1e9  # copy-on-write: this process's page only
    assert np.load(fold.files[0])[0, 0] != 1e9


def test_folders_of_killed_searches_are_swept_and_live_ones_kept():
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    stale = Path(tempfile.mkdtemp(prefix=f"{spill.SPILL_PREFIX}{dead}-"))
    live = Path(tempfile.mkdtemp(prefix=f"{spill.SPILL_PREFIX}{os.getppid()}-"))
    (stale / "x.npy").write_bytes(b"0")
    fresh = Path(spill.spill_folder())
    try:
        assert not stale.exists() and live.exists() and fresh.exists()
    finally:
        for folder in (stale, live, fresh):
            subprocess.run(["rm", "-rf", str(folder)], check=False)


def test_a_worker_reads_the_shipped_rows_and_extra_once_each(churn_small, tmp_path):
    rows = spill.ship(churn_small, str(tmp_path), "dataset", 0)
    extra = spill.ship(churn_small.X.iloc[:10], str(tmp_path), "extra", 0)
    first = pickle.loads(pickle.dumps(rows))
    pickle.loads(pickle.dumps(extra))
    assert pickle.loads(pickle.dumps(rows)) is first  # read from the file once, then kept
    assert first.frame.equals(churn_small.frame)
