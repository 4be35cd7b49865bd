"""``mlflow-agentic sandbox``: the Docker image LLM-written candidates run in."""

from __future__ import annotations

import click

from mlflow_agentic.cli.options import blank_to_none, exit_on_user_error


@click.group("sandbox")
def sandbox_group() -> None:
    """The sandbox for code mode: build its image offline, check that it runs."""


@sandbox_group.command("build")
@click.option("--image", callback=blank_to_none,
              help="Image name (default: mlflow-agentic-sandbox:<hash of the package versions>).")
@click.option("--suite", default="bookworm", show_default=True, help="Debian release of the base.")
def build_command(image: str | None, suite: str) -> None:
    """Build the image offline: a minimal Debian (debootstrap), python3, and this machine's
    numpy, pandas, scipy, scikit-learn and pyarrow. Needs root, debootstrap and a Docker
    daemon; kept when it exists."""
    from mlflow_agentic.sandbox.image import build_image

    def work() -> None:
        name = build_image(image, suite=suite, say=lambda line: click.echo(line, err=True))
        click.echo(name)

    exit_on_user_error(work)


@sandbox_group.command("check")
@click.option("--image", callback=blank_to_none, help="Image name (default: the built one).")
def check_command(image: str | None) -> None:
    """Run a tiny pipeline in the sandbox and say what it cost."""
    import numpy as np
    import pandas as pd

    from mlflow_agentic.sandbox import DockerSandbox, SandboxJob

    def work() -> None:
        rng = np.random.default_rng(0)
        features = pd.DataFrame({"x": rng.normal(size=200)})
        y = (features["x"] > 0).astype(int).to_numpy()
        sandbox = DockerSandbox(image).check()
        fit = sandbox.run(SandboxJob(CHECK_CODE, "binary", (0, 1), train=features.iloc[:150],
                                     target=y[:150], rows=features.iloc[150:],
                                     save_model=True))
        scored = fit if not fit.ok else sandbox.run(SandboxJob(
            CHECK_CODE, "binary", (0, 1), model_bytes=fit.model_bytes, rows=features))
        for result in (fit, scored):
            if not result.ok:
                raise click.ClickException(f"the sandbox ran but the check failed at "
                                           f"{result.stage}: {result.error}")
        click.echo(f"sandbox {sandbox.image}: a fit with its pickle in {fit.seconds:.1f}s, "
                   f"then a prediction from that pickle in a fresh container in "
                   f"{scored.seconds:.1f}s")

    exit_on_user_error(work)


CHECK_CODE = """
from sklearn.linear_model import LogisticRegression


def build_pipeline(columns):
    return LogisticRegression()
"""
