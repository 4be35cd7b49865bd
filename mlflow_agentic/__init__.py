"""mlflow-agentic: a proposer suggests, a deterministic engine verifies, MLflow remembers.

The front door is ``search(data, ...)``: the same honest search as ``mlflow-agentic run``
(sealed holdout, briefing, verified best registered with its evidence). Names are imported on
first use, so ``import mlflow_agentic`` (and the CLI's ``--help``) stays instant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mlflow_agentic.core.lazy import lazy_getattr
from mlflow_agentic.core.version import __version__

_EXPORTS = {
    "search": "mlflow_agentic.frontdoor.api",
    "run_search": "mlflow_agentic.frontdoor.orchestrator",
    "SearchResult": "mlflow_agentic.frontdoor.orchestrator",
    "SplitOptions": "mlflow_agentic.frontdoor.orchestrator",
    "Dataset": "mlflow_agentic.data",
    "LLMOptions": "mlflow_agentic.proposers.factory",
    "CandidateProposer": "mlflow_agentic.proposers",
    "OptunaProposer": "mlflow_agentic.proposers",
    "RandomProposer": "mlflow_agentic.proposers",
    "SequenceProposer": "mlflow_agentic.proposers",
    "SolutionCandidate": "mlflow_agentic.core.types",
    "AttemptRecord": "mlflow_agentic.core.types",
    "EngineeringRun": "mlflow_agentic.core.types",
    "StopKind": "mlflow_agentic.core.types",
    "StopReason": "mlflow_agentic.core.types",
    "Verdict": "mlflow_agentic.core.types",
    "DeterministicVerifier": "mlflow_agentic.verify",
    "AgenticError": "mlflow_agentic.core.errors",
    "ProposerOutputError": "mlflow_agentic.core.errors",
    "SandboxError": "mlflow_agentic.core.errors",
    "UserInputError": "mlflow_agentic.core.errors",
}
"""Public name -> module. The engine loop itself (``AgenticAutoML``) is not here on purpose:
it has no holdout and registers nothing; it lives in ``mlflow_agentic.engine``."""

__all__ = [
    "AgenticError",
    "AttemptRecord",
    "CandidateProposer",
    "Dataset",
    "DeterministicVerifier",
    "EngineeringRun",
    "LLMOptions",
    "OptunaProposer",
    "ProposerOutputError",
    "RandomProposer",
    "SandboxError",
    "SearchResult",
    "SequenceProposer",
    "SolutionCandidate",
    "SplitOptions",
    "StopKind",
    "StopReason",
    "UserInputError",
    "Verdict",
    "__version__",
    "run_search",
    "search",
]

if TYPE_CHECKING:
    from mlflow_agentic.core.errors import (
        AgenticError,
        ProposerOutputError,
        SandboxError,
        UserInputError,
    )
    from mlflow_agentic.core.types import (
        AttemptRecord,
        EngineeringRun,
        SolutionCandidate,
        StopKind,
        StopReason,
        Verdict,
    )
    from mlflow_agentic.data import Dataset
    from mlflow_agentic.frontdoor.api import search
    from mlflow_agentic.frontdoor.orchestrator import SearchResult, SplitOptions, run_search
    from mlflow_agentic.proposers import (
        CandidateProposer,
        OptunaProposer,
        RandomProposer,
        SequenceProposer,
    )
    from mlflow_agentic.proposers.factory import LLMOptions
    from mlflow_agentic.verify import DeterministicVerifier


__getattr__ = lazy_getattr(__name__, _EXPORTS)

def __dir__() -> list[str]:
    return __all__
