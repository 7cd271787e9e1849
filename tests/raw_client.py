"""A bare JSON-RPC client over the server's stdio, for messages a well-behaved client library
would refuse to send (missing or malformed params, invalid JSON)."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import time
from typing import Any

from tests.conftest import SERVER_COMMAND, SERVER_ENV


class RawClient:
    def __init__(self) -> None:
        self.process = subprocess.Popen(
            SERVER_COMMAND,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=SERVER_ENV,
        )
        self._buffer = b""
        self._selector = selectors.DefaultSelector()
        assert self.process.stdout is not None
        self._selector.register(self.process.stdout, selectors.EVENT_READ)

    def send_bytes(self, body: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.send_bytes(json.dumps(message).encode())

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

    def reply(self, request_id: Any, timeout: float = 10.0) -> dict[str, Any]:
        """The response to one request; messages before it are skipped."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = self._next(deadline - time.monotonic())
            if message is not None and message.get("id") == request_id and "method" not in message:
                return message
        raise TimeoutError(f"no response to request {request_id!r}")

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
