"""Build a proposer by name: the one place the CLI's `run` and `compare` turn a name into one."""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mlflow_agentic.core.errors import ProposerOutputError, UserInputError

if TYPE_CHECKING:
    from mlflow_agentic.core.dataset_like import DatasetLike
    from mlflow_agentic.core.protocol import CandidateProposer
    from mlflow_agentic.proposers.sequence import SequenceProposer
    from mlflow_agentic.sandbox.runners import Limits, Sandbox

PROPOSERS = ("optuna", "sequence", "llm", "random", "code")


@dataclass
class LLMOptions:
    """How to reach the LLM (or replay it): model, endpoint, cost cap, recorded exchanges."""

    model: str | None = None
    base_url: str | None = None
    max_cost_usd: float | None = None
    recording: list[dict] | None = None
    resumed: Sequence[dict[str, Any]] | None = None
    """A resumed search's recorded calls (``--resume``): replayed first, then the endpoint."""

    def __post_init__(self) -> None:
        cap = self.max_cost_usd
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, (int, float))
                                or not math.isfinite(cap) or cap < 0):
            raise UserInputError(f"max cost {cap!r}: expected a number of US dollars >= 0")


@dataclass
class CodeOptions:
    """Code mode (``--proposer code``): the roles' budget and critic, and where candidates run.
    ``limits``: a ``sandbox.Limits`` (default: 2 GB, 2 CPUs, 10 minutes per candidate)."""

    critic_model: str | None = None
    max_experiments: int = 4
    allow_host_execution: bool = False
    image: str | None = None
    limits: Limits | None = None

    def __post_init__(self) -> None:
        if isinstance(self.max_experiments, bool) or not isinstance(self.max_experiments, int) \
                or self.max_experiments < 1:
            raise UserInputError(f"max experiments {self.max_experiments!r}: expected a whole "
                                 "number >= 1")

    def sandbox(self) -> Sandbox:
        """The sandbox, checked now (fail closed: no Docker, no code mode, unless host
        execution is allowed)."""
        from mlflow_agentic.sandbox import SandboxUnavailable, make_sandbox

        try:
            return make_sandbox(self.allow_host_execution, self.image, self.limits)
        except SandboxUnavailable as exc:
            raise UserInputError(str(exc)) from exc


def build_proposer(name: str, *, seed: int, trainers: Sequence[str], dataset: DatasetLike,
                   candidates: str | None = None, optuna_storage: str | None = None,
                   llm: LLMOptions | None = None, code: CodeOptions | None = None,
                   portfolio: str = "builtin") -> CandidateProposer:
    """A fresh proposer. Call it only after the holdout is sealed."""
    from mlflow_agentic.proposers import OptunaProposer, RandomProposer, SequenceProposer

    if name == "code":
        from mlflow_agentic.proposers.code import CodeProposer

        llm, code = llm or LLMOptions(), code or CodeOptions()
        return CodeProposer(llm.model, llm.base_url, critic_model=code.critic_model,
                            max_experiments=code.max_experiments,
                            max_cost_usd=llm.max_cost_usd, seed=seed,
                            resumed=llm.resumed or ())

    if name == "llm":
        from mlflow_agentic.proposers.llm import LLMProposer

        llm = llm or LLMOptions()
        if llm.recording is not None:
            return LLMProposer.replay(llm.recording, seed=seed)
        if importlib.util.find_spec("openai") is None:
            raise UserInputError("the llm proposer needs the openai package: "
                                 "pip install -e '.[llm]'")
        return LLMProposer(model=llm.model, base_url=llm.base_url,
                           max_cost_usd=llm.max_cost_usd, seed=seed, resumed=llm.resumed or ())
    if name == "optuna":
        return OptunaProposer(seed=seed, storage=optuna_storage, portfolio=portfolio)
    if name == "random":
        return RandomProposer(seed=seed)
    if name != "sequence":
        raise UserInputError(f"unknown proposer {name!r}; choose from {', '.join(PROPOSERS)}")
    if not candidates:
        return SequenceProposer.defaults(trainers)
    return load_candidates(candidates, trainers, dataset)


def check_llm_endpoint(llm: LLMOptions, hint: str, proposer: str = "llm") -> None:
    """Fail before anything is logged when the openai SDK is missing or the endpoint does not
    answer at all; ``hint`` says what the user can do instead."""
    if importlib.util.find_spec("openai") is None:
        extras = "llm,sandbox" if proposer == "code" else "llm"
        raise UserInputError(f"the {proposer} proposer needs the openai package: "
                             f"pip install -e '.[{extras}]'")
    from mlflow_agentic.llm.client import LLMClient, LLMConfig, LLMUnavailable

    try:
        LLMClient(LLMConfig(llm.model, llm.base_url)).check_reachable()
    except LLMUnavailable as exc:
        raise UserInputError(f"{exc}. {hint}") from exc


def load_candidates(path: str, trainers: Sequence[str],
                    dataset: DatasetLike) -> SequenceProposer:
    """A sequence proposer from a JSON file, every candidate checked against the trainers."""
    from mlflow_agentic.proposers import SequenceProposer
    from mlflow_agentic.trainers import get_trainer

    proposer = SequenceProposer.from_file(path)
    for i, cand in enumerate(proposer.candidates, start=1):
        if cand.trainer not in trainers:
            raise UserInputError(f"{path}: candidate {i} uses trainer {cand.trainer!r}, "
                                 f"not among the allowed trainers: {', '.join(trainers)}")
        try:
            get_trainer(cand.trainer).resolve_params(dataset, cand.params)
        except ProposerOutputError as exc:
            raise UserInputError(f"{path}: candidate {i}: {exc}") from exc
    return proposer
