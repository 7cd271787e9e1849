"""Files that must never reach a model: no suggestions in them, no context taken from them.

Globs follow gitignore's shape, matched case-insensitively (`.ENV` is `.env` on Windows
and macOS) against the document's path:

- a glob without a slash matches any file or directory name, so `secrets` also covers
  everything inside a `secrets/` folder;
- a trailing slash matches directories only (`.ssh/`);
- a glob with a slash inside matches whole trailing components anywhere in the path
  (`.aws/credentials` matches `/home/u/.aws/credentials`), because the server does not
  know a root to anchor it to; a leading slash anchors it to the start of an absolute
  path instead (`/home/u/work/**`);
- `*` and `?` stay within one component, `**` spans any number of them, `[...]` is a
  character class and `{a,b}` a set of alternatives;
- a user glob starting with `!` takes matching files back out of the exclusions
  (`!.env.example`), whichever glob excluded them.

Backslashes are read as separators, not escapes, so Windows users can paste paths.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit

_DATA_FILES = "{json,yaml,yml,toml,ini,cfg,conf,env,txt,xml,properties,plist}"

DEFAULT_EXCLUDED_GLOBS: tuple[str, ...] = (
    # dotenv and direnv files. Not `.env*`: that would also take `.envoy.yaml` and the like.
    ".env",
    ".env.*",
    "*.env",
    ".envrc",
    # Private keys, key stores and password databases.
    "*.pem",
    "*.key",
    "*.p8",
    "*.p12",
    "*.pfx",
    "*.jks",
    "*.keystore",
    "*.ppk",
    "*.kdbx",
    "*.keytab",
    "*.ovpn",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    # Home-directory credential stores.
    ".ssh/",
    ".gnupg/",
    ".aws/",
    ".docker/config.json",
    ".dockercfg",
    ".kube/config",
    ".config/gh/hosts.yml",
    ".git-credentials",
    ".netrc",
    "_netrc",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".my.cnf",
    ".htpasswd",
    ".s3cfg",
    ".boto",
    ".vault-token",
    ".terraformrc",
    "terraform.rc",
    # Infrastructure state and variables, which hold secrets in plain text.
    "*.tfvars",
    "*.tfvars.json",
    "*.tfstate",
    "*.tfstate.*",
    # Files and folders named for what they hold. Only data formats for the named files:
    # `credentials.py` in botocore or google-auth is code about credentials, not a store.
    "credentials",
    "secrets",
    f"credentials.{_DATA_FILES}",
    f"secrets.{_DATA_FILES}",
    f"secret.{_DATA_FILES}",
    f"*[-_.]credentials.{_DATA_FILES}",
    f"*[-_.]secrets.{_DATA_FILES}",
    "*.secret",
    "*.secrets",
    "client_secret*.json",
    "*service[-_]account*.json",
)
"""What is excluded unless the user turns the defaults off."""

NO_FILE_SCHEMES = frozenset({"untitled"})
"""Buffers with no file behind them: never excluded (redaction still applies to them)."""

CACHE_SIZE = 4096

_WINDOWS_DRIVE = re.compile(r"[A-Za-z]:[\\/]")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+):")


def document_path(uri_or_path: str) -> str | None:
    """The path a URI or file path names, as `/`-separated absolute text, or None when
    nothing on disk stands behind it (an untitled buffer)."""
    if _WINDOWS_DRIVE.match(uri_or_path):
        path = uri_or_path
    elif scheme := _SCHEME.match(uri_or_path):
        if scheme.group(1).lower() in NO_FILE_SCHEMES:
            return None
        path = unquote(urlsplit(uri_or_path).path)
    else:
        path = uri_or_path
    path = path.replace("\\", "/")
    return posixpath.normpath(path if path.startswith("/") else "/" + path)


class Exclusions:
    """Which documents are kept from the model, built once per settings change.

    `excludes` is called on every request, so the globs are compiled into one regex and
    each URI's answer is remembered.
    """

    def __init__(self, globs: Iterable[str] = (), *, defaults: bool = True) -> None:
        excluded = list(DEFAULT_EXCLUDED_GLOBS) if defaults else []
        included: list[str] = []
        for glob in globs:
            glob = glob.strip()
            if glob.startswith("!"):
                included.append(glob[1:])
            elif glob and not glob.startswith("#"):
                excluded.append(glob)
        self.globs: tuple[str, ...] = tuple(excluded)
        self.reincluded: tuple[str, ...] = tuple(included)
        self._excluded = _compile(excluded)
        self._included = _compile(included)
        self._answers: dict[str, bool] = {}

    def excludes(self, uri_or_path: str) -> bool:
        """True when the document must get no suggestions and lend no context."""
        answer = self._answers.get(uri_or_path)
        if answer is None:
            answer = self._decide(uri_or_path)
            if len(self._answers) >= CACHE_SIZE:
                self._answers.clear()
            self._answers[uri_or_path] = answer
        return answer

    def _decide(self, uri_or_path: str) -> bool:
        path = document_path(uri_or_path)
        if path is None or self._excluded is None or not self._excluded.search(path):
            return False
        return self._included is None or not self._included.search(path)


def glob_regex(glob: str) -> str | None:
    """The regex source matching `glob` against a `document_path`; None for a blank glob
    or a `#` comment."""
    pattern = glob.strip().replace("\\", "/")
    if not pattern or pattern.startswith("#"):
        return None
    directory_only = pattern.endswith("/")
    absolute = pattern.startswith("/")
    parts = [part for part in pattern.split("/") if part]
    if not parts:
        return None
    if parts[0] == "**" and len(parts) > 1:
        parts = parts[1:]
    body = []
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part == "**":
            body.append(".*" if last else "(?:[^/]*/)*")
        else:
            body.append(_component(part) + ("" if last else "/"))
    if parts[-1] == "**":
        tail = ""  # `dir/**` already reaches everything below
    elif directory_only:
        tail = "/"
    else:
        tail = "(?:/|$)"  # a file of that name, or a folder and all within it
    return ("^/" if absolute else "/") + "".join(body) + tail


def _compile(globs: Iterable[str]) -> re.Pattern[str] | None:
    sources = [source for glob in globs if (source := glob_regex(glob)) is not None]
    if not sources:
        return None
    return re.compile("|".join(f"(?:{source})" for source in sources), re.IGNORECASE)


def _component(glob: str) -> str:
    """One path component's glob as regex source; unclosed brackets and braces are literal."""
    out = []
    index = 0
    while index < len(glob):
        char = glob[index]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and (close := glob.find("]", index + 2)) != -1:
            out.append(_character_class(glob[index + 1 : close]))
            index = close
        elif char == "{" and (close := glob.find("}", index + 1)) != -1:
            choices = glob[index + 1 : close].split(",")
            out.append("(?:" + "|".join(_component(choice) for choice in choices) + ")")
            index = close
        else:
            out.append(re.escape(char))
        index += 1
    return "".join(out)


def _character_class(body: str) -> str:
    negated = body[0] in "!^"
    if negated:
        body = body[1:]
    body = body.replace("\\", "\\\\").replace("[", "\\[")
    return f"[^/{body}]" if negated else f"[{body}]"
