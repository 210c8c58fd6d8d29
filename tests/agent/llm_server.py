"""A real OpenAI-protocol HTTP server for tests: serves ``POST /v1/chat/completions`` with scripted replies and
``GET /v1/models``; with `api_key`, any request without that bearer key gets HTTP 401.

Each scripted item is a reply text (HTTP 200, one choice), an int (that HTTP status with an error body), or a dict
``{"content": str | None, "tool_calls": [{"name": ..., "arguments": "<raw JSON text, possibly malformed>"}],
"usage": {...}}`` (an assistant message with OpenAI-style tool calls; ``usage`` defaults to 100 + 20 tokens).
When the script runs out, every request gets HTTP 503. Requests are kept (parsed JSON bodies).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class ScriptedChatServer:
    def __init__(self, script: list[str | int], api_key: str | None = None) -> None:
        self.script = list(script)
        self.api_key = api_key
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _refused(self) -> bool:
                if server.api_key is None or self.headers.get("Authorization") == f"Bearer {server.api_key}":
                    return False
                self._send(401, {"error": {"message": "invalid api key", "type": "invalid_request_error"}})
                return True

            def do_GET(self) -> None:  # noqa: N802
                server.requests.append({"path": self.path, "body": None, "auth": self.headers.get("Authorization")})
                if self._refused():
                    return
                if self.path != "/v1/models":
                    self._send(404, {"error": {"message": "not found", "type": "not_found"}})
                    return
                self._send(200, {"object": "list", "data": [{"id": "scripted-model", "object": "model",
                                                             "created": 0, "owned_by": "tests"}]})

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append({"path": self.path, "body": body,
                                        "auth": self.headers.get("Authorization")})
                if self._refused():
                    return
                item = server.script.pop(0) if server.script else 503
                if self.path != "/v1/chat/completions":
                    item = 404
                if isinstance(item, int):
                    payload = {"error": {"message": f"scripted status {item}", "type": "server_error"}}
                    status = item
                else:
                    status = 200
                    message, usage, finish = {"role": "assistant", "content": item}, None, "stop"
                    if isinstance(item, dict):
                        n = len(server.requests)
                        calls = [{"id": f"call_{n}_{i}", "type": "function",
                                  "function": {"name": c["name"], "arguments": c["arguments"]}}
                                 for i, c in enumerate(item.get("tool_calls", []))]
                        message = {"role": "assistant", "content": item.get("content")}
                        if calls:
                            message["tool_calls"], finish = calls, "tool_calls"
                        usage = item.get("usage")
                    payload = {"id": f"chatcmpl-{len(server.requests)}", "object": "chat.completion",
                               "created": 0, "model": body.get("model"),
                               "choices": [{"index": 0, "finish_reason": finish, "message": message}],
                               "usage": usage or {"prompt_tokens": 100, "completion_tokens": 20,
                                                  "total_tokens": 120}}
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> ScriptedChatServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
