"""A local HTTP server that speaks enough of the OpenAI API for the ``openai`` backend's tests.

``/v1/completions`` and ``/v1/chat/completions`` (with ``n`` choices and ``usage``), and
``/v1/models``. Answers are deterministic in (prompt, choice index, seed): a completion prompt
ending in ``assert f(`` is continued with asserts on ``f``; a chat prompt gets a fenced block.
Faults are injected from a script: :attr:`FakeOpenAIServer.faults` is a list consumed one per
request (``429``, ``500``, ``503``, ``"slow"`` to sleep past the client's timeout, ``"drop"`` to
close the connection without an answer, ``"html"`` for a status-200 HTML page (a proxy's
login or error page), ``"truncated"`` for a JSON body cut short, ``"no_choices"`` for a JSON
answer without ``choices``, ``"null"`` / ``"empty"`` for a normal answer whose every choice's
text is ``null`` / ``""``, ``None`` for a normal answer); once it is used up,
:attr:`FakeOpenAIServer.then` answers every request (``None``: normally, or one of the faults:
a server that goes down). ``delay`` slows every answer. Counters record what was served; each
request's body is kept, marked ``_answered`` when an answer was sent (``_slow`` when too late).

Run it standalone (for the kill-and-resume test, in its own process):
``python tests/fake_openai_server.py --port-file PATH [--delay S]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = ["FakeOpenAIServer"]


def _num(*parts: object) -> int:
    return int(hashlib.sha256("\x00".join(map(str, parts)).encode()).hexdigest()[:8], 16)


def answer_text(prompt: str | list[dict[str, str]], index: int, seed: Any) -> str:
    """The deterministic answer for one choice."""
    if isinstance(prompt, str):
        last = prompt.rsplit("\n", 1)[-1]
        m = re.match(r"assert (\w+)\($", last)
        if m:
            f = m.group(1)
            a = [_num(prompt, index, seed, k) % 100 for k in range(4)]
            return f"{a[0]}) == {a[1]}\nassert {f}({a[2]}) == {a[3]}\nassert {f}(\n\ndef helper():\n    pass\n"
        return f"    return {_num(prompt, index, seed) % 10}\n"
    text = "\n".join(m["content"] for m in prompt)
    names = re.findall(r"def (\w+)\(", text)
    f = names[-1] if names else "f"
    a = [_num(text, index, seed, k) % 100 for k in range(2)]
    return f"Sure! Here are tests:\n```python\nassert {f}({a[0]}) == {a[1]}\n```\n"


class FakeOpenAIServer:
    """The server, run in a background thread (``with FakeOpenAIServer() as s: s.base_url``)."""

    def __init__(self, *, delay: float = 0.0, slow_seconds: float = 3.0) -> None:
        self.delay = delay
        self.slow_seconds = slow_seconds
        self.faults: list[int | str | None] = []
        self.then: int | str | None = None
        self.requests = 0
        self.served = 0
        self.served_choices = 0
        self.faults_injected = 0
        self.bodies: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self, port: int = 0) -> FakeOpenAIServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body are two writes: avoid 40 ms ACK stalls

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, payload: dict[str, Any] | bytes, headers: dict[str, str] | None = None,
                      content_type: str = "application/json") -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self) -> None:
                if self.path.rstrip("/") == "/v1/models":
                    self._send(200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with server.lock:
                    server.requests += 1
                    fault = server.faults.pop(0) if server.faults else server.then
                    if fault is not None:
                        server.faults_injected += 1
                    server.bodies.append(body)
                if fault == "drop":  # the connection dies before an answer (a crashed worker, a proxy)
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if fault == "slow":
                    body["_slow"] = True  # answered too late: the client has given up on it
                    time.sleep(server.slow_seconds)
                elif isinstance(fault, int):
                    msg = "rate limited" if fault == 429 else "server error"
                    self._send(fault, {"error": {"message": msg, "type": "fake", "code": fault}},
                               {"Retry-After": "0"} if fault == 429 else None)
                    return
                if fault == "html":
                    page = b"<!DOCTYPE html><html><body><h1>Welcome to nginx!</h1></body></html>"
                    self._send(200, page, content_type="text/html")
                    return
                if server.delay:
                    time.sleep(server.delay)
                n = int(body.get("n") or 1)
                seed = body.get("seed")
                if self.path.rstrip("/") == "/v1/completions":
                    prompt = body["prompt"]
                    choices = [
                        {"index": i, "text": answer_text(prompt, i, seed), "finish_reason": "length", "logprobs": None}
                        for i in range(n)
                    ]
                    obj = "text_completion"
                elif self.path.rstrip("/") == "/v1/chat/completions":
                    prompt = body["messages"]
                    choices = [
                        {"index": i, "message": {"role": "assistant", "content": answer_text(prompt, i, seed)},
                         "finish_reason": "stop"}
                        for i in range(n)
                    ]
                    obj = "chat.completion"
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                if fault in ("null", "empty"):
                    for c in choices:
                        if "text" in c:
                            c["text"] = None if fault == "null" else ""
                        else:
                            c["message"]["content"] = None if fault == "null" else ""
                ptoks = len(json.dumps(prompt).split())
                payload = {
                    "id": f"fake-{server.requests}", "object": obj, "created": 0, "model": body.get("model"),
                    "choices": choices,
                    "usage": {"prompt_tokens": ptoks, "completion_tokens": 10 * n, "total_tokens": ptoks + 10 * n},
                }
                if fault == "no_choices":
                    del payload["choices"]
                elif fault == "truncated":
                    cut = json.dumps(payload).encode()
                    self._send(200, cut[: len(cut) // 2])
                    return
                if fault != "no_choices":
                    with server.lock:
                        server.served += 1
                        server.served_choices += n
                        body["_answered"] = True
                self._send(200, payload)

        class Server(ThreadingHTTPServer):
            request_queue_size = 256  # the default backlog (5) drops bursts of concurrent connects

        self._httpd = Server(("127.0.0.1", port), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--delay", type=float, default=0.0)
    args = parser.parse_args()
    server = FakeOpenAIServer(delay=args.delay).start()
    Path(args.port_file).write_text(server.base_url)
    threading.Event().wait()


if __name__ == "__main__":
    main()
