"""Record/replay: a client that answers with recorded exchanges, in order, with no network
(``--replay``), or then hands over to a live client (``--resume`` of an LLM search)."""

from __future__ import annotations

import json
from pathlib import Path

from mlflow_agentic.core.errors import UserInputError
from mlflow_agentic.llm.client import (
    LLMClient,
    LLMConfig,
    LLMOutputError,
    LLMReply,
    LLMUnavailable,
    extract_json,
)

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
    """Implements ``complete_json`` like ``LLMClient``, from a recording; past its end, ``then``
    (a live client) answers, or the endpoint counts as gone."""

    def __init__(self, exchanges: list[dict],
                 then: LLMClient | ReplayClient | None = None) -> None:
        self.exchanges = list(exchanges)
        self.position = 0
        self.then = then
        first = next((e for e in self.exchanges if e.get("model")), {})
        self.config: LLMConfig = then.config if then is not None else LLMConfig(
            model=first.get("model", "replay"), base_url="replay")

    def complete_json(self, messages: list[dict], schema: dict, name: str = "proposal",
                      deadline: float | None = None) -> LLMReply:
        if self.position >= len(self.exchanges):
            if self.then is not None:
                return self.then.complete_json(messages, schema, name, deadline=deadline)
            raise LLMUnavailable("replay: no more recorded exchanges")
        rec = self.exchanges[self.position]
        self.position += 1
        error = rec.get("error") or ""
        if error.startswith(("unavailable", "skipped")):
            raise LLMUnavailable(f"replay: {error}")
        reply = LLMReply({}, rec.get("text", ""), rec.get("mode", "replay"),
                         rec.get("prompt_tokens", 0), rec.get("completion_tokens", 0),
                         replayed_trace=rec.get("trace_id"))
        if error.startswith("unreadable"):
            raise LLMOutputError(f"replay: {error}", reply)
        try:
            reply.data = extract_json(reply.text)
        except LLMOutputError as exc:
            raise LLMOutputError(str(exc), reply) from None
        return reply
