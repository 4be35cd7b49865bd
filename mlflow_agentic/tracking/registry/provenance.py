"""Where a model version's evidence comes from: the runs its search recorded, never the tags on
the version (anyone who can register a model can write those).

A version counts only when its source run is an attempt run (``agentic.role=attempt``) of a
search run (``agentic.role=search``) that itself records registering exactly this version, and
the version's artifact is the model logged on that attempt run. Its evidence (verdict, CV,
holdout, gap, the holdout digest) is read from those runs' metrics and tags; a version tag that
says otherwise is named as a disagreement, and the gate refuses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mlflow.exceptions import MlflowException

from mlflow_agentic.core import evidence as ev

if TYPE_CHECKING:
    from mlflow import MlflowClient
    from mlflow.entities import Run
    from mlflow.entities.model_registry import ModelVersion

COMPARED = (ev.METRIC, ev.VERDICT_STATUS, ev.HOLDOUT_DIGEST, ev.SELF_DECEIVED)
"""Evidence compared as text; scores (CV, holdout, gap, baseline) are compared as numbers."""
TOLERANCE = 5e-5
"""Version tags and runs hold scores to 4 decimals (``evidence.shown``); half a unit of the
last one apart is the same score."""


@dataclass
class Provenance:
    """``evidence``: in the gate's tag names, read from the runs. ``problems``: why the version
    cannot be trusted (no runs behind it, or its tags disagree with them)."""

    evidence: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    search_run_id: str | None = None

    @property
    def trusted(self) -> bool:
        return not self.problems


def provenance(client: MlflowClient, version: ModelVersion) -> Provenance:
    """The evidence of ``version`` (an MLflow ``ModelVersion``) from its runs."""
    name, number = version.name, str(version.version)
    where = f"version {number} of {name!r}"
    attempt = _run(client, version.run_id)
    if attempt is None:
        return Provenance(problems=[f"{where} has no source run in this tracking store: it was "
                                    "not registered by an mlflow-agentic search"])
    tags = attempt.data.tags
    parent = _run(client, tags.get("mlflow.parentRunId"))
    if tags.get("agentic.role") != "attempt" or parent is None \
            or parent.data.tags.get("agentic.role") != "search":
        return Provenance(problems=[f"{where}'s source run {attempt.info.run_id} is not an "
                                    "attempt of an mlflow-agentic search run"])
    search = parent.data.tags
    problems = []
    if (search.get("registered_model"), search.get("registered_version")) != (name, number):
        problems.append(
            f"search run {parent.info.run_id} records registering "
            f"{search.get('registered_model', 'nothing')} version "
            f"{search.get('registered_version', '-')}, not {where}")
    logged = tags.get("model_uri")
    if logged is None or logged != version.source:
        problems.append(f"{where} holds {version.source}, not the model its source run "
                        f"logged ({logged or 'none'})")
    evidence = _evidence(attempt, parent)
    problems += disagreements(dict(version.tags), evidence)
    return Provenance(evidence, problems, parent.info.run_id)


def generated_code(attempt: Run) -> bool:
    """Whether the attempt's model is LLM-written code: its ``code_sha256`` param (params
    cannot be changed once logged; a tag can, so ``trainer=linear`` alone proves nothing)."""
    return "code_sha256" in attempt.data.params or attempt.data.tags.get("trainer") == "code"


def _evidence(attempt: Run, search: Run) -> dict[str, str]:
    """The gate's evidence names, filled from the attempt run and its search run."""
    metric = search.data.tags.get("metric", "")
    values = attempt.data.metrics
    evidence = {ev.METRIC: metric, ev.VERDICT_STATUS: attempt.data.tags.get("verdict", ""),
                ev.QUARANTINED: str(attempt.data.tags.get("verdict") == "quarantined").lower(),
                ev.SEARCH_RUN_ID: search.info.run_id, ev.RUN_ID: attempt.info.run_id,
                ev.TARGET: search.data.tags.get("target", ""),
                ev.TASK: search.data.tags.get("task", ""),
                ev.GENERATED_CODE: str(generated_code(attempt)).lower()}
    for key in (ev.cv(metric), ev.holdout(metric), ev.GAP):
        if key in values:
            evidence[key] = f"{values[key]:.4f}"
    baseline = search.data.metrics.get(ev.baseline(metric))
    if baseline is not None:
        evidence[ev.baseline(metric)] = f"{baseline:.6f}"
    for key in (ev.MODEL_SHA256, ev.EVIDENCE_MODEL_URI, ev.EVIDENCE_MODEL_SHA256,
                ev.SERVED_ROWS):  # params: they cannot be changed once logged
        if key in attempt.data.params:
            evidence[key] = attempt.data.params[key]
    if ev.SELF_DECEIVED in attempt.data.tags:
        evidence[ev.SELF_DECEIVED] = attempt.data.tags[ev.SELF_DECEIVED]
    holdout = search.data.tags.get("holdout", "")
    if "digest " in holdout:
        evidence[ev.HOLDOUT_DIGEST] = holdout.rsplit("digest ", 1)[1].strip()
    return evidence


def disagreements(tags: dict[str, str], evidence: dict[str, str]) -> list[str]:
    """Each version tag that says something other than the runs, named with both values."""
    found = []
    for key, recorded in evidence.items():
        if key not in tags or key in (ev.SEARCH_RUN_ID, ev.RUN_ID, ev.GENERATED_CODE,
                                      ev.MODEL_SHA256, ev.EVIDENCE_MODEL_URI,
                                      ev.EVIDENCE_MODEL_SHA256, ev.SERVED_ROWS):
            continue
        claimed = tags[key]
        if key in COMPARED or key in (ev.TARGET, ev.TASK, ev.QUARANTINED):
            same = claimed == recorded
        else:
            same = _close(claimed, recorded)
        if not same:
            found.append(f"tag {key}={claimed} disagrees with the runs ({recorded})")
    for key in (ev.SEARCH_RUN_ID, ev.RUN_ID):
        if key in tags and tags[key] != evidence.get(key):
            found.append(f"tag {key}={tags[key]} disagrees with the runs "
                         f"({evidence.get(key)})")
    return found


def _close(a: str, b: str) -> bool:
    try:
        x, y = float(a), float(b)
    except (TypeError, ValueError):
        return a == b
    return (math.isnan(x) and math.isnan(y)) or abs(x - y) <= TOLERANCE


def _run(client: MlflowClient, run_id: str | None) -> Run | None:
    if not run_id:
        return None
    try:
        return client.get_run(run_id)
    except MlflowException:
        return None
