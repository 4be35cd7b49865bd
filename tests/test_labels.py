"""One label rule: the most probable class, as the classes' own values. What a search scores, what
its tables show and what its served models answer come from ``core.labels.labels_of``, and a
logged model carries the rule with it (it loads where mlflow-agentic is not installed)."""

from __future__ import annotations

import subprocess
import sys

import cloudpickle
import numpy as np
from sklearn.linear_model import LogisticRegression

from mlflow_agentic.core.labels import labels_of
from mlflow_agentic.core.metrics import resolve_metric
from mlflow_agentic.engine.evaluate.folds import score_output
from mlflow_agentic.trainers.transforms import WeightedEnsemble


def test_the_most_probable_class_keeps_the_classes_own_values():
    out = np.array([[0.2, 0.8], [0.6, 0.4], [0.5, 0.5]])
    labels = labels_of(out, (1, "a"))
    assert labels.dtype == object and list(labels) == ["a", 1, 1]  # a tie: the first class
    assert isinstance(labels[1], int)


def fitted_ensemble():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 2))
    y = np.where(X[:, 0] + rng.normal(size=80) > 0, "yes", "no")
    members = [LogisticRegression().fit(X, y), LogisticRegression(C=0.01).fit(X, y)]
    return WeightedEnsemble(members, [0.7, 0.3], ("no", "yes")), X, y


def test_scored_labels_are_the_served_labels():
    model, X, y = fitted_ensemble()
    served = model.predict(X)
    assert list(served) == list(labels_of(model.predict_proba(X), model.classes))
    metric = resolve_metric("accuracy", "binary")
    assert score_output(metric, y, model.predict_proba(X), model.classes) == \
        metric.score(y, served, model.predict_proba(X), model.classes)


def test_a_logged_ensemble_loads_and_labels_without_the_package(tmp_path):
    from mlflow_agentic.tracking.registry.models import _pickle_by_value

    model, X, _ = fitted_ensemble()
    with _pickle_by_value():
        (tmp_path / "model.pkl").write_bytes(cloudpickle.dumps(model))
    np.save(tmp_path / "X.npy", X)
    code = ("import sys, pickle, numpy as np\n"
            "sys.modules['mlflow_agentic'] = None  # not installed\n"
            f"m = pickle.loads(open({str(tmp_path / 'model.pkl')!r}, 'rb').read())\n"
            f"print(','.join(m.predict(np.load({str(tmp_path / 'X.npy')!r}))[:5]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == ",".join(model.predict(X)[:5])
