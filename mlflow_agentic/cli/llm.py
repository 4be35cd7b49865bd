"""``mlflow-agentic llm serve-local``: a local OpenAI-compatible LLM for the LLM proposer."""

from __future__ import annotations

import collections
import os
import subprocess
import sys
import threading
import time
from typing import IO

import click

from mlflow_agentic.cli.foreground import foreground
from mlflow_agentic.cli.options import exit_on_user_error


@click.group("llm")
def llm_group() -> None:
    """A local LLM to try the LLM proposer and comparisons with no account."""


@llm_group.command("serve-local")
@click.option("--port", type=click.IntRange(1, 65535), default=8080, show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--threads", type=click.IntRange(1, 256), default=min(os.cpu_count() or 1, 4),
              show_default=True, help="CPU threads for generation.")
def serve_local(port: int, host: str, threads: int) -> None:
    """Serve SmolLM2-135M-Instruct (the model the tests use) on llama.cpp's OpenAI-compatible
    server until Ctrl-C, once it has answered one completion (a server that dies, then or
    later, ends the command with exit 1 and its last lines). Then, in another terminal:
    mlflow-agentic run --data FILE --proposer llm --llm-base-url http://127.0.0.1:8080/v1
    --llm-model smollm2 (OPENAI_API_KEY: any value). Install: pip install
    'mlflow-agentic[local-llm]'."""

    def work() -> None:
        from mlflow_agentic.llm.local import MODEL_NAME, server_command

        command = server_command(host, port, threads)
        base = f"http://{host}:{port}/v1"
        click.echo(f"starting {MODEL_NAME} at {base} ...", err=True)
        tail = Tail()
        with foreground(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT) as server:
            tail.follow(server.stdout)
            try:
                ready(server, base, tail)
                click.echo(f"serving {MODEL_NAME} at {base}, one completion checked (Ctrl-C "
                           f"stops it); use --llm-base-url {base} --llm-model {MODEL_NAME}",
                           err=True)
                code = server.wait()
            except KeyboardInterrupt:
                click.echo("stopping the local LLM", err=True)
                return
        raise ServerDied(f"the local LLM server ended (exit code {code})", tail)

    try:
        exit_on_user_error(work, kept=lambda: "")
    except ServerDied as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(1)


class Tail:
    """The last lines a server printed, read from its pipe by a thread (so it never blocks)."""

    def __init__(self, keep: int = 12) -> None:
        self.lines: collections.deque[str] = collections.deque(maxlen=keep)

    def follow(self, pipe: IO[bytes] | None) -> None:
        if pipe is None:  # the server's output is not piped: nothing to keep
            return

        def read() -> None:
            for raw in iter(pipe.readline, b""):
                self.lines.append(raw.decode(errors="replace").rstrip())

        threading.Thread(target=read, daemon=True).start()

    def text(self) -> str:
        return "\n".join(f"  | {line}" for line in self.lines if line.strip())


class ServerDied(Exception):
    """The server ended or failed its first completion: the message and its last lines."""

    def __init__(self, what: str, tail: Tail) -> None:
        hint = ""
        if "-4" in what or "illegal instruction" in tail.text().lower():
            hint = ("\nllama.cpp was built for a CPU with instructions this one lacks: build "
                    "it from source with flags that fit, e.g. CMAKE_ARGS=\"-DGGML_NATIVE=OFF "
                    "-DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON\" pip install --force-reinstall "
                    "--no-cache-dir 'llama-cpp-python[server]' (see docs/guides/llm.md)")
        super().__init__(f"{what}; its last lines:\n{tail.text() or '  | (nothing)'}{hint}")


READY_SECONDS = 120.0


def ready(server: subprocess.Popen, base: str, tail: Tail) -> None:
    """Return once the server lists its model and answers one completion; ``ServerDied`` when
    it ends or fails first (a server that lists models but dies at its first completion, as a
    llama.cpp built for another CPU does, is not ready)."""
    import requests

    deadline = time.monotonic() + READY_SECONDS
    while True:
        if server.poll() is not None:
            raise ServerDied(f"the local LLM server ended before it was ready (exit code "
                             f"{server.returncode})", tail)
        try:
            requests.get(f"{base}/models", timeout=2).raise_for_status()
            break
        except requests.RequestException:
            if time.monotonic() > deadline:
                raise ServerDied(f"the local LLM server did not answer in {READY_SECONDS:g}s",
                                 tail) from None
            time.sleep(0.3)
    try:
        answer = requests.post(f"{base}/chat/completions", timeout=READY_SECONDS, json={
            "model": "check", "max_tokens": 1,
            "messages": [{"role": "user", "content": "Say ok."}]})
        answer.raise_for_status()
    except requests.RequestException as exc:
        time.sleep(0.5)  # its last words reach the pipe
        code = server.poll()
        what = (f"the local LLM server died at its first completion (exit code {code})"
                if code is not None else f"the local LLM server failed its first completion "
                f"({type(exc).__name__})")
        raise ServerDied(what, tail) from None
