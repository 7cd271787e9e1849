"""The stdio transport, read on the event loop itself.

pygls reads stdin through a thread pool: every message costs three hand-offs between threads
(two header lines and the body), each a wake-up and a fight for the GIL on the keystroke's
path. When stdin is a pipe, socket or terminal, asyncio can watch it directly instead.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import sys
import threading
from typing import BinaryIO

from pygls.io_ import StdinAsyncReader, StdoutWriter, run_async
from pygls.lsp.server import LanguageServer

log = logging.getLogger(__name__)

READ_LIMIT = 64 * 1024 * 1024
"""Largest header line asyncio's reader accepts; bodies are read by length, not by line."""


def serve_stdio(server: LanguageServer) -> None:
    """Run `server` over this process's stdin and stdout until the client exits."""
    server._stop_event = threading.Event()
    server.protocol.set_writer(StdoutWriter(sys.stdout.buffer))
    try:
        asyncio.run(_serve(server, sys.stdin.buffer))
    except BrokenPipeError:
        log.error("the client closed the connection")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()


async def _serve(server: LanguageServer, stdin: BinaryIO) -> None:
    reader: asyncio.StreamReader | StdinAsyncReader
    if _watchable(stdin):
        pipe = reader = asyncio.StreamReader(limit=READ_LIMIT)
        loop = asyncio.get_running_loop()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(pipe), stdin)
    else:
        reader = StdinAsyncReader(stdin, server.thread_pool)
    stop = server._stop_event
    assert stop is not None
    try:
        await run_async(
            stop_event=stop,
            reader=reader,
            protocol=server.protocol,
            logger=logging.getLogger("pygls.io_"),
            error_handler=server.report_server_error,
        )
    except asyncio.IncompleteReadError:
        log.error("the client closed the connection in the middle of a message")


def _watchable(stream: BinaryIO) -> bool:
    """Pipes, sockets and terminals can be watched by the event loop; regular files cannot."""
    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)
