"""A stand-in for a llama.cpp server built for another CPU: it lists its model, then traps on an
illegal instruction (SIGILL) at its first completion. ``python dying_llm.py PORT``."""

from __future__ import annotations

import json
import os
import signal
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):  # noqa: N802 - http.server's naming
        body = json.dumps({"object": "list", "data": [{"id": "smollm2"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):  # noqa: N802 - http.server's naming
        print("ggml_cpu: running an instruction this CPU lacks", flush=True)
        os.kill(os.getpid(), signal.SIGILL)


if __name__ == "__main__":
    signal.signal(signal.SIGILL, signal.SIG_DFL)
    print("llama_model_loader: loaded", flush=True)
    HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
