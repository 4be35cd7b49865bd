#!/usr/bin/env bash
# The code-mode sandbox tests need a Docker daemon and the sandbox image. As root on these
# machines: install docker.io and debootstrap (Debian packages), start dockerd without
# networking of its own (candidates run with --network none), and build the image offline with
# `mlflow-agentic sandbox build` (kept when it exists: about 2-3 minutes the first time).
# Usage: bash .ci/start-docker.sh VENV
set -euo pipefail
venv="${1:-.venv}"
if ! command -v dockerd > /dev/null || ! command -v debootstrap > /dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io debootstrap > /dev/null
fi
if ! docker info > /dev/null 2>&1; then
  (dockerd --iptables=false --ip-forward=false --bridge=none > /tmp/mlflow-agentic-dockerd.log 2>&1 &)
  for _ in $(seq 60); do docker info > /dev/null 2>&1 && break; sleep 0.5; done
  docker info > /dev/null || { tail -20 /tmp/mlflow-agentic-dockerd.log; exit 1; }
fi
"$venv/bin/mlflow-agentic" sandbox build
