"""The sandbox: the one place that talks to Docker. LLM-written candidates (``candidate.py``)
fit in a fresh, locked-down container (``DockerSandbox``), or, only when the user allows it,
in a bare subprocess (``HostSandbox``, labelled ``sandbox=host``)."""

from mlflow_agentic.sandbox.job import SandboxJob, SandboxResult, SandboxUnavailable
from mlflow_agentic.sandbox.runners import (
    DockerSandbox,
    HostSandbox,
    Limits,
    make_sandbox,
)

__all__ = ["DockerSandbox", "HostSandbox", "Limits", "SandboxJob",
           "SandboxResult", "SandboxUnavailable", "make_sandbox"]
