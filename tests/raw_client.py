"""A bare JSON-RPC client over the server's stdio, for messages a well-behaved client library
would refuse to send (missing or malformed params, invalid JSON, broken framing)."""

from __future__ import annotations

import itertools
import json
import os
import selectors
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tests.conftest import SEEN, SERVER_COMMAND, SERVER_ENV

METHOD_NOT_FOUND = -32601


class RawClient:
    def __init__(self, args: Sequence[str] = (), env: Mapping[str, str] | None = None) -> None:
        self.process = subprocess.Popen(
            [*SERVER_COMMAND, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=SERVER_ENV | dict(env or {}),
        )
        self._buffer = b""
        self._ids = itertools.count(1)
        self._selector = selectors.DefaultSelector()
        assert self.process.stdout is not None
        self._selector.register(self.process.stdout, selectors.EVENT_READ)

    def write(self, data: bytes) -> None:
        """Bytes exactly as given, framing included, for messages with broken headers."""
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def send_bytes(self, body: bytes) -> None:
        self.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def send(self, message: dict[str, Any]) -> None:
        self.send_bytes(json.dumps(message).encode())

    def request(self, method: str, params: Any = None, timeout: float = SEEN) -> dict[str, Any]:
        """Send a request (without params when they are None) and wait for its response."""
        request_id = f"raw-{next(self._ids)}"
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self.reply(request_id, timeout)

    def notify(self, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def initialize(self, options: dict[str, Any] | None = None) -> None:
        self.send(
            {
                "jsonrpc": "2.0",
                "id": "init",
                "method": "initialize",
                "params": {"capabilities": {}, "initializationOptions": options},
            }
        )
        self.reply("init")
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})

    def reply(self, request_id: Any, timeout: float = SEEN) -> dict[str, Any]:
        """The response to one request; messages before it are skipped."""
        return self.messages_until(request_id, timeout)[-1]

    def messages_until(self, request_id: Any, timeout: float = SEEN) -> list[dict[str, Any]]:
        """Everything the server sent up to and including the response to one request.

        Requests from the server are refused (MethodNotFound) so that it never waits on us.
        """
        return self.read_until(
            lambda message: message.get("id") == request_id and "method" not in message,
            f"response to request {request_id!r}",
            timeout,
            refuse_requests=True,
        )

    def read_until(
        self,
        wanted: Callable[[dict[str, Any]], bool],
        what: str,
        timeout: float = SEEN,
        refuse_requests: bool = False,
    ) -> list[dict[str, Any]]:
        """Everything the server sent up to and including the first message `wanted` accepts
        (`what` names it in the error when none comes); requests from the server are left
        for the caller to answer unless `refuse_requests`."""
        deadline = time.monotonic() + timeout
        seen: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            message = self._next(deadline - time.monotonic())
            if message is None:
                if self.process.poll() is not None:
                    raise EOFError(f"the server exited with code {self.process.returncode}")
                continue
            seen.append(message)
            if refuse_requests and "method" in message and "id" in message:
                self.send(
                    {
                        "jsonrpc": "2.0",
                        "id": message["id"],
                        "error": {"code": METHOD_NOT_FOUND, "message": "not supported"},
                    }
                )
            elif wanted(message):
                return seen
        raise TimeoutError(f"no {what}")

    def read_to_end(self, timeout: float = SEEN) -> list[dict[str, Any]]:
        """Every message the server sends until it closes its stdout (as it exits)."""
        deadline = time.monotonic() + timeout
        seen: list[dict[str, Any]] = []
        while (message := self._next(deadline - time.monotonic())) is not None:
            seen.append(message)
        return seen

    def rss_mib(self) -> float:
        """The server process's resident memory."""
        with open(f"/proc/{self.process.pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        raise ValueError("no VmRSS line")

    def _next(self, timeout: float) -> dict[str, Any] | None:
        while True:
            header_end = self._buffer.find(b"\r\n\r\n")
            if header_end >= 0:
                headers = self._buffer[:header_end].decode("ascii").split("\r\n")
                length = next(
                    int(line.split(":", 1)[1])
                    for line in headers
                    if line.lower().startswith("content-length")
                )
                start = header_end + 4
                if len(self._buffer) >= start + length:
                    body = self._buffer[start : start + length]
                    self._buffer = self._buffer[start + length :]
                    return json.loads(body)
            if not self._selector.select(max(timeout, 0.0)):
                return None
            assert self.process.stdout is not None
            chunk = os.read(self.process.stdout.fileno(), 65536)
            if not chunk:
                return None
            self._buffer += chunk

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=10)
        self._selector.close()
