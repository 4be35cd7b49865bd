"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, for the real openai client.

Each request pops the next step of the script: ("answer", dict | str), ("status", code),
("slow", seconds, answer), ("reject_schema",) -> HTTP 500 when asked for json_schema (then the
step is kept for the next request), ("die",) -> the connection dropped unanswered and the server
gone (as a llama.cpp server that traps on an instruction its CPU lacks: ``/v1/models`` had
answered), ("trickle", seconds) -> headers, then a byte every 2 s (never a whole answer).
When the script is empty, ``responder(body)`` (if given)
makes the step, else HTTP 500. Every request body is recorded. GET /v1/models lists one model.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class ScriptedOpenAI:
    def __init__(self, script=None, responder=None) -> None:
        self.script = list(script or [])
        self.responder = responder
        self.requests: list[dict] = []
        self.rejects_json_schema = False
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):  # noqa: N802 - http.server's naming
                if self.path.rstrip("/").endswith("/models"):
                    return self._send(200, {"object": "list", "data": [
                        {"id": "scripted", "object": "model", "created": 0,
                         "owned_by": "tests"}]})
                return self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self):  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                fmt = (body.get("response_format") or {}).get("type")
                if server.rejects_json_schema and fmt == "json_schema":
                    return self._send(500, {"error": {"message": "json_schema not supported"}})
                if server.script:
                    step = server.script.pop(0)
                elif server.responder is not None:
                    step = server.responder(body)
                else:
                    step = ("status", 500)
                kind = step[0]
                if kind == "trickle":  # headers, then a byte every 2 s, for ``step[1]`` s
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", "100000")
                    self.end_headers()
                    ends = time.monotonic() + step[1]
                    try:
                        while time.monotonic() < ends:
                            self.wfile.write(b" ")
                            self.wfile.flush()
                            time.sleep(2)
                    except OSError:  # the client hung up: what it should do
                        pass
                    return None
                if kind == "die":
                    self.close_connection = True
                    threading.Thread(target=server.close, daemon=True).start()
                    return None
                if kind == "status":
                    return self._send(step[1], {"error": {"message": f"scripted {step[1]}"}})
                if kind == "slow":
                    time.sleep(step[1])
                    step = ("answer", step[2])
                content = step[1] if isinstance(step[1], str) else json.dumps(step[1])
                return self._send(200, {
                    "id": "chatcmpl-1", "object": "chat.completion", "created": 0,
                    "model": body.get("model", "scripted"),
                    "choices": [{"index": 0, "finish_reason": "stop", "message": {
                        "role": "assistant", "content": content}}],
                    "usage": {"prompt_tokens": server.prompt_tokens(body),
                              "completion_tokens": 20,
                              "total_tokens": server.prompt_tokens(body) + 20}})

            def _send(self, code, payload):
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @staticmethod
    def prompt_tokens(body: dict) -> int:
        """A stand-in tokenizer: 4 characters per token, like the usual rule of thumb."""
        return sum(len(m["content"]) for m in body["messages"]) // 4

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
