"""Code mode in the engine: an LLM-written ``candidate.py`` cross-validated in the sandbox on
the engine's own folds, one fresh container per fold holding that fold's training rows (with
labels) and its validation rows' features (without). The engine scores each fold's returned
predictions against labels only it holds (the candidate never reports a score and never sees
the labels it is scored on). The selected candidate is refit in one more container; the host
keeps its pickle as bytes and predicts through the sandbox (``SandboxedModel``): no
LLM-written code runs on the host."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from mlflow_agentic.core.labels import labels_of
from mlflow_agentic.core.protocol import CodeModeProposer
from mlflow_agentic.core.types import is_classification
from mlflow_agentic.engine.evaluate.outcome import Outcome
from mlflow_agentic.sandbox.job import SandboxFailed, SandboxJob, SandboxResult
from mlflow_agentic.sandbox.model import SandboxedModel
from mlflow_agentic.sandbox.runners import run_all

if TYPE_CHECKING:
    from sklearn.pipeline import Pipeline

    from mlflow_agentic.core.metrics import Metric
    from mlflow_agentic.core.types import AttemptRecord, SolutionCandidate
    from mlflow_agentic.data import Dataset
    from mlflow_agentic.engine.evaluate.cv import Splits
    from mlflow_agentic.engine.evaluate.outcome import Planned
    from mlflow_agentic.sandbox.runners import Sandbox

CODE = "code"
"""The trainer name of a code-mode attempt (not in the registry: the candidate is its code)."""
EXAMPLE_ROWS = 5
"""Training rows the refit container also predicts: the logged model's input example."""


def input_step(dataset: Dataset, dropped: Sequence[str] = ()) -> Pipeline:
    """``Pipeline(inputs, features)``, fitted: the raw columns a request may send, and the
    feature columns the candidate reads (``dropped``: removed by the critic's pivot)."""
    from sklearn.pipeline import Pipeline

    from mlflow_agentic.trainers.transforms import CodeInputs, InputColumns

    kept = [c for c in dataset.feature_columns if c not in set(dropped)]
    numeric = [c for c in kept if dataset.columns[c].kind == "numeric"]
    unused = sorted(set(dataset.excluded_columns) | set(dropped))
    return Pipeline([("inputs", InputColumns(unused=unused)),
                     ("features", CodeInputs(kept, numeric))]).fit(dataset.X)


def dropped_columns(candidate: SolutionCandidate) -> list[str]:
    """The columns a code candidate runs without (the critic's pivot), from its params."""
    value = (getattr(candidate, "params", None) or {}).get("dropped_columns") or "none"
    return [] if value == "none" else [c for c in str(value).split(",") if c]


def classes_of(dataset: Dataset) -> tuple:
    return tuple(dataset.classes) if is_classification(dataset.task) else ()


def required_sandbox(sandbox: Sandbox | None, what: str) -> Sandbox:
    """The sandbox a code candidate ``what`` (runs, is refit) in; none is an error."""
    if sandbox is None:
        raise SandboxFailed(f"a code-mode candidate {what} in its sandbox: none was given")
    return sandbox


def evaluate_code(sandbox: Sandbox | None, dataset: Dataset, splits: Splits, metric: Metric,
                  code: str, dropped: Sequence[str] = (),
                  parallel: int = 1) -> tuple[Outcome, SandboxResult]:
    """Run ``code`` in ``sandbox`` (``DockerSandbox`` or ``HostSandbox``), one job per fold
    (``parallel`` at a time); a failure in any fold is the outcome's error, with its stage."""
    sandbox = required_sandbox(sandbox, "runs")
    y = dataset.y.to_numpy()
    features = input_step(dataset, dropped).transform(dataset.X)
    classes = classes_of(dataset)
    jobs = [SandboxJob(code, dataset.task, classes, train=features.iloc[np.asarray(train)],
                       target=y[np.asarray(train)], rows=features.iloc[np.asarray(test)])
            for train, test in splits]
    results = run_all(sandbox, jobs, parallel)
    result = SandboxResult.combine(results)
    wall = max(r.seconds for r in results)
    if not result.ok:
        return Outcome(error=f"{result.stage}: {result.error}", traceback=result.traceback,
                       fit_seconds=result.seconds, seconds=wall), result
    oof = np.zeros((len(y), len(classes)) if classes else len(y))
    scores = []
    for (_, test), fold in zip(splits, results, strict=True):
        out = fold.predictions
        assert out is not None, "a fold's checked result holds its predictions"
        oof[np.asarray(test)] = out
        if classes:
            pred = labels_of(out, classes)
            scores.append(metric.score(y[test], pred, out, classes))
        else:
            scores.append(metric.score(y[test], out))
    return Outcome(fold_scores=scores, fit_seconds=result.seconds, seconds=wall,
                   oof=oof), result


def refit_code(sandbox: Sandbox | None, dataset: Dataset, code: str,
               dropped: Sequence[str] = ()) -> SandboxedModel:
    """The selected candidate refit on all training rows in a fresh container; the host keeps
    the pickle as bytes. The container also predicts the first rows (the input example)."""
    sandbox = required_sandbox(sandbox, "is refit")
    inputs = input_step(dataset, dropped)
    features = inputs.transform(dataset.X)
    example = dataset.X.head(EXAMPLE_ROWS)
    result = sandbox.run(SandboxJob(code, dataset.task, classes_of(dataset), train=features,
                                    target=dataset.y.to_numpy(), save_model=True,
                                    rows=inputs.transform(example)))
    if not result.ok:
        raise SandboxFailed(f"the sandbox refit failed at {result.stage}: {result.error}")
    if result.model_bytes is None or result.predictions is None:
        raise SandboxFailed("the sandbox refit returned no model or no predictions")
    model = SandboxedModel(sandbox, code, result.model_bytes, inputs, dataset.task,
                           classes_of(dataset), result.features)
    model.remember(example, result.predictions)
    model.seconds = result.seconds
    return model


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


def code_plan(candidate: SolutionCandidate, sandbox: Sandbox | None) -> Planned:
    """A code candidate ready for the sandbox, or failed already (no sandbox, no code)."""
    from mlflow_agentic.engine.evaluate.outcome import Planned

    plan = Planned(candidate, params=dict(candidate.params))
    if sandbox is None:
        plan.error = ("SandboxUnavailable: code candidates run only in a sandbox; pass one "
                      "(mlflow_agentic.sandbox.make_sandbox)")
    elif not (candidate.code or "").strip():
        plan.error = f"CoderFailed: the coder wrote no candidate.py: {candidate.rationale}"
    else:
        plan.code = candidate.code
    return plan


def submitted(proposer: CodeModeProposer, history: list[AttemptRecord],
              top: AttemptRecord | None) -> tuple[AttemptRecord | None, str]:
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


GENERATED_HEADER = (
    "# Written by an LLM in mlflow-agentic's code mode. The search ran it only inside a Docker\n"
    "# sandbox (no network, read-only, limited time and memory); running or importing it here\n"
    "# runs that code on this machine with your rights. Read it first.\n\n")
"""The first lines of a code attempt's ``candidate.py`` as its run keeps it."""


def reviewed(proposer: Any, record: AttemptRecord, outcome: Outcome) -> AttemptRecord:
    """A code attempt with what its run keeps (the code, the plan entry, the sandbox's limits
    and log), reviewed by the proposer (code mode's critic: a note, never the score)."""
    import dataclasses
    import warnings

    result = outcome.sandbox
    artifacts = {"candidate.py": GENERATED_HEADER + (record.candidate.code or ""),
                 **record.candidate.artifacts}
    tags: dict[str, str] = {}
    if result is not None:
        artifacts.update(sandbox_artifacts(result))
        tags.update(sandbox_tags(result))
    try:
        note = (proposer.review(record, list(result.features) if result is not None else [])
                if isinstance(proposer, CodeModeProposer) else None)
    except Exception as exc:  # a broken critic accepts the attempt
        warnings.warn(f"critic failed on attempt {record.index}: {exc}", stacklevel=2)
        note = None
    if note is not None:
        artifacts.update(note.artifacts)
        tags.update(note.tags)
    return dataclasses.replace(record, artifacts={**record.artifacts, **artifacts},
                               tags={**record.tags, **tags})
