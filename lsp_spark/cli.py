"""The `lsp-spark` command: serve (default), complete, demo, doctor."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from lsp_spark import __version__

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def _host_port(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError("expected HOST:PORT, e.g. 127.0.0.1:2087")
    return host, int(port)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lsp-spark", description=__doc__)
    parser.add_argument("--version", action="version", version=f"lsp-spark {__version__}")
    commands = parser.add_subparsers(dest="command")

    serve = commands.add_parser("serve", help="run the language server (the default)")
    serve.add_argument("--stdio", action="store_true", help="talk over stdin/stdout (default)")
    serve.add_argument("--tcp", type=_host_port, metavar="HOST:PORT", help="listen on TCP")
    serve.add_argument("--log-file", type=Path, help="also write the log to this file")

    complete = commands.add_parser("complete", help="print the suggestion for a file position")
    complete.add_argument("file", type=Path)
    complete.add_argument("line", type=int, help="1-based line")
    complete.add_argument("column", type=int, help="1-based column, in characters")
    complete.add_argument("--language", help="language id (default: from the file extension)")

    demo = commands.add_parser("demo", help="type into a fixture through the real server")
    demo.add_argument(
        "--backend",
        choices=("auto", "local", "cerebras", "openai", "loopback"),
        default="auto",
        help="'loopback' starts the Cerebras-compatible test server on 127.0.0.1",
    )
    demo.add_argument("--file", type=Path, help="file to type into (default: a fixture)")
    demo.add_argument("--holes", type=int, default=4, help="how many places to type at")

    commands.add_parser("doctor", help="show settings, backend reachability and grammars")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    arguments = _parser().parse_args(argv)
    command = arguments.command or "serve"
    if command == "serve":
        _serve(getattr(arguments, "tcp", None), getattr(arguments, "log_file", None))
    elif command == "complete":
        from lsp_spark.commands import complete

        sys.exit(
            asyncio.run(
                complete(arguments.file, arguments.line, arguments.column, arguments.language)
            )
        )
    elif command == "demo":
        from lsp_spark.demo import run_demo

        sys.exit(asyncio.run(run_demo(arguments.backend, arguments.file, arguments.holes)))
    else:
        from lsp_spark.commands import doctor

        sys.exit(asyncio.run(doctor()))


def _serve(tcp: tuple[str, int] | None, log_file: Path | None) -> None:
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file is not None:
        handlers.append(logging.FileHandler(log_file))
    logging.basicConfig(
        level=logging.WARNING,
        handlers=handlers,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    logging.getLogger("lsp_spark").setLevel(logging.INFO)
    from lsp_spark.server import server
    from lsp_spark.transport import serve

    if tcp is not None and tcp[0] not in LOOPBACK_HOSTS:
        logging.getLogger("lsp_spark").warning("listening on %s: not a loopback address", tcp[0])
    serve(server, server.hot.take, tcp)
