"""Serve the page and relay its JSON-RPC calls to one cluster.

The page is static (``static/``: built from ``sdk/js/web`` by ``npm run build-web`` and
committed, so no user needs npm). A browser page may only call an RPC node that allows
its origin (CORS); many public nodes do, the embedded localnet does not. So the server
also relays POSTs on ``/rpc`` to the one cluster URL it was started with, and nowhere
else: it is not an open proxy. ``/config.json`` tells the page that URL, the relay and
the default model.
"""

import json
import socket
import threading
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import httpx

STATIC = Path(__file__).resolve().parent / "static"
"""The page's files: index.html, app.js, style.css."""
RELAY_PATH = "/rpc"
RELAY_TIMEOUT = 60.0
"""Seconds the relay waits for the cluster's answer."""
MAX_REQUEST = 1 << 20
"""The largest JSON-RPC request the relay forwards (the page's are a few hundred bytes)."""
_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript", ".css": "text/css"}


@dataclass(frozen=True)
class LocalArtifact:
    """An artifact the page opens as if it were dropped on it (served at ``/artifact``).

    ``demo``: the page's own demo, which no user named: opened only when no model is named,
    never checked against one (a named model is then verified from the chain alone).
    """

    name: str
    data: bytes
    demo: bool = False

    @classmethod
    def read(cls, path: Path) -> "LocalArtifact":
        """The file at ``path``, read once."""
        return cls(path.name, path.read_bytes())


@dataclass(frozen=True)
class PageConfig:
    """What ``/config.json`` tells the page."""

    url: str | None
    model: str | None
    artifact: LocalArtifact | None = None

    def to_json(self) -> dict[str, str | bool | None]:
        """The config as the page reads it."""
        return {
            "url": self.url,
            "model": self.model,
            "relay": RELAY_PATH.lstrip("/"),
            "artifact": self.artifact.name if self.artifact else None,
            "demo": bool(self.artifact and self.artifact.demo),
        }


class _Handler(BaseHTTPRequestHandler):
    config: ClassVar[PageConfig]
    client: ClassVar[httpx.Client]

    def log_message(self, format: str, *args: object) -> None:
        """Say nothing per request: the command prints one line when it starts."""

    def do_GET(self) -> None:
        """The page's files and its config."""
        path = self.path.split("?", 1)[0]
        if path == "/config.json":
            self._answer(HTTPStatus.OK, "application/json", json.dumps(self.config.to_json()))
            return
        if path == "/artifact" and self.config.artifact is not None:
            self._answer(HTTPStatus.OK, "application/octet-stream", self.config.artifact.data)
            return
        name = "index.html" if path == "/" else path.lstrip("/")
        file = STATIC / name
        if "/" in name or not file.is_file():
            self._answer(HTTPStatus.NOT_FOUND, "text/plain", f"no such file: {path}")
            return
        self._answer(HTTPStatus.OK, _TYPES.get(file.suffix, "application/octet-stream"),
                     file.read_bytes())  # fmt: skip

    def do_POST(self) -> None:
        """Relay one JSON-RPC request (or batch) to the cluster; a failure is one line."""
        if self.path != RELAY_PATH or self.config.url is None:
            self._answer(HTTPStatus.NOT_FOUND, "text/plain", "no relay here")
            return
        length = int(self.headers.get("content-length") or 0)
        if not 0 < length <= MAX_REQUEST:
            self._answer(HTTPStatus.BAD_REQUEST, "text/plain", f"{length} bytes: not a request")
            return
        body = self.rfile.read(length)
        try:
            answer = self.client.post(
                self.config.url, content=body, headers={"content-type": "application/json"}
            )
        except httpx.HTTPError as exc:
            self._answer(HTTPStatus.BAD_GATEWAY, "text/plain", unreachable(self.config.url, exc))
            return
        self._answer(answer.status_code, answer.headers.get("content-type", "application/json"),
                     answer.content)  # fmt: skip

    def _answer(self, status: int, kind: str, body: str | bytes) -> None:
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(data)))
        self.send_header("cache-control", "no-store")
        try:
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the page went away (its tab closed mid-request): nobody to answer


def unreachable(url: str, exc: httpx.HTTPError) -> str:
    """Why the relay got no answer from ``url``, in words (not ``[Errno 111] ...``)."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, ConnectionRefusedError):
            return f"cannot connect to {url}: connection refused (is the node running?)"
        if isinstance(cause, socket.gaierror):
            return f"cannot connect to {url}: its host name does not resolve"
        cause = cause.__cause__ or cause.__context__
    if isinstance(exc, httpx.TimeoutException):
        return f"{url} did not answer in {RELAY_TIMEOUT:g} s"
    if isinstance(exc, httpx.ConnectError):
        return f"cannot connect to {url}"
    return f"{url}: no answer ({type(exc).__name__})"


class WebServer:
    """The page's server on 127.0.0.1, serving from a background thread.

    Attributes:
        url: where the page is, e.g. ``http://127.0.0.1:8890/``.
    """

    def __init__(
        self,
        cluster: str | None,
        model: str | None,
        port: int = 0,
        host: str = "127.0.0.1",
        artifact: Path | LocalArtifact | None = None,
    ):
        """Bind ``host:port`` (0 picks a free port); ``serve`` or ``start`` serves.

        ``artifact`` is a file (or its bytes) the page opens as if dropped on it.

        Raises:
            OSError: the port cannot be bound.
        """
        if isinstance(artifact, Path):
            artifact = LocalArtifact.read(artifact)
        client = httpx.Client(timeout=RELAY_TIMEOUT)
        handler = type(
            "Handler",
            (_Handler,),
            {"config": PageConfig(cluster, model, artifact), "client": client},
        )
        self._client = client
        self._server = ThreadingHTTPServer((host, port), handler)
        self._server.daemon_threads = True
        self.url = f"http://{host}:{self._server.server_address[1]}/"
        self._thread: threading.Thread | None = None

    def serve(self) -> None:
        """Serve until ``stop`` (or Ctrl-C in the calling thread)."""
        self._server.serve_forever()

    def start(self) -> "WebServer":
        """Serve from a daemon thread; return self."""
        self._thread = threading.Thread(target=self.serve, name="curta-web", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port; safe to call twice."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.server_close()
        self._client.close()


def start_web_server(
    cluster: str | None,
    model: str | None = None,
    port: int = 0,
    artifact: Path | LocalArtifact | None = None,
) -> WebServer:
    """Start the page's server in a thread on 127.0.0.1 (``port`` 0: a free one)."""
    return WebServer(cluster, model, port, artifact=artifact).start()
