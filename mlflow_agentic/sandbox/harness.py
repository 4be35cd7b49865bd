"""Runs one LLM-written candidate where it can do no harm (a container, or a bare subprocess).

Standalone on purpose: it imports numpy, pandas and scikit-learn only, never mlflow_agentic, so
it runs in the sandbox image. ``python harness.py TRAIN.parquet CANDIDATE.py OUT_DIR TASK``:

- TRAIN holds the feature columns, ``__target__`` and ``__fold__`` (the engine's CV folds);
- CANDIDATE defines ``build_pipeline(columns) -> unfitted sklearn estimator`` (``columns``:
  feature name -> "numeric" or "categorical"); all feature work goes inside the pipeline;
- TASK is ``regression`` (predictions) or a classification (class probabilities, one column
  per class in sorted order);
- OUT_DIR receives ``result.json`` (the stage reached, or the stage that failed and its error),
  ``oof.npy`` (out-of-fold predictions: the engine computes the scores from them on its side,
  the candidate never reports one), and ``model.pkl`` (the pipeline refit on all rows, after a
  pickle save/load round trip).

The candidate's own prints go to ``candidate.log`` in OUT_DIR, never to the result.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import pickle
import sys
import time
import traceback
from pathlib import Path


def main(train: str, candidate: str, out: str, task: str = "binary") -> int:
    out_dir = Path(out)
    result: dict = {"stage": "start", "ok": False, "timings": {}}
    log = io.StringIO()
    stage = "read"
    started = time.perf_counter()
    try:
        import numpy as np
        import pandas as pd

        frame = pd.read_parquet(train)
        y = frame.pop("__target__").to_numpy()
        folds = frame.pop("__fold__").to_numpy()
        columns = {c: ("numeric" if pd.api.types.is_numeric_dtype(frame[c]) else "categorical")
                   for c in frame.columns}
        classes = sorted(set(y.tolist()))
        with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
            stage = "import"
            spec = importlib.util.spec_from_file_location("candidate", candidate)
            module = importlib.util.module_from_spec(spec)
            sys.modules["candidate"] = module  # a custom transformer pickles by this name
            spec.loader.exec_module(module)
            stage = "build"
            from sklearn.base import clone

            template = module.build_pipeline(dict(columns))
            oof = None
            for k in sorted(set(folds.tolist())):
                stage = f"fit fold {k}"
                test = folds == k
                model = clone(template).fit(frame[~test], y[~test])
                stage = f"predict fold {k}"
                if task == "regression":
                    pred = np.asarray(model.predict(frame[test]), dtype=float)
                else:  # probabilities, columns in sorted class order whatever the model's
                    proba = model.predict_proba(frame[test])
                    order = [list(model.classes_).index(c) if c in model.classes_ else None
                             for c in classes]
                    pred = np.column_stack([proba[:, i] if i is not None
                                            else np.zeros(len(proba)) for i in order])
                if oof is None:
                    oof = np.zeros((len(y), *pred.shape[1:]), dtype=float)
                oof[test] = pred
            stage = "refit"
            final = clone(template).fit(frame, y)
            stage = "pickle"
            blob = pickle.dumps(final)
            pickle.loads(blob)  # what the engine will load must load
        (out_dir / "model.pkl").write_bytes(blob)
        np.save(out_dir / "oof.npy", oof)
        result.update(ok=True, stage="done", features=_features(final, frame.head(20)))
    except BaseException as exc:  # noqa: BLE001 - every failure is the result, with its stage
        result.update(stage=stage, error=f"{type(exc).__name__}: {exc}"[:2000],
                      traceback=traceback.format_exc()[-8000:])
    result["timings"]["total_seconds"] = round(time.perf_counter() - started, 3)
    (out_dir / "candidate.log").write_text(log.getvalue()[-20000:])
    (out_dir / "result.json").write_text(json.dumps(result))
    return 0


def _features(model, sample) -> list[str]:
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
    sys.exit(main(*sys.argv[1:5]))
