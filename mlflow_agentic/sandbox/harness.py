"""Runs one step of an LLM-written candidate where it can do no harm (a container, or a bare
subprocess when the user allowed it).

Standalone on purpose: it imports numpy, pandas and scikit-learn only, never mlflow_agentic, so
it runs in the sandbox image. ``python harness.py FOLDER OUT_DIR``, where FOLDER holds:

- ``job.json``: ``task`` (``regression``, or a classification), ``classes`` (the engine's class
  order), ``save_model``;
- ``candidate.py``: defines ``build_pipeline(columns) -> unfitted sklearn estimator``
  (``columns``: feature name -> "numeric" or "categorical"); all feature work goes inside it;
- either ``train.parquet`` (the feature columns and ``__target__``: the rows to fit on), or
  ``model.pkl`` (a pipeline an earlier step fitted, to predict with);
- optionally ``rows.parquet``: feature columns only, **no labels**: the rows to predict (a CV
  fold's validation rows, or the sealed holdout's features). Their labels never enter.

OUT_DIR receives ``result.json`` (the stage reached, or the stage that failed and its error),
``pred.npy`` (predictions of ``rows``: class probabilities, one column per class in the given
order, or regression values; the engine scores them against labels only it holds), and with
``save_model`` ``model.pkl`` (the fitted pipeline, after a pickle round trip in here: the
host stores those bytes and never loads them). The candidate's own prints go to
``candidate.log``, never to the result. The process ends with ``os._exit`` once the outputs
are written: no exit handler or thread of the candidate's runs after them. With ``--hold`` (in
a container) it prints ``READY`` and becomes ``sleep`` instead, until the host, having copied
OUT_DIR out of the container (a size-capped tmpfs), removes the container.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import pickle
import sys
import time
import traceback
from pathlib import Path
from typing import Any

READY = b"\nmlflow-agentic: outputs ready\n"
"""Printed (with ``--hold``) once the outputs are written; the process then becomes ``sleep``
so the host can copy the container's tmpfs output folder before removing it. A candidate that
prints it early only makes the host read its own unfinished outputs."""


def main(folder: str, out: str, hold: bool = False) -> int:
    folder_path, out_dir = Path(folder), Path(out)
    result: dict = {"stage": "start", "ok": False, "timings": {}}
    log = io.StringIO()
    stage = "read"
    started = time.perf_counter()
    outputs: dict[str, Any] = {}
    try:
        import numpy as np
        import pandas as pd

        job = json.loads((folder_path / "job.json").read_text())
        task, classes = job.get("task", "binary"), list(job.get("classes") or [])
        train = folder_path / "train.parquet"
        rows = folder_path / "rows.parquet"
        with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            stage = "import"
            spec = importlib.util.spec_from_file_location("candidate",
                                                          folder_path / "candidate.py")
            if spec is None or spec.loader is None:
                raise ImportError("candidate.py cannot be loaded as a module")
            module = importlib.util.module_from_spec(spec)
            sys.modules["candidate"] = module  # a custom transformer pickles by this name
            spec.loader.exec_module(module)
            sample = None
            if train.exists():
                frame = pd.read_parquet(train)
                y = frame.pop("__target__").to_numpy()
                columns = {c: ("numeric" if pd.api.types.is_numeric_dtype(frame[c])
                               else "categorical") for c in frame.columns}
                stage = "build"
                model = module.build_pipeline(dict(columns))
                stage = "fit"
                model.fit(frame, y)
                sample = frame.head(20)
            else:
                stage = "load model"
                model = pickle.loads((folder_path / "model.pkl").read_bytes())
            if rows.exists():
                stage = "predict"
                X = pd.read_parquet(rows)
                outputs["pred"] = _predict(np, model, X, task, classes)
            if job.get("save_model"):
                stage = "pickle"
                blob = pickle.dumps(model)
                pickle.loads(blob)  # what a later step loads must load
                outputs["model"] = blob
            features = _features(model, sample) if sample is not None else []
        if "pred" in outputs:
            buffer = io.BytesIO()
            np.save(buffer, outputs["pred"], allow_pickle=False)
            _write(out_dir, "pred.npy", buffer.getvalue())
        if "model" in outputs:
            _write(out_dir, "model.pkl", outputs["model"])
        result.update(ok=True, stage="done", features=features)
    except BaseException as exc:  # noqa: BLE001 - every failure is the result, with its stage
        result.update(stage=stage, error=f"{type(exc).__name__}: {exc}"[:2000],
                      traceback=traceback.format_exc()[-8000:])
    result["timings"]["total_seconds"] = round(time.perf_counter() - started, 3)
    return _finish(out_dir, result, log.getvalue(), hold)


def _finish(out_dir: Path, result: dict, log: str, hold: bool) -> int:
    """The log and the status written; then the process ends (or, with ``hold``, becomes
    ``sleep`` once it said its outputs are ready): nothing of the candidate's runs after."""
    try:
        _write(out_dir, "candidate.log", log[-20000:].encode(errors="replace"))
        _write(out_dir, "result.json", json.dumps(result).encode())
    except OSError as exc:  # a name the candidate keeps swapping: end now, without a result
        os.write(2, f"mlflow-agentic: the outputs could not be written ({exc})\n".encode())
        os._exit(3)
    sys.stdout.flush()
    if hold:  # a container: its output folder is a tmpfs, read while the container lives
        os.write(1, READY)
        with contextlib.suppress(OSError):  # exec ends every thread of the candidate's
            os.execv("/bin/sleep", ["sleep", "100000"])
        while True:
            time.sleep(3600)
    os._exit(0)  # not sys.exit: no atexit handler or thread of the candidate outlives this
    return 0


def _write(out_dir: Path, name: str, data: bytes) -> None:
    """``data`` as a new regular file ``name``: whatever the candidate left under that name (a
    FIFO whose open would block forever, a link, a file) is removed first, never opened, and
    the new file is made exclusively without following a link (a name swapped back in between
    fails the write, and so the step: it never blocks)."""
    path = out_dir / name
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_NONBLOCK
                 | os.O_CLOEXEC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def _predict(np: Any, model: Any, X: Any, task: str, classes: list) -> Any:
    """Regression values, or class probabilities in ``classes`` order (absent ones: zeros)."""
    if task == "regression":
        return np.asarray(model.predict(X), dtype=float)
    proba = np.asarray(model.predict_proba(X), dtype=float)
    fitted = list(model.classes_)
    order = [fitted.index(c) if c in fitted else None for c in classes]
    return np.column_stack([proba[:, i] if i is not None else np.zeros(len(proba))
                            for i in order])


def _features(model: Any, sample: Any) -> list[str]:
    """The features the fitted pipeline makes: scikit-learn's names where it can say, else the
    columns of the last table a step returns on a few rows (a FunctionTransformer's own)."""
    try:
        return [str(f) for f in model[:-1].get_feature_names_out()][:500]
    except Exception:  # noqa: BLE001 - not every pipeline can name its features
        pass
    names = [str(c) for c in sample.columns]
    try:
        for step in list(model[:-1]):
            sample = step.transform(sample)
            if hasattr(sample, "columns"):
                names = [str(c) for c in sample.columns]
    except Exception:  # noqa: BLE001 - the names known so far
        pass
    return names[:500]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], "--hold" in sys.argv[3:]))
