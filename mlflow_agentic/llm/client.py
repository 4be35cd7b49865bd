"""The one place that talks to an LLM: the ``openai`` SDK against any OpenAI-compatible endpoint.

Structured output degrades gracefully: ``json_schema`` (strict), then ``json_object`` with the
schema (llama.cpp's server), then plain text with the JSON extracted. Transient failures
(timeouts, 429, 5xx, connection refused) are retried with backoff a bounded number of times.
"""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mlflow_agentic.core.threads import in_background

if TYPE_CHECKING:
    from openai import OpenAI

MODES = ("json_schema", "json_object", "text")


class LLMUnavailable(Exception):
    """The endpoint kept failing (transiently) past the retry budget."""


class CallTimedOut(Exception):
    """One attempt got no whole answer in its time (a server that trickles, or stalls)."""


class LLMOutputError(Exception):
    """The endpoint answered, but not with JSON we can read. ``reply`` (when the endpoint
    answered at all) carries the text and token counts, for the re-ask and the accounting."""

    def __init__(self, message: str, reply: LLMReply | None = None) -> None:
        super().__init__(message)
        self.reply = reply


@dataclass
class LLMConfig:
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    timeout: float = 60.0
    max_attempts: int = 4
    backoff: float = 0.5
    max_tokens: int = 600
    """A proposal is a small JSON object; the cap stops a local model that never closes it from
    generating until the context is full (and the server from working on after a timeout)."""
    seed: int | None = None
    """Sent with each request: servers that honour it (llama.cpp, vLLM, OpenAI best-effort)
    sample reproducibly."""

    def resolved(self) -> LLMConfig:
        """Arguments first, then OPENAI_BASE_URL / OPENAI_API_KEY / MLFLOW_AGENTIC_LLM_MODEL."""
        return LLMConfig(
            model=self.model or os.environ.get("MLFLOW_AGENTIC_LLM_MODEL") or "gpt-4o-mini",
            base_url=self.base_url or os.environ.get("OPENAI_BASE_URL"),
            api_key=self.api_key or os.environ.get("OPENAI_API_KEY") or "not-needed",
            timeout=self.timeout, max_attempts=self.max_attempts, backoff=self.backoff,
            max_tokens=self.max_tokens, seed=self.seed)


@dataclass
class LLMReply:
    data: dict[str, Any]
    text: str
    mode: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    attempts: int = 1
    errors: list[str] = field(default_factory=list)
    replayed_trace: str | None = None
    """Set when the reply was read back from a resumed search's trace (its id), not asked."""


def extract_json(text: str) -> dict[str, Any]:
    """The first JSON object in ``text`` (models wrap it in prose or code fences)."""
    decoder = json.JSONDecoder()
    for start in (i for i, ch in enumerate(text) if ch == "{"):
        try:
            value, _ = decoder.raw_decode(text[start:])
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    if not text.strip():
        raise LLMOutputError("the answer was empty")
    raise LLMOutputError(f"no JSON object in the answer: {text[:200]!r}")


class LLMClient:
    """Chat completions returning a JSON object; the SDK client is created on first use."""

    def __init__(self, config: LLMConfig | None = None) -> None:
        self.config = (config or LLMConfig()).resolved()
        self.mode = MODES[0]
        self._client: OpenAI | None = None

    @property
    def client(self) -> OpenAI:
        if self._client is None:
            try:
                from openai import OpenAI
            except ImportError as exc:  # optional dependency
                raise ImportError("the LLM proposer needs the openai package: "
                                  "pip install 'mlflow-agentic[llm]'") from exc
            self._client = OpenAI(base_url=self.config.base_url, api_key=self.config.api_key,
                                  timeout=self.config.timeout, max_retries=0)
        return self._client

    def complete_json(self, messages: list[dict], schema: dict, name: str = "proposal",
                      deadline: float | None = None) -> LLMReply:
        """One JSON answer. Each attempt may take ``config.timeout`` seconds in all (not per
        read: a server that trickles a byte every 2 s is cut there), and every attempt ends by
        ``deadline`` (a ``time.perf_counter()`` value: the search's time budget)."""
        import openai

        errors: list[str] = []
        started = time.perf_counter()
        attempt = 0
        while True:
            attempt += 1
            try:
                response = self._create(messages, schema, name, deadline)
            except openai.APIStatusError as exc:
                errors.append(f"{self.mode}: HTTP {exc.status_code}")
                if self._downgrade(exc):
                    attempt -= 1  # a capability probe, not a failure
                    continue
                if exc.status_code != 429 and exc.status_code < 500:
                    raise LLMUnavailable(f"HTTP {exc.status_code}: {exc}") from exc
            except (openai.APITimeoutError, openai.APIConnectionError) as exc:
                errors.append(f"{type(exc).__name__}")
            except CallTimedOut as exc:
                errors.append(f"APITimeoutError ({exc})")
            else:
                text = response.choices[0].message.content or ""
                usage = response.usage
                reply = LLMReply({}, text, self.mode, getattr(usage, "prompt_tokens", 0) or 0,
                                 getattr(usage, "completion_tokens", 0) or 0,
                                 time.perf_counter() - started, attempt, errors)
                try:
                    reply.data = json.loads(text) if self.mode != "text" and _is_json(text) \
                        else extract_json(text)
                except LLMOutputError as exc:
                    raise LLMOutputError(str(exc), reply) from None
                return reply
            pause = self.config.backoff * 2 ** (attempt - 1)
            if attempt >= self.config.max_attempts:
                raise LLMUnavailable(f"gave up after {attempt} attempts: {'; '.join(errors)}")
            if deadline is not None and time.perf_counter() + pause >= deadline:
                raise LLMUnavailable(f"the time budget ran out after {attempt} attempt(s): "
                                     f"{'; '.join(errors)}")
            time.sleep(pause)

    def _create(self, messages: list[dict], schema: dict, name: str,
                deadline: float | None) -> Any:
        """The SDK call in a thread, waited for ``config.timeout`` at most (cut at
        ``deadline``); past that the connection is closed under it and the attempt counts as
        timed out."""
        wait = self.config.timeout
        if deadline is not None:
            wait = max(0.0, min(wait, deadline - time.perf_counter()))
        client = self.client
        call = in_background("mlflow-agentic-llm-call", client.chat.completions.create,
                             model=self.config.model, messages=messages, temperature=0.2,
                             max_tokens=self.config.max_tokens, **self._format(schema, name),
                             **self._seed())
        try:
            return call.result(timeout=wait)
        except BaseException as exc:  # timed out, or Ctrl-C: the stuck read ends with its
            self._client = None  # connection, and the next call opens a fresh one
            client.close()
            if isinstance(exc, FutureTimeout):
                raise CallTimedOut(f"no whole answer within {wait:.1f}s") from None
            raise

    def check_reachable(self) -> None:
        """Fail fast (before a long comparison) when the endpoint does not answer at all."""
        import openai

        try:
            self.client.with_options(timeout=min(self.config.timeout, 10.0)).models.list()
        except openai.APIStatusError:
            return  # it answers; some servers just lack /models
        except (openai.APITimeoutError, openai.APIConnectionError) as exc:
            where = self.config.base_url or "https://api.openai.com/v1"
            raise LLMUnavailable(f"no answer from the LLM endpoint {where}: "
                                 f"{type(exc).__name__}: {str(exc).rstrip('.')}") from exc

    def _seed(self) -> dict:
        return {} if self.config.seed is None else {"seed": self.config.seed}

    def _format(self, schema: dict, name: str) -> dict:
        if self.mode == "json_schema":
            return {"response_format": {"type": "json_schema", "json_schema": {
                "name": name, "schema": schema, "strict": True}}}
        if self.mode == "json_object":
            return {"response_format": {"type": "json_object", "schema": schema}}
        return {}

    def _downgrade(self, exc: Any) -> bool:
        """A server that rejects a response_format gets the next simpler one, once."""
        if self.mode == "text" or exc.status_code == 429 or exc.status_code in (502, 503, 504):
            return False
        self.mode = MODES[MODES.index(self.mode) + 1]
        return True


def _is_json(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except json.JSONDecodeError:
        return False

