"""The `lsp-spark` command: serve (default), complete, demo, doctor."""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from lsp_spark import __version__

if TYPE_CHECKING:
    from lsp_spark.tcp_token import TcpToken


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
    serve.add_argument(
        "--tcp",
        type=_host_port,
        metavar="HOST:PORT",
        help="listen on TCP, for the client whose initialize carries the token "
        "(initializationOptions.tcpToken)",
    )
    serve.add_argument(
        "--token-file",
        type=Path,
        help="with --tcp: the token, from this file (readable by you alone), or written to it "
        "when it does not exist (default: LSP_SPARK_TCP_TOKEN, else a new token written to "
        "tcp-PORT.token in your runtime directory)",
    )
    serve.add_argument(
        "--allow-remote",
        action="store_true",
        help="with --tcp: listen on a host that is not loopback (the token, still required, "
        "crosses the network unencrypted)",
    )
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
    parser = _parser()
    arguments = parser.parse_args(argv)
    command = arguments.command or "serve"
    if command == "serve":
        tcp = getattr(arguments, "tcp", None)
        if tcp is not None and not _is_loopback(tcp[0]) and not arguments.allow_remote:
            parser.error(
                f"--tcp {tcp[0]}: not a loopback address; anyone who can reach it could try "
                "tokens (pass --allow-remote to listen there anyway)"
            )
        token = None
        if tcp is not None:
            from lsp_spark.tcp_token import TokenError, obtain

            try:
                token = obtain(arguments.token_file, os.environ)
            except TokenError as error:
                parser.error(str(error))
        _serve(tcp, token, getattr(arguments, "log_file", None))
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


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _serve(tcp: tuple[str, int] | None, token: TcpToken | None, log_file: Path | None) -> None:
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file is not None:
        handlers.append(logging.FileHandler(log_file))
    logging.basicConfig(
        level=logging.WARNING,
        handlers=handlers,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    log = logging.getLogger("lsp_spark")
    log.setLevel(logging.INFO)
    from lsp_spark.server import server
    from lsp_spark.tcp_token import TokenError
    from lsp_spark.transport import Tcp, serve

    if tcp is None or token is None:
        serve(server, server.hot.take)
        return

    def listening(port: int) -> None:
        host = tcp[0]
        if not _is_loopback(host):
            log.warning("listening on %s: not a loopback address", host)
        try:
            published = token.publish(port)
        except TokenError as error:
            raise SystemExit(f"lsp-spark: {error}") from error
        where = f"the token in {published}" if published else "the token it was given"
        log.info("listening on %s:%d for the client that presents %s", host, port, where)

    try:
        serve(server, server.hot.take, Tcp(*tcp, token.value, listening, server.client_left))
    finally:
        token.withdraw()
