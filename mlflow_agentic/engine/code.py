"""Code mode in the engine: an LLM-written ``candidate.py`` cross-validated in a sandbox on the
engine's own folds. The engine scores the out-of-fold output itself, fold by fold, with the
search's metric (the candidate never reports a score); the selected candidate's fitted pipeline
is loaded on the host behind the same input step the sandbox's rows were made with."""

from __future__ import annotations

import sys
import types
from collections.abc import Sequence

import numpy as np

from mlflow_agentic.engine.batch import Outcome
from mlflow_agentic.sandbox.job import SandboxJob, SandboxResult

CODE = "code"
"""The trainer name of a code-mode attempt (not in the registry: the candidate is its code)."""


def fold_of_each_row(n_rows: int, splits) -> np.ndarray:
    """The test fold of every training row (the engine's splits, as the sandbox gets them)."""
    folds = np.full(n_rows, -1)
    for k, (_, test) in enumerate(splits):
        folds[np.asarray(test)] = k
    if (folds < 0).any():
        raise ValueError("code mode needs splits whose test folds cover every training row")
    return folds


def input_step(dataset, dropped: Sequence[str] = ()):
    """``Pipeline(inputs, features)``, fitted: the raw columns a request may send, and the
    feature columns the candidate reads (``dropped``: removed by the critic's pivot)."""
    from sklearn.pipeline import Pipeline

    from mlflow_agentic.trainers.transforms import CodeInputs, InputColumns

    kept = [c for c in dataset.feature_columns if c not in set(dropped)]
    numeric = [c for c in kept if dataset.columns[c].kind == "numeric"]
    unused = sorted(set(dataset.excluded_columns) | set(dropped))
    return Pipeline([("inputs", InputColumns(unused=unused)),
                     ("features", CodeInputs(kept, numeric))]).fit(dataset.X)


def dropped_columns(candidate) -> list[str]:
    """The columns a code candidate runs without (the critic's pivot), from its params."""
    value = (getattr(candidate, "params", None) or {}).get("dropped_columns") or "none"
    return [] if value == "none" else [c for c in str(value).split(",") if c]


def evaluate_code(sandbox, dataset, splits, metric, code: str, dropped: Sequence[str] = ()
                  ) -> tuple[Outcome, SandboxResult]:
    """Run ``code`` in ``sandbox`` (``DockerSandbox`` or ``HostSandbox``) on the training rows;
    a failure in any stage is the outcome's error, with that stage."""
    y = dataset.y.to_numpy()
    features = input_step(dataset, dropped).transform(dataset.X)
    job = SandboxJob(features, y, fold_of_each_row(len(y), splits), code, dataset.task)
    result = sandbox.run(job)
    if not result.ok:
        return Outcome(error=f"{result.stage}: {result.error}", traceback=result.traceback,
                       fit_seconds=result.seconds, seconds=result.seconds), result
    classes = tuple(dataset.classes) if dataset.task != "regression" else ()
    scores = []
    for _, test in splits:
        out = result.oof[np.asarray(test)]
        if classes:
            pred = np.asarray(classes, dtype=object)[out.argmax(axis=1)]
            scores.append(metric.score(y[test], pred, out, classes))
        else:
            scores.append(metric.score(y[test], out))
    return Outcome(fold_scores=scores, fit_seconds=result.seconds, seconds=result.seconds,
                   oof=result.oof), result


def load_candidate_module(code: str) -> types.ModuleType:
    """``code`` imported as the module ``candidate`` (what its pickle refers to). This runs
    the candidate's code on the host: only for the selected attempt, as serving it will."""
    module = types.ModuleType("candidate")
    module.__file__ = "candidate.py"
    sys.modules["candidate"] = module
    exec(compile(code, "candidate.py", "exec"), module.__dict__)  # noqa: S102 - see above
    return module


def code_model(result: SandboxResult, code: str, dataset, dropped: Sequence[str] = ()):
    """The pipeline to register: the input step, then the candidate's pipeline as the sandbox
    refit it on all training rows (loaded from its pickle)."""
    from sklearn.pipeline import Pipeline

    load_candidate_module(code)
    steps = input_step(dataset, dropped).steps
    return Pipeline([*steps, ("candidate", result.model())])


def sandbox_tags(result: SandboxResult) -> dict[str, str]:
    """``sandbox`` (docker or host) and its limits, for the attempt's run."""
    return {"sandbox": result.label, **result.limits}


def sandbox_artifacts(result: SandboxResult) -> dict[str, str]:
    """What the sandbox said, for the attempt's run: the features made and the candidate's own
    output (kept as a log, never read as a result)."""
    import json

    files = {"sandbox/features.json": json.dumps(result.features, indent=1)}
    if result.log.strip():
        files["sandbox/candidate.log"] = result.log
    return files


def code_plan(candidate, sandbox):
    """A code candidate ready for the sandbox, or failed already (no sandbox, no code)."""
    from mlflow_agentic.engine.batch import Planned

    plan = Planned(candidate, params=dict(candidate.params))
    if sandbox is None:
        plan.error = ("SandboxUnavailable: code candidates run only in a sandbox; pass one "
                      "(mlflow_agentic.sandbox.make_sandbox)")
    elif not (candidate.code or "").strip():
        plan.error = f"CoderFailed: the coder wrote no candidate.py: {candidate.rationale}"
    else:
        plan.code = candidate.code
    return plan


def submitted(proposer, history, top):
    """``(selected, note)``: the submitter's choice when it is a verified, not quarantined
    attempt of this search; else the best verified CV attempt ``top``, and the note says why."""
    if not any(a.selectable for a in history):
        return top, "no verified attempt to choose from: the submitter was not asked"
    fallback = "the best verified CV attempt is selected"
    try:
        choice, why = proposer.submit(history)
    except Exception as exc:  # noqa: BLE001 - any submitter failure means the same here
        return top, f"submitter failed ({type(exc).__name__}: {exc}); {fallback}"
    chosen = next((a for a in history if a.index == choice), None)
    if chosen is None:
        return top, f"submitter chose attempt {choice!r}, which does not exist; {fallback}"
    if not chosen.selectable:
        return top, (f"submitter chose attempt {choice}, which is {chosen.status} "
                     f"({chosen.verdict.reason[:200]}); {fallback}")
    return chosen, f"submitter chose attempt {choice}: {why}"
