"""Secrets are cut out of every prompt before it leaves the machine.

Each secret is replaced by `<redacted:KIND>`, and only the secret: quotes, the name it is
assigned to, the user and host of a URL and the markers of a key block stay, so the
model still sees code of the same shape and carries on sensibly. The placeholder itself
never looks like a secret, which makes `redact` idempotent.

This runs on every keystroke's prompt, so the common case (no secret at all) is kept to
a handful of scans: `str.find` for literal markers and secret-looking names, one regex
for the long runs that prefixed tokens need, and one Aho-Corasick pass for the keywords
of detect-secrets' rules. The rules that look closer only run
where a scan found something. Rules, in the order they run:

- `private-key`: PEM/OpenSSH/PGP private key blocks, also inside escaped strings; a
  block cut by the window's start or end is redacted to that edge;
- tokens recognised by their prefix: AWS access key ids, GitHub, GitLab, Slack, Stripe,
  Google API keys, OpenAI, Anthropic, Cerebras, Hugging Face, Shopify, DigitalOcean, npm,
  PyPI, and JWTs, also
  while they are being typed, from a few random-looking characters after the prefix;
- `url-password`: the password in `scheme://user:password@host`; `url-key`, a key that
  is a URL's whole user (a Sentry DSN); Slack and Discord webhook paths; Telegram bot
  tokens;
- `auth-header`: the credentials of an `Authorization` header or a `Bearer` token, and
  `Basic` credentials under any header name;
- `mysql -pPASSWORD`, and the secrets of connection strings (`AccountKey=…;`,
  `SharedAccessKey=…;`, `Password=…;`);
- assignments to secret-looking names (`password = "…"`, `API_KEY=…`, `"token": "…"`,
  `<password>…</password>`, `--password …`, `PGPASSWORD=… psql`, `DB_PWD`): `password`
  and `secret` when the name says so plainly and the value is a literal that is no
  placeholder, `high-entropy` when the name only hints at it (`key`, `key_id`, `auth`,
  `credentials`) and the value looks random;
- last, detect-secrets' maintained regexes (`rule_set.py`), named by their secret types
  (`sendgrid-api-key`, `twilio-api-key`, `mailchimp-access-key`…): the services the
  rules above do not name.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import pairwise

import lsp_spark.privacy.rule_set as rule_set
from lsp_spark.backends.base import CompletionRequest

PLACEHOLDER = re.compile(r"<redacted:[a-z0-9-]+>")
"""What every redaction leaves behind; a suggestion that contains it must not be shown,
or accepting it would write the placeholder into the user's file."""


def placeholder(kind: str) -> str:
    return f"<redacted:{kind}>"


@dataclass(frozen=True, slots=True)
class Redacted:
    """`text` with its secrets replaced; `counts` says how many of each kind."""

    text: str
    counts: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.counts.values())


@dataclass(frozen=True, slots=True)
class RedactedParts:
    """Consecutive pieces of one text (the prefix and suffix around the cursor) redacted
    as one, so that a secret the cursor splits is still recognised."""

    parts: tuple[str, ...]
    counts: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.counts.values())


MAX_PASSES = 4
"""Taking a secret out can end the text that hid another (`Bearer x…PASSWORD=y` only
shows its token once `y` is gone), so the rules run again until nothing changes. Text
without secrets takes one pass; placeholders never match, so this ends quickly."""


def redact(text: str) -> Redacted:
    """`text` with every secret the rules recognise replaced by a placeholder."""
    result = redact_parts(text)
    return Redacted(result.parts[0], result.counts)


def redact_parts(*parts: str) -> RedactedParts:
    """Redact the concatenation of `parts` and cut it back at the same places.

    A secret that straddles a cut becomes one placeholder at the end of the earlier
    part; the later part resumes after the secret.
    """
    if not parts:
        return RedactedParts((), {})
    text = "".join(parts)
    cuts = []
    offset = 0
    for part in parts[:-1]:
        offset += len(part)
        cuts.append(offset)
    counts: Counter[str] = Counter()
    for _ in range(MAX_PASSES):
        changed = False
        for stage in _STAGES:
            around = _AROUND_CUT.get(stage) if cuts else None
            spans = around(text, cuts[0]) if around is not None else stage(text)
            if spans:
                text, cuts = _splice(text, spans, cuts, counts)
                changed = True
        if not changed:
            break
    bounds = [0, *cuts, len(text)]
    return RedactedParts(tuple(text[start:end] for start, end in pairwise(bounds)), dict(counts))


@lru_cache(maxsize=4)
def _redact_related(context: str) -> Redacted:
    """Related code changes far less often than keystrokes come."""
    return redact(context)


def redact_request(request: CompletionRequest) -> tuple[CompletionRequest, dict[str, int]]:
    """The request with its prefix and suffix (redacted together, across the cursor) and
    its context redacted, plus how many secrets of each kind were taken out."""
    around = redact_parts(request.prefix, request.suffix)
    context = _redact_related(request.context)
    counts = Counter(around.counts)
    counts.update(context.counts)
    prefix, suffix = around.parts
    return replace(request, prefix=prefix, suffix=suffix, context=context.text), dict(counts)


def contains_placeholder(text: str) -> bool:
    """True when `text` (a model's answer) repeats a redaction placeholder."""
    return "<redacted:" in text and PLACEHOLDER.search(text) is not None


class RedactionTally:
    """Running totals per kind, for `lspSpark/stats`."""

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()
        self.prompts = 0
        """Prompts that had at least one secret taken out."""

    def add(self, counts: Mapping[str, int]) -> None:
        if any(counts.values()):
            self.prompts += 1
            self._counts.update(counts)

    def snapshot(self) -> dict[str, int]:
        return dict(sorted(self._counts.items()))

    @property
    def total(self) -> int:
        return sum(self._counts.values())


Span = tuple[int, int, str]
"""Start, end and kind of one secret in the text a stage looked at."""


def _splice(
    text: str, spans: list[Span], cuts: list[int], counts: Counter[str]
) -> tuple[str, list[int]]:
    """Replace `spans` with placeholders, moving each cut with the text around it."""
    pieces = []
    position = 0
    shifts: list[tuple[int, int, int]] = []
    for start, end, kind in sorted(spans):
        if start < position:
            continue
        replacement = placeholder(kind)
        pieces.append(text[position:start])
        pieces.append(replacement)
        shifts.append((start, end, len(replacement) - (end - start)))
        counts[kind] += 1
        position = end
    pieces.append(text[position:])
    moved = []
    for cut in cuts:
        delta = 0
        new_cut = None
        for start, end, shift in shifts:
            if end <= cut:
                delta += shift
            elif start < cut:
                new_cut = end + delta + shift
                break
            else:
                break
        moved.append(new_cut if new_cut is not None else cut + delta)
    return "".join(pieces), moved


# --- Private key blocks ------------------------------------------------------------

_KEY_MARKER = re.compile(r"-----(BEGIN|END) (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_BASE64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")
_GLUE_CHARS = frozenset(" \t\r\n\"'+,`\\")
_GLUE = r"(?:\\[nr]|[\s\"'`]|[+,](?=[\s\"'`])|\\(?=\r?\n))"
"""What holds a key's lines together in source: newlines, escaped newlines, quotes and
the `+` or `,` between string literals (not a `+` that is part of the base64)."""
_LEADING_GLUE = re.compile(f"{_GLUE}*")
_QUOTES = frozenset(" \t\r\n\"'`")
"""What may follow a `+` or `,` that joins string literals (the empty string at the end
of the text never does)."""
MIN_KEY_CHARS = 16
"""Base64 characters that must follow a BEGIN (or precede an END) marker for it to be
a key and not code that mentions the marker, unless the window ends (or starts) first."""
_KEY_BODY_START = re.compile(
    rf"{_GLUE}*(?:[A-Za-z0-9+/=]{{{MIN_KEY_CHARS}}}|(?:Proc-Type|DEK-Info|Version|Comment):"
    rf"|(?:[A-Za-z0-9+/=]|{_GLUE})*+\Z)"
)


def _private_keys(text: str) -> list[Span]:
    if "PRIVATE KEY" not in text:
        return []
    spans: list[Span] = []
    done = 0
    markers = list(_KEY_MARKER.finditer(text))
    for index, marker in enumerate(markers):
        if marker.start() < done:
            continue
        if marker.group(1) == "BEGIN":
            if not _KEY_BODY_START.match(text, marker.end()):
                continue
            end = next((m for m in markers[index + 1 :] if m.group(1) == "END"), None)
            body_end = end.start() if end else len(text)
            _add_key_body(spans, text, marker.end(), body_end)
            done = end.end() if end else len(text)
        else:
            if _key_ends_at(text, done, marker.start()):
                _add_key_body(spans, text, done, marker.start())
            done = marker.end()
    return spans


def _key_ends_at(text: str, start: int, end: int) -> bool:
    """Whether the text before an END marker whose BEGIN is not in view is key material:
    enough base64 between it and the last other character, or nothing else back to
    where the window (or the previous block) starts."""
    seen = 0
    index = end
    while index > start:
        char = text[index - 1]
        if char in _BASE64:
            seen += 1
            if seen >= MIN_KEY_CHARS:
                return True
        elif char not in _GLUE_CHARS:
            return False
        index -= 1
    return seen > 0


def _add_key_body(spans: list[Span], text: str, start: int, end: int) -> None:
    """The body between the markers, without the glue at either end, so that string
    quotes and line breaks around the placeholder stay."""
    lead = _LEADING_GLUE.match(text, start, end)
    body_start = lead.end() if lead else start
    body_end = end
    while body_end > body_start:
        char = text[body_end - 1]
        if char in " \t\r\n\"'`" or (char in "+," and text[body_end : body_end + 1] in _QUOTES):
            body_end -= 1
        elif char in "nr" and body_end - 2 >= body_start and text[body_end - 2] == "\\":
            body_end -= 2
        else:
            break
    if body_end > body_start and text[body_start:body_end] != placeholder("private-key"):
        spans.append((body_start, body_end, "private-key"))


# --- Tokens recognised by their prefix ---------------------------------------------


@dataclass(frozen=True, slots=True)
class _TokenRule:
    """A token kind: the prefixes that dispatch to it, the token itself (with `check`
    on what it matched), and `partial`: the same token while it is still being typed."""

    kind: str
    prefixes: tuple[str, ...]
    pattern: re.Pattern[str]
    check: Callable[[str], bool] | None = None
    partial: tuple[re.Pattern[str], ...] = ()
    """Each with a `body` group, what follows the prefix, that must be `_unlike_a_word`.
    A completion request goes out on nearly every keystroke, so a token that only matched
    once complete would leak all but its last few characters while it is typed."""


_TOKEN_END = r"(?![A-Za-z0-9_-])"
PARTIAL_CHARS = 8
"""Characters after a token's prefix from which a token being typed is redacted: few
enough that most of even the shortest token (an AWS key id, 16 after its prefix) is never
sent, and enough that `_unlike_a_word` tells a token from a name."""


def _partial(
    prefix: str, alphabet: str, least: int = PARTIAL_CHARS, most: int | str = ""
) -> re.Pattern[str]:
    """`prefix` and at least `least` characters of the token's alphabet, up to where the
    token ends (at most `most` of them when the token has a fixed length)."""
    return re.compile(f"{prefix}(?P<body>{alphabet}{{{least},{most}}}){_TOKEN_END}")


def _unlike_a_word(body: str) -> bool:
    """Random characters mix at least two of lower case, upper case and digits almost at
    once (eight random letters and digits keep to one kind about once in 500), while a
    name or an example after a prefix-like word keeps to one: `ghs_username`,
    `npm_PACKAGE`, `csk-dashboard`, `ghp_xxxxxxxxxxxx`. A key of lower-case letters and
    digits (Cerebras) needs its first digit, which about one in 14 lacks in its first
    eight characters."""
    kinds = (
        any(c.islower() for c in body),
        any(c.isupper() for c in body),
        any(c.isdigit() for c in body),
    )
    return sum(kinds) >= 2


def _has_digit(token: str) -> bool:
    return any(c.isdigit() for c in token)


def _random_segment(token: str) -> bool:
    """A generic prefix (`sk-`) is only a key when a long, mixed run of letters and
    digits follows, which CSS classes and slugs like `sk-circle-bounce-delay` lack."""
    return any(
        len(segment) >= 16
        and any(c.isdigit() for c in segment)
        and any(c.isalpha() for c in segment)
        for segment in re.split(r"[-_]", token)
    )


def _mixed_case(token: str) -> bool:
    body = token[3:]
    return any(c.isupper() for c in body) and any(c.islower() for c in body)


_TOKEN_RULES: tuple[_TokenRule, ...] = (
    # Patterns that start at PARTIAL_CHARS (or a little more) recognise a token being typed
    # by themselves: their prefix is unmistakable (AWS, Google, PyPI, a JWT's second part),
    # or their check already tells names apart (Slack's digits, Hugging Face's mixed case).
    _TokenRule(
        "aws-access-key",
        ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
        re.compile(r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{8,16}" + _TOKEN_END),
    ),
    _TokenRule(
        "github-token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        re.compile(
            r"(?:gh[pousr]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{22,251})" + _TOKEN_END
        ),
        partial=(_partial("(?:gh[pousr]_|github_pat_)", "[A-Za-z0-9]"),),
    ),
    _TokenRule(
        "gitlab-token",
        ("glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "gloas-", "glsoat-"),
        re.compile(r"gl(?:pat|dt|rt|ptt|cbt|oas|soat)-[A-Za-z0-9_-]{20,}" + _TOKEN_END),
        partial=(_partial("gl(?:pat|dt|rt|ptt|cbt|oas|soat)-", "[A-Za-z0-9_-]"),),
    ),
    _TokenRule(
        "slack-token",
        ("xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxr-", "xoxs-", "xapp-"),
        re.compile(rf"(?:xox[abposr]|xapp)-[A-Za-z0-9-]{{{PARTIAL_CHARS},}}" + _TOKEN_END),
        _has_digit,
    ),
    _TokenRule(
        "stripe-key",
        ("sk_live_", "rk_live_", "sk_test_", "rk_test_", "whsec_"),
        re.compile(
            r"(?:[sr]k_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9+/=]{24,})" + _TOKEN_END
        ),
        partial=(_partial("(?:[sr]k_(?:live|test)_|whsec_)", "[A-Za-z0-9]"),),
    ),
    _TokenRule(
        "google-api-key",
        ("AIza",),
        re.compile(rf"AIza[A-Za-z0-9_-]{{{PARTIAL_CHARS},35}}" + _TOKEN_END),
    ),
    _TokenRule(
        "anthropic-key",
        ("sk-ant-",),
        re.compile(r"sk-ant-[a-z]+[0-9]*-[A-Za-z0-9_-]{20,}" + _TOKEN_END),
        partial=(_partial("sk-ant-[a-z]+[0-9]+-", "[A-Za-z0-9_-]"),),
    ),
    _TokenRule(
        "openai-key",
        ("sk-",),
        re.compile(r"sk-[A-Za-z0-9_-]{20,}" + _TOKEN_END),
        _random_segment,
        # A bare `sk-` also starts CSS classes such as `sk-circle12`, so it waits for more.
        partial=(
            _partial("sk-(?:proj|svcacct|admin)-", "[A-Za-z0-9_-]"),
            _partial("sk-", "[A-Za-z0-9]", 12),
        ),
    ),
    _TokenRule(
        "cerebras-key",
        ("csk-", "csk_"),
        re.compile(r"csk[-_][A-Za-z0-9]{32,}" + _TOKEN_END),
        _random_segment,
        partial=(_partial("csk[-_]", "[A-Za-z0-9]"),),
    ),
    _TokenRule(
        "huggingface-token",
        ("hf_",),
        # Letters only: mixed case is its one sign, which CamelCase names share, so it
        # waits for ten letters (`hf_AutoModel` stays).
        re.compile(r"hf_[A-Za-z]{10,}" + _TOKEN_END),
        _mixed_case,
    ),
    _TokenRule(
        "shopify-access-token",
        ("shpat_", "shpca_", "shppa_", "shpss_"),
        re.compile(r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + _TOKEN_END),
        partial=(_partial("shp(?:at|ca|pa|ss)_", "[a-fA-F0-9]", most=32),),
    ),
    _TokenRule(
        "digitalocean-token",
        ("dop_v1_", "doo_v1_", "dor_v1_"),
        re.compile(r"do[opr]_v1_[a-f0-9]{64}" + _TOKEN_END),
        partial=(_partial("do[opr]_v1_", "[a-f0-9]", most=64),),
    ),
    _TokenRule(
        "npm-token",
        ("npm_",),
        re.compile(r"npm_[A-Za-z0-9]{36}" + _TOKEN_END),
        partial=(_partial("npm_", "[A-Za-z0-9]", most=36),),
    ),
    _TokenRule(
        "pypi-token",
        ("pypi-Ag",),
        re.compile(rf"pypi-Ag[A-Za-z0-9_-]{{{PARTIAL_CHARS},}}" + _TOKEN_END),
    ),
    _TokenRule(
        "jwt",
        ("eyJ",),
        # The header (`{"alg": ...}`) is no secret; the claims and signature after it are.
        re.compile(
            r"eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}(?:\.[A-Za-z0-9_-]*)?" + _TOKEN_END
        ),
    ),
)
_TOKEN_PREFIXES = tuple(prefix for rule in _TOKEN_RULES for prefix in rule.prefixes)
MIN_TOKEN_CHARS = 4 + PARTIAL_CHARS
"""The shortest text a token rule matches: a prefix of four characters (`ghp_`, `AKIA`,
`npm_`; no shorter prefix is followed by as few) and PARTIAL_CHARS."""
_FIRST_LETTERS = "".join(sorted({prefix[0] for prefix in _TOKEN_PREFIXES}))
_WORD_RUN = re.compile(rf"\b[{_FIRST_LETTERS}][\w-]{{{MIN_TOKEN_CHARS - 1},}}", re.ASCII)
"""Every token above starts a run of at least MIN_TOKEN_CHARS word characters and dashes
with one of the prefixes' first letters; one scan for such runs is much cheaper than a
search per prefix."""


def _tokens(text: str) -> list[Span]:
    spans: list[Span] = []
    covered = 0
    for run in _WORD_RUN.finditer(text):
        start = run.start()
        if start < covered or not text.startswith(_TOKEN_PREFIXES, start):
            continue
        if start and text[start - 1] in "-_":
            continue
        for rule in _TOKEN_RULES:
            if not text.startswith(rule.prefixes, start):
                continue
            end = _token_end(rule, text, start)
            if end:
                spans.append((start, end, rule.kind))
                covered = end
                break
    return spans


def _token_end(rule: _TokenRule, text: str, start: int) -> int:
    """Where the token of `rule` at `start` ends, complete or still being typed; 0 when
    there is none."""
    match = rule.pattern.match(text, start)
    if match and (rule.check is None or rule.check(match.group())):
        return match.end()
    for partial in rule.partial:
        match = partial.match(text, start)
        if match and _unlike_a_word(match.group("body")):
            return match.end()
    return 0


STABLE_BLOCK = 1024
"""The text above the cursor's line is remembered up to the last newline before a multiple
of this many characters: a new line above (Enter, an accepted suggestion) leaves that
part as it was, and only the rest is scanned again."""


def _around(
    stage: Callable[[str], list[Span]],
    memo: Callable[[str], tuple[Span, ...]],
    text: str,
    cut: int,
) -> list[Span]:
    """`stage` of the whole text, with most of it taken from `memo`: typing changes only
    the cut's line, and the line-local stages neither match across a newline nor look
    past one, so pieces split after newlines can be scanned apart."""
    start = text.rfind("\n", 0, cut) + 1
    end = text.find("\n", cut) + 1 or len(text)
    stable = text.rfind("\n", 0, start // STABLE_BLOCK * STABLE_BLOCK) + 1
    spans = list(memo(text[:stable]))
    for piece_start, piece_end in ((stable, start), (start, end)):
        spans += [
            (first + piece_start, last + piece_start, kind)
            for first, last, kind in stage(text[piece_start:piece_end])
        ]
    spans += [(first + end, last + end, kind) for first, last, kind in memo(text[end:])]
    return spans


@lru_cache(maxsize=8)
def _tokens_memo(text: str) -> tuple[Span, ...]:
    return tuple(_tokens(text))


def _tokens_around(text: str, cut: int) -> list[Span]:
    return _around(_tokens, _tokens_memo, text, cut)


# --- Passwords in URLs and Authorization headers ------------------------------------

_URL_PASSWORD = re.compile(
    r"://(?<=[A-Za-z0-9]://)[^\s:/?#@\"'`<>(){}\[\]]*:(?P<password>[^\s/?#\"'`<>]+)@"
)
"""Starts with the literal `://` (the scheme is checked behind it) so that the regex
engine can jump from one `://` to the next instead of trying every position."""
_SLACK_WEBHOOK = re.compile(r"hooks\.slack\.com/services/(?P<path>T[A-Z0-9]+/B[A-Z0-9]+/\w+)")
_DISCORD_WEBHOOK = re.compile(
    r"discord(?:app)?\.com/api/webhooks/[0-9]{5,30}/"
    r"(?P<token>[A-Za-z0-9_-]{20,})"
)
_URL_KEY = re.compile(r"://(?<=[A-Za-z0-9]://)(?P<key>[0-9a-fA-F]{32,64})(?::[0-9a-fA-F]{32,64})?@")
"""A URL whose user is a key and nothing else: a Sentry DSN's public key (with the old
secret key after it), which lets anyone send events as the project."""
_TELEGRAM_BOT_TOKEN = re.compile(r"(?<![\w:])[0-9]{8,10}:(?P<token>AA[A-Za-z0-9_-]{33})(?![\w-])")


def _url_passwords(text: str) -> list[Span]:
    spans: list[Span] = _telegram_bot_tokens(text)
    if "://" not in text:
        return spans
    for match in _URL_PASSWORD.finditer(text):
        if not _is_placeholder(match.group("password")):
            spans.append((*match.span("password"), "url-password"))
    if "hooks.slack.com/" in text:
        spans.extend(
            (*match.span("path"), "slack-webhook") for match in _SLACK_WEBHOOK.finditer(text)
        )
    if "/api/webhooks/" in text:
        spans.extend(
            (*match.span("token"), "discord-webhook") for match in _DISCORD_WEBHOOK.finditer(text)
        )
    spans.extend((*match.span("key"), "url-key") for match in _URL_KEY.finditer(text))
    return spans


def _telegram_bot_tokens(text: str) -> list[Span]:
    """A bot's id, a colon and `AA` then 33 characters: the shape alone is telling, where
    detect-secrets' regex takes any 35 characters after the colon."""
    if ":AA" not in text:
        return []
    return [
        (*match.span("token"), "telegram-bot-token") for match in _TELEGRAM_BOT_TOKEN.finditer(text)
    ]


_AUTH_HEADER = re.compile(
    r"(?i:(?:proxy-)?authorization)[\"'`]?\]?[ \t]*[:=,][ \t]*(?:[bBfFrR]?[\"'`])?[ \t]*"
    r"(?:(?P<scheme>(?i:bearer|basic|token|digest|apikey))[ \t]+)?"
    r"(?P<credentials>[A-Za-z0-9._~+/-]{8,}=*)(?![A-Za-z0-9._~+/=-])"
)
_BEARER = re.compile(
    r"(?<![A-Za-z])(?i:bearer)[ \t]+(?P<credentials>[A-Za-z0-9._~+/-]{20,}=*)"
    r"(?![A-Za-z0-9._~+/=-])"
)


def _auth_headers(text: str, lowered: str) -> list[Span]:
    spans: list[Span] = []
    for index in _occurrences(lowered, "authorization"):
        start = index - 6 if lowered.startswith("proxy-", max(index - 6, 0)) else index
        match = _AUTH_HEADER.match(text, start)
        if match is None:
            continue
        credentials = match.group("credentials")
        if (match.group("scheme") or _looks_random(credentials)) and not _is_placeholder(
            credentials
        ):
            spans.append((*match.span("credentials"), "auth-header"))
    taken = {start for start, _, _ in spans}
    for index in _occurrences(lowered, "bearer"):
        match = _BEARER.match(text, index)
        if (
            match is not None
            and match.start("credentials") not in taken
            and _looks_random(match.group("credentials"))
        ):
            spans.append((*match.span("credentials"), "auth-header"))
    return spans


_BASIC = re.compile(
    r"(?<![A-Za-z])(?i:basic)[ \t]+(?P<credentials>[A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])"
)


def _basic_credentials(text: str, lowered: str) -> list[Span]:
    """`Basic` credentials under any header name (`"X-Auth": "Basic …"`): base64 that
    decodes to `user:password` is what sets them apart from prose (`Basic usage`)."""
    spans: list[Span] = []
    for index in _occurrences(lowered, "basic"):
        match = _BASIC.match(text, index)
        if match is not None and _decodes_to_user_and_password(match.group("credentials")):
            spans.append((*match.span("credentials"), "auth-header"))
    return spans


def _decodes_to_user_and_password(value: str) -> bool:
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except binascii.Error:
        return False
    return b":" in decoded and decoded.isascii() and decoded.decode("ascii").isprintable()


_MYSQL_PASSWORD = re.compile(
    r"(?:mysql(?:dump|admin|import|show|check|pump|sh)?|mariadb(?:-dump|-admin|-import)?)"
    r"(?![\w-])[^\n|;&]*?[ \t]-p(?P<password>[^\s\"'`;|&)]+)",
    re.ASCII,
)
"""`mysql -pPASSWORD` (and mysqldump, mysqladmin, mariadb…): the password is glued to
`-p`, so it is no `--password` assignment. Only the clients' own names count:
`mysql_config --libs -pthread` is a compiler flag."""


def _mysql_passwords(text: str, lowered: str) -> list[Span]:
    spans: list[Span] = []
    for stem in ("mysql", "mariadb"):
        for index in _occurrences(lowered, stem):
            match = _MYSQL_PASSWORD.match(text, index)
            if match is not None and not _is_placeholder(match.group("password")):
                spans.append((*match.span("password"), "password"))
    return spans


_CONNECTION_STRING_KEYS = ("accountkey=", "sharedaccesskey=", "password=", "pwd=")
_CONNECTION_STRING_VALUE = re.compile(r"[^;\"'`\s]+(?=;|[\"'`\s]|\Z)")


def _connection_strings(text: str, lowered: str) -> list[Span]:
    """`AccountKey=…;` (Azure storage), `SharedAccessKey=…;` (Service Bus, Event Hubs),
    `Password=…;` (ADO.NET, ODBC): a value that ends at the `;` before the next setting."""
    spans: list[Span] = []
    for key in _CONNECTION_STRING_KEYS:
        for index in _occurrences(lowered, key):
            if index and text[index - 1] not in ";\"'` \t\n":
                continue
            start = index + len(key)
            match = _CONNECTION_STRING_VALUE.match(text, start)
            if match is None or ";" not in text[max(0, index - 1) : match.end() + 1]:
                continue
            if not _is_placeholder(match.group()):
                kind = "password" if key in ("password=", "pwd=") else "connection-string-key"
                spans.append((start, match.end(), kind))
    return spans


def _occurrences(lowered: str, word: str) -> Iterator[int]:
    """Where `word` occurs: `str.find` skips ahead far faster than a case-insensitive
    regex can."""
    index = lowered.find(word)
    while index != -1:
        yield index
        index = lowered.find(word, index + len(word))


# --- Assignments to secret-looking names --------------------------------------------

_NAME_STEMS = ("pass", "pwd", "secret", "token", "key", "auth", "cred")
_NAME_END = re.compile(
    r"(?:pass(?:word|wd|phrase)?|pwd|secrets?|token|key(?:[_-]?id)?|auth|cred(?:ential)?s?)"
    r"[0-9]*(?![a-z])"
    r"(?=[\"'`]?\]?[ \t]*[:=,>!]|[ \t])"
)
"""The stem must end the name (`api_token`, `dbPassword`), not start it (`token_type`,
`passwordHash`, `tokenizer`), and something that may assign to it must follow."""
_STRONG_KEY_OWNER = re.compile(
    r"(?:api|access|secret|private|client|signing|encryption|master|app|consumer|license"
    r"|session|jwt|hmac|subscription|account|deploy|webhook|ssh|auth|service|admin|bot"
    r"|storage|shared|priv)[_.-]?$"
)
_PUBLIC_KEY_NAME = re.compile(r"(?:public|pub|publishable)[_.-]?key[0-9]*$")
"""Public keys look as random as private ones but are meant to be shared."""
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$-")
_ASSIGNMENT = re.compile(
    r"""(?P<close>["'`]?\]?)
    (?:[ \t]*:[ \t]*[&*]?[A-Za-z_][\w.]*(?:\[[^\]\n]*\])?(?:[ \t]*\|[ \t]*[A-Za-z_][\w.]*)*
       (?=[ \t]*=[^=>]))?
    (?P<sep>[ \t]*(?::=|=>|==|!=|=|:|,|>)[ \t]*|[ \t]+)
    (?:
        [bBrRuUfF]{0,2}(?P<quote>["'`])(?P<quoted>(?:[^"'`\\\n]|\\.|(?!(?P=quote))["'`])*)
        (?:(?P=quote)|\Z)
      | (?P<bare>[^\s"'`<>(){}\[\],;&]+)
    )""",
    re.VERBOSE,
)
_BARE_END = re.compile(r"[ \t]*(?:\r?\n|\Z|[ \t]#|[\"'`&])")
_AWS_SECRET = re.compile(r"[A-Za-z0-9/+]{40}")
_AWS_SECRET_NAME = re.compile(r"aws.*secret|secret.*access")
_ENV_NAME = re.compile(r"(?:export[ \t]+|ENV[ \t]+|set[ \t]+|-[ \t]+)?[A-Z][A-Z0-9_]*")
_DOTTED = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|->|::)[A-Za-z_$][\w$]*)+")
_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")
_CAMEL_HUMP = re.compile(r"[a-z][A-Z]")
_KEYWORD_ARGUMENT = re.compile(r"[A-Za-z_]\w*=")
"""`ContextVar("request_token", default=None)`: what follows the name is an argument."""
MIN_SECRET_CHARS = 8


def _assignments(text: str, lowered: str) -> list[Span]:
    found: dict[int, Span] = {}
    for stem in _NAME_STEMS:
        # Inlined rather than calling per occurrence: names like `tokens` and `key_for`
        # are common in ordinary code and most occurrences stop at the first check.
        index = lowered.find(stem)
        while index != -1:
            tail = _NAME_END.match(lowered, index)
            if tail is not None:
                span = _assignment_at(text, lowered, index, stem, tail)
                if span is not None:
                    found.setdefault(span[0], span)
            index = lowered.find(stem, index + len(stem))
    return list(found.values())


def _assignment_at(
    text: str, lowered: str, index: int, stem: str, tail: re.Match[str]
) -> Span | None:
    """The secret assigned to the name whose last word starts at `index`, if any."""
    if (
        stem in ("pass", "pwd", "cred")
        and index
        and not _starts_word(text, index)
        and not _shouted_password(text, index, tail.group())
    ):
        return None
    match = _ASSIGNMENT.match(text, tail.end())
    if match is None:
        return None
    name_start = index
    while name_start > 0 and index - name_start < 64 and text[name_start - 1] in _NAME_CHARS:
        name_start -= 1
    separator = match.group("sep").strip()
    flag = text.startswith("-", name_start)
    xml = separator == ">"
    if (xml and not (name_start and text[name_start - 1] == "<")) or not (separator or flag):
        return None
    listed = separator == ","
    if listed and not match.group("close").strip("]"):
        return None
    name = lowered[name_start : tail.end()]
    if _PUBLIC_KEY_NAME.search(name):
        return None
    kind, strong = _name_kind(name, tail.group())
    if match.group("quote"):
        value, start = match.group("quoted"), match.start("quoted")
    else:
        value, start = match.group("bare"), match.start("bare")
        line = _line_start(text, index)
        env_style = match.group("sep") == "=" and _ENV_NAME.fullmatch(text, line, tail.end())
        # `PGPASSWORD=… psql …`: a shell variable set for one command ends at a blank.
        shell_prefix = env_style and text[match.end() : match.end() + 1] in (" ", "\t")
        if not (shell_prefix or _bare_value_ends(text, match.end(), xml=xml, flag=flag)):
            return None
        if not env_style and _code_reference(value):
            return None
    if listed and (
        any(word in value.lower() for word in _NAME_STEMS) or _KEYWORD_ARGUMENT.match(value)
    ):
        return None
    if not _secret_value(value, strong, tail.group().startswith("passphrase")):
        return None
    if kind == "secret" and _AWS_SECRET_NAME.search(name) and _AWS_SECRET.fullmatch(value):
        kind = "aws-secret-key"
    return (start, start + len(value), kind)


def _name_kind(name: str, tail: str) -> tuple[str, bool]:
    """What a secret under this (lower-case) name is called, and whether the name says so
    plainly enough that any literal counts, or only a random-looking one."""
    word = tail.rstrip("0123456789")
    if (word.startswith("pass") and word != "pass") or word == "pwd":
        return "password", True
    if word.startswith(("secret", "token")):
        return "secret", True
    if word == "key" and _STRONG_KEY_OWNER.search(name, 0, len(name) - len(tail)):
        return "secret", True
    return "high-entropy", False


def _bare_value_ends(text: str, end: int, *, xml: bool, flag: bool) -> bool:
    """An unquoted value is only taken when it is all there is up to the end of the line,
    a comment or the closing quote of an enclosing string (or the closing tag, or the
    next argument after a command-line flag); otherwise it is part of an expression."""
    if xml:
        return text.startswith("</", end)
    if flag and (end == len(text) or text[end].isspace()):
        return True
    return _BARE_END.match(text, end) is not None


def _shouted_password(text: str, index: int, tail: str) -> bool:
    """An upper-case name that runs words together ends in a whole `PASSWORD` or
    `PASSWD` (`PGPASSWORD`, `DBPASSWORD`), where a bare `PASS` may end `BYPASS`."""
    return tail.startswith(("password", "passwd")) and text[index - 1 : index + len(tail)].isupper()


def _starts_word(text: str, index: int) -> bool:
    before = text[index - 1]
    return not before.isalpha() or (before.islower() and text[index].isupper())


def _line_start(text: str, index: int) -> int:
    start = text.rfind("\n", 0, index) + 1
    while start < index and text[start] in " \t":
        start += 1
    return start


def _code_reference(value: str) -> bool:
    """An unquoted value that reads as a variable or attribute (`self.password`,
    `hashed_password`, `userInput`) rather than a literal (`hunter22`, `p@ss-w0rd`)."""
    if _DOTTED.fullmatch(value):
        return True
    if not _IDENTIFIER.fullmatch(value):
        return False
    lowered = value.lower()
    if any(stem in lowered for stem in _NAME_STEMS):
        return True
    has_digit = any(c.isdigit() for c in value)
    return not has_digit and ("_" in value or value.isupper() or bool(_CAMEL_HUMP.search(value)))


def _secret_value(value: str, strong: bool, phrase: bool) -> bool:
    """Only a passphrase may contain spaces: under other names a value with spaces is a
    label or a message (`"password": "Mot de passe"`), not a secret."""
    if len(value) < MIN_SECRET_CHARS or _is_placeholder(value):
        return False
    if not strong:
        return _looks_random(value)
    return phrase or not any(c.isspace() for c in value)


_PLACEHOLDER_WORDS = (
    "changeme",
    "change_me",
    "change-me",
    "changeit",
    "placeholder",
    "example",
    "dummy",
    "redacted",
    "replace",
    "your",
    "xxxx",
    "****",
    "....",
    "todo",
    "fixme",
    "sample",
    "insert",
    "notasecret",
    "not_a_secret",
    "not-a-secret",
)
_PLACEHOLDER_VALUES = frozenset(
    {"password", "passwd", "secret", "token", "undefined", "none", "null", "true", "false"}
    | {"required", "optional", "enabled", "disabled", "string", "hidden", "masked", "default"}
)
_TEMPLATE = re.compile(r"\$\{|\{\{|\$\(|%\(|%s|\{[\w.]*\}|^\$\w|^<.*>$|^\[.*\]$")
_ENV_VARIABLE_NAME = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
_PATH = re.compile(r"(?:~|\.{1,2})?/[\w.@-]+(?:/[\w.@-]*)*")


def _is_placeholder(value: str) -> bool:
    """Values that stand in for a secret rather than being one: templates, environment
    variable names, file paths, the usual `changeme`, and runs of `x` or `*`."""
    lowered = value.lower()
    if lowered in _PLACEHOLDER_VALUES or len(set(lowered)) <= 2:
        return True
    if any(word in lowered for word in _PLACEHOLDER_WORDS):
        return True
    if _TEMPLATE.search(value) or _ENV_VARIABLE_NAME.fullmatch(value):
        return True
    return _PATH.fullmatch(value) is not None and not _looks_random(value)


HIGH_ENTROPY_MIN_CHARS = 20


def _looks_random(value: str) -> bool:
    """Mixed-case letters with digits (or a long hex string) whose Shannon entropy is
    near what random text of that length reaches. The bar is length-aware because a
    random 20-character string rarely reaches 4 bits per character."""
    length = len(value)
    if length < HIGH_ENTROPY_MIN_CHARS or any(c.isspace() for c in value):
        return False
    has_digit = any(c.isdigit() for c in value)
    if has_digit and any(c.isupper() for c in value) and any(c.islower() for c in value):
        return _entropy(value) >= min(4.0, math.log2(length) - 0.9)
    if has_digit and length >= 32 and all(c in "0123456789abcdefABCDEF" for c in value):
        return _entropy(value) >= 3.0
    return False


def _entropy(value: str) -> float:
    length = len(value)
    return -sum(n / length * math.log2(n / length) for n in Counter(value).values())


# --- Running the stages ---------------------------------------------------------------


def _lowered(text: str) -> str:
    """Lower case with the same length, so positions found in it hold in `text`, and the
    same character for character, so a line lowers alike alone or in any text (U+0130 is
    the one character whose lower case is longer)."""
    return text.replace("\u0130", "i").lower() if "\u0130" in text else text.lower()


def _named(text: str) -> list[Span]:
    """The rules that look for names and markers in lower case; overlaps are settled by
    `_splice`."""
    lowered = _lowered(text)
    return (
        _auth_headers(text, lowered)
        + _basic_credentials(text, lowered)
        + _mysql_passwords(text, lowered)
        + _connection_strings(text, lowered)
        + _assignments(text, lowered)
    )


@lru_cache(maxsize=8)
def _named_memo(text: str) -> tuple[Span, ...]:
    return tuple(_named(text))


def _named_around(text: str, cut: int) -> list[Span]:
    return _around(_named, _named_memo, text, cut)


def _maintained_rules(text: str) -> list[Span]:
    """detect-secrets' regexes (`rule_set`): they run last, so a secret that the stages above
    know better (a token being typed, a key block cut by the window) is already a
    placeholder, and they catch the many services the stages above do not name."""
    return [
        span
        for span in rule_set.find(text, _lowered(text))
        if not _is_placeholder(text[span[0] : span[1]])
    ]


_STAGES: tuple[Callable[[str], list[Span]], ...] = (
    _private_keys,
    _tokens,
    _url_passwords,
    _named,
    _maintained_rules,
)
_AROUND_CUT: dict[Callable[[str], list[Span]], Callable[[str, int], list[Span]]] = {
    _tokens: _tokens_around,
    _named: _named_around,
}
"""The line-local stages, scanned around the cursor's line with the rest remembered."""
