"""The secret a TCP client presents before it is served.

Any local process can connect to a port, so `serve --tcp` serves only the client whose
`initialize` carries this token in `initializationOptions.tcpToken`: editors' stock LSP
clients connect and send LSP messages, and nothing before them, so the token travels in
the first message they send anyway. It comes from the editor (`LSP_SPARK_TCP_TOKEN` in the
server's environment, or a file given with `--token-file`), or the server makes one and
writes it to a file only the user can read, in their runtime directory.
"""

from __future__ import annotations

import os
import secrets
import stat
from collections.abc import MutableMapping
from dataclasses import dataclass
from pathlib import Path

import platformdirs

ENVIRONMENT_VARIABLE = "LSP_SPARK_TCP_TOKEN"
OPTION = "tcpToken"
"""The member of `initializationOptions` (or of its `lspSpark` section) carrying it."""
SHORTEST = 16
"""Characters a token must have: a shorter one could be guessed by trying."""


class TokenError(Exception):
    """A token that cannot be used, with what is wrong with it."""


@dataclass
class TcpToken:
    value: str
    publishes: bool
    """Made here: written for clients once the port is known, and removed at exit."""
    file: Path | None = None
    """Where it is published; None for the default place of the port it serves."""

    def publish(self, port: int) -> Path | None:
        """Write the token where clients read it (the default place names the port, for
        `--tcp HOST:0` and for servers on several ports); the path written."""
        if not self.publishes:
            return None
        self.file = self.file or default_file(port)
        write_private(self.file, self.value)
        return self.file

    def withdraw(self) -> None:
        """Remove the file this server wrote: the token dies with the server."""
        if self.publishes and self.file is not None:
            self.file.unlink(missing_ok=True)


def obtain(token_file: Path | None, environ: MutableMapping[str, str]) -> TcpToken:
    """The token in `--token-file` when it exists, else the environment's (taken out of it,
    so no child process inherits it), else a fresh one to publish: in `token_file` when
    given, else in the user's runtime directory."""
    given = environ.pop(ENVIRONMENT_VARIABLE, "")
    if token_file is not None and token_file.exists():
        return TcpToken(read_private(token_file), publishes=False)
    if token_file is None and given:
        return TcpToken(_checked(given, ENVIRONMENT_VARIABLE), publishes=False)
    return TcpToken(secrets.token_urlsafe(32), publishes=True, file=token_file)


def default_file(port: int) -> Path:
    return Path(platformdirs.user_runtime_dir("lsp-spark")) / f"tcp-{port}.token"


def write_private(path: Path, value: str) -> None:
    """A new file only the user can read or write, in a folder no one else can change."""
    folder = path.parent
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = folder.stat()
        if info.st_uid != os.getuid() or info.st_mode & 0o022:
            raise TokenError(f"{folder}: others could replace the token file in this folder")
        path.unlink(missing_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError as error:
        raise TokenError(f"cannot write the TCP token to {path}: {error.strerror}") from error
    with os.fdopen(descriptor, "w") as file:
        file.write(value + "\n")


def read_private(path: Path) -> str:
    """The token in a file of the user's that no one else can read or change."""
    try:
        with path.open() as file:
            info = os.fstat(file.fileno())
            text = file.read(4096)
    except (OSError, UnicodeDecodeError) as error:
        raise TokenError(f"cannot read the TCP token file {path}: {error}") from error
    if not stat.S_ISREG(info.st_mode):
        raise TokenError(f"{path}: not a regular file")
    if info.st_uid != os.getuid():
        raise TokenError(f"{path}: belongs to another user")
    if info.st_mode & 0o077:
        mode = oct(stat.S_IMODE(info.st_mode))
        raise TokenError(f"{path}: others can read or write it (mode {mode}); chmod 600 it")
    return _checked(text.strip(), str(path))


def _checked(value: str, source: str) -> str:
    if len(value) < SHORTEST:
        raise TokenError(f"{source}: the TCP token must have at least {SHORTEST} characters")
    return value
