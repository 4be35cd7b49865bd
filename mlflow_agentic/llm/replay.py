"""Record/replay: a client that answers with recorded exchanges, in order, with no network."""

from __future__ import annotations

import json
from pathlib import Path

from mlflow_agentic.errors import UserInputError
from mlflow_agentic.llm.client import LLMConfig, LLMOutputError, LLMReply, LLMUnavailable

EXCHANGES_ARTIFACT = "llm_exchanges.jsonl"


def read_exchanges(path: str | Path) -> list[dict]:
    path = Path(path)
    if not path.exists():
        raise UserInputError(f"replay file not found: {path}")
    try:
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    except json.JSONDecodeError as exc:
        raise UserInputError(f"replay file {path} is not JSON lines: {exc}") from exc


class ReplayClient:
    """Implements ``complete_json`` like ``LLMClient``, from a recording."""

    def __init__(self, exchanges: list[dict]) -> None:
        self.exchanges = list(exchanges)
        self.position = 0
        first = next((e for e in self.exchanges if e.get("model")), {})
        self.config = LLMConfig(model=first.get("model", "replay"), base_url="replay")

    def complete_json(self, messages, schema, name: str = "proposal") -> LLMReply:
        if self.position >= len(self.exchanges):
            raise LLMUnavailable("replay: no more recorded exchanges")
        rec = self.exchanges[self.position]
        self.position += 1
        error = rec.get("error")
        if error and error.startswith("unavailable"):
            raise LLMUnavailable(f"replay: {error}")
        if error and error.startswith("unreadable"):
            raise LLMOutputError(f"replay: {error}", LLMReply({}, rec.get("text", ""),
                                                              rec.get("mode", "replay")))
        if error and error.startswith("skipped"):
            raise LLMUnavailable(f"replay: {error}")
        from mlflow_agentic.llm.client import extract_json

        try:
            data = extract_json(rec.get("text", ""))
        except LLMOutputError as exc:
            raise LLMOutputError(str(exc), LLMReply({}, rec.get("text", ""), "replay")) from None
        return LLMReply(data, rec.get("text", ""),
                        rec.get("mode", "replay"), rec.get("prompt_tokens", 0),
                        rec.get("completion_tokens", 0), 0.0, 1, [])
