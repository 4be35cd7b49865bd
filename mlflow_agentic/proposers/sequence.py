"""``SequenceProposer``: a fixed list of candidates; the first is the seed."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlflow_agentic.core.errors import UserInputError
from mlflow_agentic.core.protocol import CandidateProposer
from mlflow_agentic.core.types import AttemptRecord, SolutionCandidate

if TYPE_CHECKING:
    from mlflow_agentic.core.dataset_like import DatasetLike


class SequenceProposer(CandidateProposer):
    """Proposes ``candidates[0]`` as the seed, then one more per ``propose_next``."""

    name = "sequence"

    def __init__(self, candidates: Iterable[SolutionCandidate | dict | str]) -> None:
        self.candidates = [_as_candidate(c) for c in candidates]
        if not self.candidates:
            raise UserInputError("SequenceProposer needs at least one candidate")
        self._next = 1

    @classmethod
    def defaults(cls, trainers: Sequence[str]) -> SequenceProposer:
        """Every trainer once, at its default hyperparameters, in the given order."""
        return cls([SolutionCandidate(t, {}, "trainer defaults") for t in trainers])

    @classmethod
    def from_file(cls, path: str | Path) -> SequenceProposer:
        """Candidates from a JSON file: ``[{"trainer": "xgboost", "params": {...}}, ...]``."""
        path = Path(path)
        if not path.exists():
            raise UserInputError(f"candidates file not found: {path}")
        try:
            items = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise UserInputError(f"candidates file {path} is not valid JSON: {exc}") from exc
        if not isinstance(items, list):
            raise UserInputError(f"candidates file {path} must hold a JSON list of objects like "
                                 '{"trainer": "xgboost", "params": {"max_depth": 4}}')
        return cls(items)

    def propose_initial(self, dataset: DatasetLike,
                        trainers: Sequence[str]) -> list[SolutionCandidate]:
        self._next = 1
        return [self.candidates[0]]

    def propose_next(self, dataset: DatasetLike, history: Sequence[AttemptRecord],
                     trainers: Sequence[str]) -> SolutionCandidate | None:
        if self._next >= len(self.candidates):
            return None
        candidate = self.candidates[self._next]
        self._next += 1
        return candidate


def _as_candidate(item: Any) -> SolutionCandidate:
    if isinstance(item, SolutionCandidate):
        return item
    if isinstance(item, str):
        return SolutionCandidate(item, {}, "trainer defaults")
    if isinstance(item, dict):
        unknown = set(item) - {"trainer", "params", "rationale"}
        if "trainer" not in item or unknown:
            raise UserInputError(
                f"cannot read candidate {item!r}: expected keys trainer, params (optional), "
                f"rationale (optional)" + (f"; unknown: {', '.join(sorted(unknown))}"
                                           if unknown else ""))
        params = item.get("params") or {}
        if not isinstance(params, dict):
            raise UserInputError(f"params of candidate {item!r} must be an object of "
                                 f"name -> value, got {type(params).__name__}")
        return SolutionCandidate(str(item["trainer"]), params, str(item.get("rationale", "")))
    raise UserInputError(f"cannot read candidate {item!r}: expected a SolutionCandidate, a dict "
                         "or a trainer name")
