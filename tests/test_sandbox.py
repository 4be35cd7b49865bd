"""The escape matrix: LLM-written candidates run in a real Docker container (the image
``mlflow-agentic sandbox build`` makes; .ci/run starts dockerd and builds it) and can do no
harm: no network, no writes outside the scratch, memory and time capped, no secrets, no holdout;
what they print changes nothing. Host execution only when asked, and labelled."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.metrics import roc_auc_score

from mlflow_agentic.sandbox import (
    DockerSandbox,
    HostSandbox,
    Limits,
    SandboxJob,
    SandboxUnavailable,
    make_sandbox,
)

pytestmark = pytest.mark.slow  # the Docker sandbox

PLAIN = """
from sklearn.compose import make_column_transformer, make_column_selector
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler


def build_pipeline(columns):
    prep = make_column_transformer(
        (StandardScaler(), make_column_selector(dtype_include="number")),
        (OneHotEncoder(handle_unknown="ignore"), make_column_selector(dtype_exclude="number")))
    return make_pipeline(prep, LogisticRegression(max_iter=1000))
"""


def job(job_parts, code: str, **changes) -> SandboxJob:
    """Fold 0's job: fit on the other folds' rows, predict fold 0's features (no labels)."""
    features, y, folds = job_parts
    return SandboxJob(code, "binary", (0, 1), train=features[folds != 0],
                      target=y[folds != 0], rows=features[folds == 0], **changes)


def with_pipeline(check: str) -> str:
    """A candidate that runs ``check`` (which raises when the sandbox leaks) then fits."""
    return PLAIN.replace("def build_pipeline(columns):\n",
                         "def build_pipeline(columns):\n" + check)


def each_fails(targets: list, action: str, what: str) -> str:
    """Candidate lines doing ``action`` on each target: every one must raise OSError."""
    return (f"    for target in {targets!r}:\n"
            f"        try:\n"
            f"            {action}\n"
            f"        except OSError:\n"
            f"            continue\n"
            f"        raise RuntimeError(f'{what} {{target}}')\n")


def test_a_candidate_fits_and_what_it_prints_changes_no_score(docker_sandbox, job_parts):
    liar = with_pipeline(
        "    import os, json\n"
        "    print('cv_roc_auc=1.0')\n"
        "    os.write(1, json.dumps({'ok': True, 'score': 1.0}).encode())\n")
    result = docker_sandbox.run(job(job_parts, liar, save_model=True))
    assert result.ok, result.error
    assert result.label == "docker" and result.limits["sandbox.memory"] == "512m"
    assert "cv_roc_auc=1.0" in result.log  # kept as the candidate's log, never parsed
    features, y, folds = job_parts
    # the engine scores the predictions itself: exactly an in-process fit's
    namespace: dict = {}
    exec(PLAIN, namespace)  # noqa: S102 - the test's own trusted pipeline
    model = clone(namespace["build_pipeline"]({})).fit(features[folds != 0], y[folds != 0])
    expected = model.predict_proba(features[folds == 0])
    np.testing.assert_allclose(result.predictions, expected, atol=1e-9)
    assert 0.6 < roc_auc_score(y[folds == 0], result.predictions[:, 1]) < 0.99
    assert isinstance(result.model_bytes, bytes)  # kept as bytes: the host never loads it
    again = docker_sandbox.run(SandboxJob(liar, "binary", (0, 1), rows=features.iloc[:5],
                                          model_bytes=result.model_bytes))
    assert again.ok, again.error  # the pickle made inside loads inside, in a fresh container
    np.testing.assert_allclose(again.predictions, model.predict_proba(features.iloc[:5]),
                               atol=1e-9)
    assert any("tenure" in f for f in result.features)


@pytest.fixture
def listening_server():
    class Quiet(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's naming
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("0.0.0.0", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


def test_the_network_is_blocked(docker_sandbox, job_parts, listening_server):
    host_ip = socket.gethostbyname(socket.gethostname())
    targets = [("1.1.1.1", 53), (host_ip, listening_server), ("127.0.0.1", listening_server),
               ("172.17.0.1", 2375)]
    code = with_pipeline("    import socket\n" + each_fails(
        targets, "socket.create_connection(target, timeout=3).close()", "reached"))
    result = docker_sandbox.run(job(job_parts, code))
    assert result.ok, result.error
    assert HostSandbox(Limits(timeout=60)).run(job(job_parts, code)).ok is False  # the host can


def test_writes_outside_the_scratch_fail(docker_sandbox, job_parts):
    paths = ["/etc/x", "/sandbox/x", "/x", "/usr/lib/x", "/sandbox/train.parquet"]
    code = with_pipeline(each_fails(paths, "open(target, 'w').write('escaped')", "wrote")
                         + "    open('/tmp/scratch', 'w').write('fine')\n")
    result = docker_sandbox.run(job(job_parts, code))
    assert result.ok, result.error


def test_a_memory_hog_is_killed_and_recorded(docker_sandbox, job_parts):
    hog = with_pipeline("    blocks = [bytearray(256 * 2**20) for _ in range(8)]\n")
    result = docker_sandbox.run(job(job_parts, hog))
    assert not result.ok and result.stage == "killed"
    assert "memory limit: killed at 512m" in result.error or "exit 137" in result.error


def test_an_infinite_loop_is_killed_at_the_limit(docker_sandbox, job_parts):
    short = DockerSandbox(docker_sandbox.image, Limits(memory="512m", cpus=1, timeout=6))
    result = short.run(job(job_parts, with_pipeline("    while True:\n        pass\n")))
    assert not result.ok and result.error == "wall-clock limit: killed after 6s"
    assert result.seconds >= 6  # it ran until its limit, not less
    host = HostSandbox(Limits(timeout=6)).run(job(job_parts, with_pipeline(
        "    while True:\n        pass\n")))
    assert not host.ok and host.error == "wall-clock limit: killed after 6s"


SECRETS = with_pipeline(
    "    import os\n"
    "    leaked = [k for k in os.environ if any(w in k.upper() for w in\n"
    "              ('KEY', 'SECRET', 'TOKEN', 'PASSWORD', 'OPENAI', 'MLFLOW', 'AWS'))]\n"
    "    if leaked:\n"
    "        raise RuntimeError(f'secrets visible: {leaked}')\n")


def test_no_secret_of_the_environment_gets_in(docker_sandbox, job_parts, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-candidates")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-for-candidates")
    assert docker_sandbox.run(job(job_parts, SECRETS)).ok
    host = HostSandbox(Limits(timeout=60)).run(job(job_parts, SECRETS))
    assert host.ok and host.label == "host", host.error  # an empty environment there too


def test_only_the_training_rows_and_the_code_are_inside(docker_sandbox, job_parts, tmp_path):
    holdout = tmp_path / "holdout.csv"
    holdout.write_text("sealed\n")
    code = with_pipeline(
        "    import os, pandas as pd\n"
        "    inside = sorted(os.listdir('/sandbox'))\n"
        "    if inside != ['candidate.py', 'harness.py', 'job.json', 'out', 'rows.parquet',\n"
        "                  'train.parquet']:\n"
        "        raise RuntimeError(f'unexpected files: {inside}')\n"
        f"    if os.path.exists({str(holdout)!r}) or os.path.exists({str(tmp_path)!r}):\n"
        "        raise RuntimeError('the host folder is visible')\n"
        f"    if len(pd.read_parquet('/sandbox/train.parquet')) != {sum(job_parts[2] != 0)}:\n"
        "        raise RuntimeError('other rows inside')\n"
        "    if '__target__' in pd.read_parquet('/sandbox/rows.parquet').columns:\n"
        "        raise RuntimeError('the labels of the predicted rows are inside')\n")
    result = docker_sandbox.run(job(job_parts, code))
    assert result.ok, result.error


def test_a_failing_candidate_is_recorded_with_its_stage(docker_sandbox, job_parts):
    result = docker_sandbox.run(job(job_parts, "def build_pipeline(columns):\n"
                                               "    return 1 / 0\n"))
    assert not result.ok and result.stage == "build"
    assert result.error == "ZeroDivisionError: division by zero"
    assert "candidate.py" in result.traceback


def test_no_daemon_means_no_sandbox_unless_host_execution_is_allowed(monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'no-daemon.sock'}")
    with pytest.raises(SandboxUnavailable, match="--allow-host-execution"):
        make_sandbox()
    assert make_sandbox(allow_host_execution=True).label == "host"


def test_the_frame_given_is_the_frame_inside(docker_sandbox):
    features = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "b": list("xyxyxy")})
    code = ("from sklearn.dummy import DummyClassifier\n\n\n"
            "def build_pipeline(columns):\n"
            "    assert columns == {'a': 'numeric', 'b': 'categorical'}, columns\n"
            "    return DummyClassifier()\n")
    result = docker_sandbox.run(SandboxJob(code, "binary", (0, 1), train=features,
                                           target=np.array([0, 1] * 3), rows=features))
    assert result.ok, result.error


def test_dev_shm_is_absent(docker_sandbox, job_parts):
    code = with_pipeline(each_fails(["/dev/shm/x", "/dev/mqueue/x", "/dev/x"],
                                    "open(target, 'w').write('escaped')", "wrote")
                         + "    import os\n"
                         "    assert not os.path.exists('/dev/shm'), os.listdir('/dev/shm')\n")
    result = docker_sandbox.run(job(job_parts, code))
    assert result.ok, result.error


FORGE_AT_EXIT = '''

import atexit
import glob

import numpy as np
import pandas as pd


def forge():
    """At exit, overwrite the predictions with the labels this container holds."""
    y = pd.read_parquet("/sandbox/train.parquet")["__target__"].to_numpy()
    n = len(pd.read_parquet("/sandbox/rows.parquet"))
    labels = np.resize(y, n).astype(float)
    for path in glob.glob("/sandbox/out/*.npy") or ["/sandbox/out/pred.npy"]:
        np.save(path, np.column_stack([1 - labels, labels]))


atexit.register(forge)
'''
FORGER = PLAIN + FORGE_AT_EXIT


def test_a_candidate_that_forges_its_predictions_at_exit_changes_nothing(docker_sandbox,
                                                                          job_parts):
    honest = docker_sandbox.run(job(job_parts, PLAIN))
    forger = docker_sandbox.run(job(job_parts, FORGER))
    assert honest.ok and forger.ok, forger.error
    # the harness ends with os._exit once its outputs are written: no exit handler runs
    np.testing.assert_allclose(forger.predictions, honest.predictions, atol=1e-12)


def test_forged_outputs_are_the_candidates_failure_not_a_score(docker_sandbox, job_parts):
    wrong_shape = PLAIN + '''
class Forged:
    classes_ = [0, 1]

    def fit(self, X, y):
        return self

    def predict_proba(self, X):
        import numpy as np
        return np.ones((len(X) + 7, 2))


def build_pipeline(columns):
    return Forged()
'''
    result = docker_sandbox.run(job(job_parts, wrong_shape))
    assert not result.ok and result.stage == "outputs"
    assert "shape" in result.error
