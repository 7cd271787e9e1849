"""Secret redaction and excluded files (lsp_spark.privacy).

Fake secrets are assembled at run time from pieces and a seeded generator, so this file
and the fixtures never hold a literal that secret scanners (or push protection) would
flag. Golden fixtures in fixtures/privacy/ mark where a fake secret goes as `@@kind@@`.
"""

from __future__ import annotations

import random
import re
import string
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lsp_spark.backends.base import CompletionRequest
from lsp_spark.privacy import (
    DEFAULT_EXCLUDED_GLOBS,
    PLACEHOLDER,
    Exclusions,
    RedactionTally,
    contains_placeholder,
    document_path,
    placeholder,
    redact,
    redact_parts,
    redact_request,
)
from lsp_spark.privacy.exclusion import CACHE_SIZE, glob_regex
from lsp_spark.privacy.redaction import _named, _named_around, _tokens, _tokens_around

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "privacy"
ALNUM = string.ascii_letters + string.digits


def fake(alphabet: str, length: int, seed: int) -> str:
    """Random-looking text that always has an upper- and a lower-case letter and a digit
    when the alphabet offers them, as real keys do."""
    rng = random.Random(seed)
    while True:
        text = "".join(rng.choice(alphabet) for _ in range(length))
        wanted = [
            any(c.isupper() for c in text) or not any(c.isupper() for c in alphabet),
            any(c.islower() for c in text) or not any(c.islower() for c in alphabet),
            any(c.isdigit() for c in text) or not any(c.isdigit() for c in alphabet),
        ]
        if all(wanted):
            return text
        seed += 1000


def begin(label: str = "RSA PRIVATE KEY") -> str:
    return "-----" + "BEGIN " + label + "-----"


def end(label: str = "RSA PRIVATE KEY") -> str:
    return "-----" + "END " + label + "-----"


KEY_LINES = [fake(ALNUM + "+/", 64, seed) for seed in range(5)] + ["Kw=="]

SECRETS: dict[str, str] = {
    "aws-access-key": "AK" + "IA" + fake(string.ascii_uppercase + "234567", 16, 1),
    "aws-temporary-key": "AS" + "IA" + fake(string.ascii_uppercase + "234567", 16, 2),
    "aws-secret-key": fake(ALNUM + "/+", 40, 3),
    "github-token": "gh" + "p_" + fake(ALNUM, 36, 4),
    "github-fine-grained": "github" + "_pat_" + fake(ALNUM, 22, 5) + "_" + fake(ALNUM, 59, 6),
    "gitlab-token": "gl" + "pat-" + fake(ALNUM + "_-", 20, 7),
    "slack-token": "xo" + "xb-" + "123456789012-1234567890123-" + fake(ALNUM, 24, 8),
    "slack-webhook": "T0" + "12ABCDE/B0" + "34FGHIJ/" + fake(ALNUM, 24, 9),
    "stripe-key": "sk" + "_live_" + fake(ALNUM, 24, 10),
    "stripe-webhook-secret": "wh" + "sec_" + fake(ALNUM, 32, 11),
    "google-api-key": "AI" + "za" + fake(ALNUM + "_-", 35, 12),
    "openai-key": "sk-" + "proj-" + fake(ALNUM, 48, 13),
    "anthropic-key": "sk-" + "ant-api03-" + fake(ALNUM + "_-", 80, 14),
    "cerebras-key": "cs" + "k-" + fake(string.ascii_lowercase + string.digits, 48, 15),
    "huggingface-token": "hf" + "_" + fake(string.ascii_letters, 34, 16),
    "npm-token": "np" + "m_" + fake(ALNUM, 36, 17),
    "pypi-token": "py" + "pi-AgEIcHlwaS5vcmc" + fake(ALNUM + "_-", 60, 18),
    "jwt": "ey" + "JhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0." + fake(ALNUM + "_-", 43, 19),
    "random-40": fake(ALNUM, 40, 20),
    "random-24": fake(ALNUM, 24, 21),
    "hex-40": fake("0123456789abcdef", 40, 22),
    "private-key-json": "\\n".join([begin("PRIVATE KEY"), *KEY_LINES, end("PRIVATE KEY"), ""]),
}


def p(kind: str) -> str:
    return placeholder(kind)


S = SECRETS

# (rule, input, expected output). Every rule has at least one case.
POSITIVE = [
    (
        "aws-access-key",
        f"AWS_ACCESS_KEY_ID={S['aws-access-key']}",
        f"AWS_ACCESS_KEY_ID={p('aws-access-key')}",
    ),
    ("aws-access-key", f'key_id = "{S["aws-temporary-key"]}"', f'key_id = "{p("aws-access-key")}"'),
    (
        "aws-secret-key",
        f'aws_secret_access_key = "{S["aws-secret-key"]}"',
        f'aws_secret_access_key = "{p("aws-secret-key")}"',
    ),
    (
        "aws-secret-key",
        f"AWS_SECRET_ACCESS_KEY={S['aws-secret-key']}",
        f"AWS_SECRET_ACCESS_KEY={p('aws-secret-key')}",
    ),
    (
        "github-token",
        f"gh auth login --with-token {S['github-token']}",
        f"gh auth login --with-token {p('github-token')}",
    ),
    ("github-token", f'"{S["github-fine-grained"]}"', f'"{p("github-token")}"'),
    ("gitlab-token", f"GL={S['gitlab-token']}", f"GL={p('gitlab-token')}"),
    (
        "slack-token",
        f'client = WebClient("{S["slack-token"]}")',
        f'client = WebClient("{p("slack-token")}")',
    ),
    (
        "slack-webhook",
        f"url = 'https://hooks.slack.com/services/{S['slack-webhook']}'",
        f"url = 'https://hooks.slack.com/services/{p('slack-webhook')}'",
    ),
    (
        "stripe-key",
        f'stripe.api_key = "{S["stripe-key"]}"',
        f'stripe.api_key = "{p("stripe-key")}"',
    ),
    ("stripe-key", f"endpoint({S['stripe-webhook-secret']})", f"endpoint({p('stripe-key')})"),
    (
        "google-api-key",
        f'fetch("https://maps.googleapis.com/api?key={S["google-api-key"]}")',
        f'fetch("https://maps.googleapis.com/api?key={p("google-api-key")}")',
    ),
    ("openai-key", f'OpenAI(api_key="{S["openai-key"]}")', f'OpenAI(api_key="{p("openai-key")}")'),
    (
        "anthropic-key",
        f"export ANTHROPIC_API_KEY={S['anthropic-key']}",
        f"export ANTHROPIC_API_KEY={p('anthropic-key')}",
    ),
    (
        "cerebras-key",
        f"Cerebras(api_key='{S['cerebras-key']}')",
        f"Cerebras(api_key='{p('cerebras-key')}')",
    ),
    ("huggingface-token", f"login({S['huggingface-token']})", f"login({p('huggingface-token')})"),
    (
        "npm-token",
        f"//registry.npmjs.org/:_authToken={S['npm-token']}",
        f"//registry.npmjs.org/:_authToken={p('npm-token')}",
    ),
    ("pypi-token", f"password = {S['pypi-token']}", f"password = {p('pypi-token')}"),
    ("jwt", f'const jwt = "{S["jwt"]}";', f'const jwt = "{p("jwt")}";'),
    (
        "url-password",
        "DATABASE_URL=postgres://admin:s3cr3t-P4ss@db.internal:5432/app",
        f"DATABASE_URL=postgres://admin:{p('url-password')}@db.internal:5432/app",
    ),
    (
        "url-password",
        'redis.from_url("redis://:p@ss@word@cache:6379/0")',
        f'redis.from_url("redis://:{p("url-password")}@cache:6379/0")',
    ),
    (
        "auth-header",
        'curl -H "Authorization: Bearer 0a1b2c3d4e5f6a7b" https://api.example.com',
        f'curl -H "Authorization: Bearer {p("auth-header")}" https://api.example.com',
    ),
    (
        "auth-header",
        'headers = {"Proxy-Authorization": "Basic dXNlcjpodW50ZXIy"}',
        f'headers = {{"Proxy-Authorization": "Basic {p("auth-header")}"}}',
    ),
    (
        "auth-header",
        f"DEFAULT_HEADER = 'Bearer {S['random-24']}'",
        f"DEFAULT_HEADER = 'Bearer {p('auth-header')}'",
    ),
    ("password", 'password = "hunter22"', f'password = "{p("password")}"'),
    ("password", "DB_PASSWORD=supersecret", f"DB_PASSWORD={p('password')}"),
    ("password", "database:\n  password: hunter22\n", f"database:\n  password: {p('password')}\n"),
    (
        "password",
        'self.db_password = "Tr0ub4dor&3"',
        f'self.db_password = "{p("password")}"',
    ),
    ("password", 'const dbPassword = "hunter22!";', f'const dbPassword = "{p("password")}";'),
    ("password", 'password: str = "hunter22"', f'password: str = "{p("password")}"'),
    ("password", '{"passphrase": "open sesame now"}', f'{{"passphrase": "{p("password")}"}}'),
    ("password", "<password>hunter22hunter</password>", f"<password>{p('password')}</password>"),
    ("password", "mysql --password hunter22 -u root", f"mysql --password {p('password')} -u root"),
    (
        "password",
        "define('DB_PASSWORD', 'hunter22');",
        f"define('DB_PASSWORD', '{p('password')}');",
    ),
    ("password", "  - POSTGRES_PASSWORD=postgres", f"  - POSTGRES_PASSWORD={p('password')}"),
    ("password", 'if password == "letmein99":', f'if password == "{p("password")}":'),
    ("secret", 'SECRET_KEY = "django-insecure-9x!k2@l"', f'SECRET_KEY = "{p("secret")}"'),
    ("secret", 'client_secret: "0a1b2c3d-kk"', f'client_secret: "{p("secret")}"'),
    ("secret", 'config["api_key"] = "a1b2c3d4e5"', f'config["api_key"] = "{p("secret")}"'),
    ("secret", 'apiKey: "a1b2c3d4e5",', f'apiKey: "{p("secret")}",'),
    ("secret", "X_AUTH_TOKEN=abc123def456", f"X_AUTH_TOKEN={p('secret')}"),
    (
        "secret",
        'os.environ.setdefault("GITHUB_TOKEN", "d3adb33fcafe")',
        f'os.environ.setdefault("GITHUB_TOKEN", "{p("secret")}")',
    ),
    ("secret", 'headers["X-Api-Key"] = "abc123def456"', f'headers["X-Api-Key"] = "{p("secret")}"'),
    ("secret", 'curl -H "X-Api-Key: abc123def456"', f'curl -H "X-Api-Key: {p("secret")}"'),
    ("secret", 'token := "abc123def456"', f'token := "{p("secret")}"'),
    ("secret", "login(user, token='partially-typed", f"login(user, token='{p('secret')}"),
    ("high-entropy", f'key = "{S["random-40"]}"', f'key = "{p("high-entropy")}"'),
    ("high-entropy", f'AUTH = "{S["random-24"]}"', f'AUTH = "{p("high-entropy")}"'),
    ("high-entropy", f"credentials: {S['hex-40']}", f"credentials: {p('high-entropy')}"),
    ("high-entropy", f'SMTP_PASS = "{S["random-24"]}"', f'SMTP_PASS = "{p("high-entropy")}"'),
]

NEGATIVE = [
    "for key, value in items.items():\n    print(key)",
    "max_tokens = 128",
    'token_type = "bearer_token_x"',
    'tokenizer = "bert-base-uncased-model"',
    'password_hash = "pbkdf2_sha256$260000$abcdef"',
    "self.password = password",
    "self.api_key = api_key",
    "password = get_password()",
    "password = hashed_password",
    "token = request.headers.get('X-Token')",
    'api_key = os.environ["API_KEY"]',
    'api_key = os.environ.get("API_KEY", "")',
    'PASSWORD = "${DB_PASSWORD}"',
    "password: changeme",
    "API_KEY=your-api-key-here",
    'secret = "xxxxxxxxxxxx"',
    'token = "<your token>"',
    'password = "short"',
    'password = ""',
    'token: "{{ secrets.GITHUB_TOKEN }}"',
    'api_key_env = "OPENAI_API_KEY"',
    'token = "GITHUB_TOKEN"',
    'token = "/var/run/secrets/kubernetes.io/serviceaccount/token"',
    'fields = ("username", "password1", "password2")',
    'error_message = "Invalid password, please try again"',
    '{"password": "Mot de passe", "token": "Jeton d acces"}',
    "password: required",
    'secret = "Secret not found in the vault"',
    'TOKEN_URL = "https://oauth2.googleapis.com/token"',
    'author = "Jane Developer-Smith"',
    'passthrough = "something-long-here"',
    'bypass = "a1B2c3D4e5F6g7H8i9J0k1"',
    'url = "https://example.com/api/v1/users?page=2"',
    'DATABASE_URL = f"postgres://{user}:{password}@{host}/db"',
    'dsn = "postgres://app:${DB_PASSWORD}@db/app"',
    "git clone git@github.com:org/repo.git",
    "ssh://git@host:22/repo.git",
    'request_id = "531515a6-89c5-4a8f-9326-0c7cdff6ea67"',
    'key = "531515a6-89c5-4a8f-9326-0c7cdff6ea67"',
    'color = "#ff00aa"',
    'KEY_COLOR = "#ff00aa"',
    '"integrity": "sha512-pKvURIxJVi2CgRXROh/M6pJ/UrTVRZKX+LQ+QtqJI4vBNibkPcs43bCCSIkn7JBPt'
    'CBXRDmD6IWFF51QVRr+Yg=="',
    'commit = "2d711642b726b04401627ca9fbac32f5c8530fb1"',
    'DATA = "aGVsbG8gd29ybGQgdGhpcyBpcyB0ZXN0IGRhdGE="',
    f'public_key = "{S["random-40"]}"',
    'cache_key = "user_profile_settings_v2"',
    "ESTIMATED_CHARS_PER_TOKEN_FOR_SOMETHING = 4",
    "completionDeadlineMillisecondsValue = someReallyLongFunctionNameForTests()",
    '<div class="sk-folding-cube-animation-delay">',
    "xoxo-hugs-and-kisses-forever-and-ever",
    "pk_live_" + "0123456789abcdefGHIJ",
    'headers = {"Authorization": f"Bearer {token}"}',
    'curl -H "Authorization: Bearer $TOKEN" https://x',
    "authorization: required_for_admins",
    "Bearer tokens are described in RFC 6750",
    'if pem.startswith("-----BEGIN RSA PRIVATE KEY-----"):\n    return pem',
    'HEADER = "-----BEGIN PRIVATE KEY-----"\nFOOTER = "-----END PRIVATE KEY-----"',
    "-----BEGIN PUBLIC KEY-----\n" + "\n".join(KEY_LINES) + "\n-----END PUBLIC KEY-----",
    "def check(passwd):\n    pass\n",
    "TEST_KEY = 'test-key-not-a-secret'",
]


@pytest.mark.parametrize(("rule", "text", "expected"), POSITIVE)
def test_each_rule_redacts_its_secret(rule: str, text: str, expected: str) -> None:
    result = redact(text)
    assert result.text == expected
    assert result.total == 1
    kind = PLACEHOLDER.search(expected)
    assert kind is not None
    assert result.counts == {kind.group()[len("<redacted:") : -1]: 1}


def test_every_rule_has_a_case() -> None:
    kinds = {kind for _, _, expected in POSITIVE for kind in PLACEHOLDER.findall(expected)}
    assert kinds == {
        p(kind)
        for kind in (
            "aws-access-key",
            "aws-secret-key",
            "github-token",
            "gitlab-token",
            "slack-token",
            "slack-webhook",
            "stripe-key",
            "google-api-key",
            "openai-key",
            "anthropic-key",
            "cerebras-key",
            "huggingface-token",
            "npm-token",
            "pypi-token",
            "jwt",
            "url-password",
            "auth-header",
            "password",
            "secret",
            "high-entropy",
        )
    }


@pytest.mark.parametrize("text", NEGATIVE)
def test_ordinary_code_is_left_alone(text: str) -> None:
    result = redact(text)
    assert result.text == text
    assert result.counts == {}


def test_the_placeholder_keeps_the_code_shape() -> None:
    text = f"""config = {{
    "user": "app",
    "password": "hunter22",
    "token": '{S["github-token"]}',
}}
"""
    result = redact(text)
    assert result.text == (
        f'config = {{\n    "user": "app",\n    "password": "{p("password")}",\n'
        f"    \"token\": '{p('github-token')}',\n}}\n"
    )
    assert result.counts == {"github-token": 1, "password": 1}
    assert PLACEHOLDER.fullmatch(p("password"))
    assert contains_placeholder(f"x = '{p('secret')}'")
    assert not contains_placeholder("x = '<redacted>'")


def test_a_redaction_that_uncovers_another_secret() -> None:
    """Found by the idempotence property: the bearer token only ends where a following
    assignment's value has been taken out, so the rules run until nothing changes."""
    text = "BEARER aB3dEf6hIj9kLm2nOp5qRs8tPASSWORD=Authorization: "
    result = redact(text)
    assert result.text == f"BEARER {p('auth-header')}{p('password')} "
    assert result.counts == {"auth-header": 1, "password": 1}


def test_positions_hold_when_lower_case_changes_the_length() -> None:
    """`"İ".lower()` is two characters; names are found in a lower-cased copy."""
    text = "# İstanbul office\npassword = 'hunter22'\n"
    assert redact(text).text == f"# İstanbul office\npassword = '{p('password')}'\n"


def test_counts_add_up_per_kind() -> None:
    text = f"A={S['github-token']}\nB={S['github-token']}\npassword = 'hunter22'\n"
    assert redact(text).counts == {"github-token": 2, "password": 1}


# --- Private keys -------------------------------------------------------------------

KEY_BODY = "\n".join(KEY_LINES)
KEY_BLOCK = f"{begin()}\n{KEY_BODY}\n{end()}\n"


def test_private_key_block_keeps_its_markers() -> None:
    result = redact(f"x = 1\n{KEY_BLOCK}y = 2\n")
    assert result.text == f"x = 1\n{begin()}\n{p('private-key')}\n{end()}\ny = 2\n"
    assert result.counts == {"private-key": 1}


@pytest.mark.parametrize(
    "label", ["PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY", "ENCRYPTED PRIVATE KEY"]
)
def test_private_key_labels(label: str) -> None:
    text = f"{begin(label)}\n{KEY_BODY}\n{end(label)}"
    assert redact(text).text == f"{begin(label)}\n{p('private-key')}\n{end(label)}"


def test_private_key_block_with_windows_line_ends() -> None:
    text = f"{begin()}\r\n" + "\r\n".join(KEY_LINES) + f"\r\n{end()}\r\n"
    assert redact(text).text == f"{begin()}\r\n{p('private-key')}\r\n{end()}\r\n"


def test_pgp_private_key_block() -> None:
    label = "PGP PRIVATE KEY BLOCK"
    text = f"{begin(label)}\nVersion: GnuPG v2\n\n{KEY_BODY}\n{end(label)}\n"
    assert redact(text).text == f"{begin(label)}\n{p('private-key')}\n{end(label)}\n"


def test_encrypted_pem_headers_are_part_of_the_body() -> None:
    text = f"{begin()}\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0A1B\n\n{KEY_BODY}\n{end()}"
    assert redact(text).text == f"{begin()}\n{p('private-key')}\n{end()}"


def test_private_key_in_an_escaped_json_string() -> None:
    escaped = "\\n".join(KEY_LINES)
    label = "PRIVATE KEY"
    text = f'{{"private_key": "{begin(label)}\\n{escaped}\\n{end(label)}\\n"}}'
    assert redact(text).text == (
        f'{{"private_key": "{begin(label)}\\n{p("private-key")}\\n{end(label)}\\n"}}'
    )


def test_private_key_split_over_concatenated_literals() -> None:
    lines = "".join(f'    "{line}\\n"\n' for line in KEY_LINES)
    text = f'KEY = (\n    "{begin()}\\n"\n{lines}    "{end()}\\n"\n)\n'
    result = redact(text)
    assert result.text == (
        f'KEY = (\n    "{begin()}\\n"\n    "{p("private-key")}\\n"\n    "{end()}\\n"\n)\n'
    )


def test_key_block_cut_by_the_window_end_is_redacted_to_the_end() -> None:
    window = f"def load():\n    return '''{begin()}\n{KEY_LINES[0]}\n{KEY_LINES[1][:20]}"
    assert redact(window).text == f"def load():\n    return '''{begin()}\n{p('private-key')}"


def test_key_block_cut_by_the_window_start_is_redacted_from_the_start() -> None:
    window = f"{KEY_LINES[2][30:]}\n{KEY_LINES[3]}\n{KEY_LINES[5]}\n{end()}'''\n\nx = 1\n"
    assert redact(window).text == f"{p('private-key')}\n{end()}'''\n\nx = 1\n"


def test_key_block_cut_just_after_the_marker() -> None:
    assert redact(f"{begin()}\nMIIE").text == f"{begin()}\n{p('private-key')}"
    assert redact(f"{begin()}\n").text == f"{begin()}\n"


def test_a_complete_block_then_a_cut_one() -> None:
    window = f"{KEY_BLOCK}\nother = 1\n{begin()}\n{KEY_LINES[0]}"
    assert redact(window).text == (
        f"{begin()}\n{p('private-key')}\n{end()}\n\nother = 1\n{begin()}\n{p('private-key')}"
    )
    assert redact(window).counts == {"private-key": 2}


def test_cursor_inside_a_key_block() -> None:
    """Prefix and suffix each hold one marker; redacted together they make one block."""
    prefix = f"KEY = '''{begin()}\n{KEY_LINES[0]}\n{KEY_LINES[1][:10]}"
    suffix = f"{KEY_LINES[1][10:]}\n{KEY_LINES[2]}\n{end()}'''\n"
    result = redact_parts(prefix, suffix)
    assert result.parts == (f"KEY = '''{begin()}\n{p('private-key')}", f"\n{end()}'''\n")
    assert result.counts == {"private-key": 1}
    apart = (redact(prefix), redact(suffix))
    assert apart[0].text == result.parts[0]
    assert apart[1].text == f"{p('private-key')}\n{end()}'''\n"


# --- Redacting around the cursor ------------------------------------------------------


def test_a_token_split_by_the_cursor_is_still_found() -> None:
    token = S["github-token"]
    prefix, suffix = f'client.login("{token[:10]}', f'{token[10:]}")\nclient.run()\n'
    assert redact(prefix).counts == redact(suffix).counts == {}
    result = redact_parts(prefix, suffix)
    assert result.parts == (f'client.login("{p("github-token")}', '")\nclient.run()\n')
    assert result.counts == {"github-token": 1}


def test_parts_keep_their_boundaries_around_secrets() -> None:
    first = f"a = '{S['github-token']}'\n"
    second = "password = 'hunter22'\n"
    third = "b = 2\n"
    result = redact_parts(first, second, third)
    assert result.parts == (
        f"a = '{p('github-token')}'\n",
        f"password = '{p('password')}'\n",
        third,
    )
    assert redact_parts().parts == ()


def test_redact_request_redacts_prefix_suffix_and_context() -> None:
    request = CompletionRequest(
        prefix=f"client = OpenAI(api_key='{S['openai-key'][:20]}",
        suffix=f"{S['openai-key'][20:]}')\n",
        context="# settings.py\nDB_PASSWORD = 'hunter22'\n",
        language="python",
        filename="app.py",
    )
    redacted, counts = redact_request(request)
    assert redacted.prefix == f"client = OpenAI(api_key='{p('openai-key')}"
    assert redacted.suffix == "')\n"
    assert redacted.context == f"# settings.py\nDB_PASSWORD = '{p('password')}'\n"
    assert (redacted.language, redacted.filename) == ("python", "app.py")
    assert counts == {"openai-key": 1, "password": 1}


def test_tally_sums_counts_for_stats() -> None:
    tally = RedactionTally()
    tally.add({"password": 1})
    tally.add({})
    tally.add({"password": 2, "jwt": 1})
    assert tally.snapshot() == {"jwt": 1, "password": 3}
    assert (tally.total, tally.prompts) == (4, 2)


# --- Tokens being typed ---------------------------------------------------------------

JWT_HEADER = S["jwt"][: S["jwt"].index(".") + 1]

# (kind, prefix, characters after it from which the token is redacted, token)
TYPED = [
    ("aws-access-key", "AKIA", 8, S["aws-access-key"]),
    ("aws-access-key", "ASIA", 8, S["aws-temporary-key"]),
    ("github-token", "ghp_", 8, S["github-token"]),
    ("github-token", "github_pat_", 8, S["github-fine-grained"]),
    ("gitlab-token", "glpat-", 8, S["gitlab-token"]),
    ("slack-token", "xoxb-", 8, S["slack-token"]),
    ("stripe-key", "sk_live_", 8, S["stripe-key"]),
    ("stripe-key", "whsec_", 8, S["stripe-webhook-secret"]),
    ("google-api-key", "AIza", 8, S["google-api-key"]),
    ("openai-key", "sk-proj-", 8, S["openai-key"]),
    ("openai-key", "sk-", 12, "sk-" + fake(ALNUM, 48, 23)),
    ("anthropic-key", "sk-ant-api03-", 8, S["anthropic-key"]),
    ("cerebras-key", "csk-", 8, S["cerebras-key"]),
    ("huggingface-token", "hf_", 10, S["huggingface-token"]),
    ("npm-token", "npm_", 8, S["npm-token"]),
    ("pypi-token", "pypi-Ag", 8, S["pypi-token"]),
    ("jwt", JWT_HEADER + "eyJ", 10, S["jwt"]),
]


@pytest.mark.parametrize(
    ("kind", "prefix", "threshold", "token"), TYPED, ids=[row[1] for row in TYPED]
)
def test_a_token_typed_one_character_at_a_time_is_redacted_from_its_threshold(
    kind: str, prefix: str, threshold: int, token: str
) -> None:
    """A completion request goes out on nearly every keystroke: from `threshold`
    characters after the prefix on, the token is gone from each one."""
    above = "import client\n\nconn = client.connect(\n"
    below = "\n)\nconn.run()\n"
    assert token.startswith(prefix)
    first_hidden = len(prefix) + threshold
    for typed in range(len(token) + 1):
        before, after = f'{above}    "{token[:typed]}', f'"{below}'
        sent = redact_parts(before, after).parts
        assert "".join(sent) == redact(before + after).text
        assert token[:first_hidden] not in "".join(sent)
        if typed >= first_hidden:
            assert sent == (f'{above}    "{p(kind)}', after), typed
        else:
            assert sent == (before, after), typed


@pytest.mark.parametrize(
    "text",
    [
        "pip install sk-learn scikit-learn",
        '<div class="sk-circle12 sk-child"></div>',
        "from huggingface_hub import hf_hub_download",
        "hf_AutoModel = transformers.AutoModel",
        'cache = os.environ["npm_config_cache"]',
        "echo $npm_lifecycle_event $npm_package_version",
        "docker run -p 8080:8080 pypiserver/pypi-server:latest run",
        'PATTERN = re.compile(r"ghp_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{82}")',
        'if token.startswith(("ghp_", "gho_", "ghs_", "github_pat_")):',
        "ghs_username = 'octocat'",
        'EXAMPLE = "ghp_xxxxxxxxxxxxxxxx"',
        "def sk_test_fixtures():",
        '<section class="csk-dashboard">',
        'slack.WebClient("xoxb-your-bot-token-here")',
        "GITLAB = 'glpat-xxxxxxxxxxxxxxxx'",
        "whsec_placeholder = None",
        "ASIA_PACIFIC_REGIONS = ['ap-southeast-1']",
        "model = 'sk-proj-settings'",
        'HEADER = "' + JWT_HEADER[:-1] + '"',
    ],
)
def test_names_like_a_token_being_typed_are_left_alone(text: str) -> None:
    """A prefix followed by a name (a word, `snake_case`, kebab-case), an example of one
    kind of character or a pattern is code, however far it is typed."""
    for typed in range(len(text) + 1):
        assert redact(text[:typed]).text == text[:typed]


# --- Golden fixtures -----------------------------------------------------------------

GOLDEN = sorted(path for path in FIXTURES.glob("*.input.*"))


def fill(text: str) -> str:
    for kind, secret in SECRETS.items():
        text = text.replace(f"@@{kind}@@", secret)
    assert "@@" not in text
    return text


@pytest.mark.parametrize("source", GOLDEN, ids=lambda path: path.name)
def test_golden_fixture(source: Path) -> None:
    expected = source.with_name(source.name.replace(".input.", ".expected."))
    result = redact(fill(source.read_text(encoding="utf-8")))
    assert result.text == expected.read_text(encoding="utf-8")


def test_there_are_golden_fixtures() -> None:
    assert len(GOLDEN) >= 4


# --- Properties --------------------------------------------------------------------

CODE_WORDS = st.sampled_from(
    [
        *("value", "result", "count", "items", "index", "name", "data", "user", "config"),
        *("path", "self", "return", "def", "for", "in", "if", "else", "x", "y", "42", "0"),
        *("None", "True"),
    ]
)
PUNCTUATION = st.sampled_from(
    [
        *(" ", "\n", "    ", "(", ")", "[", "]", "{", "}", ".", ",", ":", ";", "=", "==", "+"),
        *("-", "*", "/", "<", ">", "#", '"', "'", "\\n", "!", "%", "_", "|", "&"),
    ]
)
PLAIN_CODE = st.lists(st.tuples(CODE_WORDS, PUNCTUATION), max_size=80).map(
    lambda pairs: "".join(word + punctuation for word, punctuation in pairs)
)
SECRET_PIECES = st.sampled_from(
    [
        *SECRETS.values(),
        *(token[: len(prefix) + threshold] for _, prefix, threshold, token in TYPED),
        "password = ",
        "TOKEN=",
        "api_key: ",
        '"secret": "',
        "--password ",
        "<password>",
        "</password>",
        "hunter22",
        "postgres://u:",
        "@host/db",
        "Authorization: Bearer ",
        "Bearer ",
        begin(),
        end(),
        begin("PRIVATE KEY"),
        *KEY_LINES,
        p("password"),
        "<redacted:",
        "${VAR}",
        "\\n",
        "'",
        '"',
    ]
)
MIXED = st.lists(
    st.one_of(CODE_WORDS, PUNCTUATION, SECRET_PIECES, st.text(max_size=8)), max_size=60
).map("".join)


@settings(max_examples=300, deadline=None)
@given(MIXED)
def test_redact_is_idempotent(text: str) -> None:
    once = redact(text).text
    assert redact(once).text == once


@settings(max_examples=300, deadline=None)
@given(PLAIN_CODE)
def test_text_without_candidates_is_unchanged(text: str) -> None:
    result = redact(text)
    assert result.text == text
    assert result.counts == {}


@settings(max_examples=200, deadline=None)
@given(MIXED, st.data())
def test_parts_join_to_the_whole_redaction(text: str, data: st.DataObject) -> None:
    cut = data.draw(st.integers(min_value=0, max_value=len(text)))
    parts = redact_parts(text[:cut], text[cut:])
    whole = redact(text)
    assert "".join(parts.parts) == whole.text
    assert parts.counts == whole.counts


# --- Excluded files ------------------------------------------------------------------

DEFAULTS = Exclusions()


@pytest.mark.parametrize(
    "uri",
    [
        "file:///home/u/project/.env",
        "file:///home/u/My%20Project/.env",
        "file:///home/u/project/.env.local",
        "file:///home/u/project/.env.production",
        "file:///home/u/project/docker/prod.env",
        "file:///home/u/project/.envrc",
        "file:///home/u/project/certs/server.pem",
        "file:///home/u/project/tls/server.key",
        "file:///home/u/project/AuthKey_ABC123.p8",
        "file:///home/u/project/cert.p12",
        "file:///home/u/project/cert.pfx",
        "file:///home/u/project/android/release.jks",
        "file:///home/u/project/android/debug.keystore",
        "file:///home/u/passwords.kdbx",
        "file:///home/u/.ssh/id_rsa",
        "file:///home/u/.ssh/config",
        "file:///home/u/keys/id_ed25519",
        "file:///home/u/keys/id_ecdsa.pub",
        "file:///home/u/.aws/credentials",
        "file:///home/u/.aws/sso/cache/abc.json",
        "file:///home/u/.docker/config.json",
        "file:///home/u/.kube/config",
        "file:///home/u/.config/gh/hosts.yml",
        "file:///home/u/.git-credentials",
        "file:///home/u/.netrc",
        "file:///home/u/.npmrc",
        "file:///home/u/.pypirc",
        "file:///home/u/.pgpass",
        "file:///home/u/infra/prod.tfvars",
        "file:///home/u/infra/terraform.tfstate",
        "file:///home/u/infra/terraform.tfstate.backup",
        "file:///home/u/project/credentials",
        "file:///home/u/project/credentials.json",
        "file:///home/u/project/config/secrets.yml",
        "file:///home/u/project/config/secret.toml",
        "file:///home/u/project/gcp-credentials.json",
        "file:///home/u/project/db.secret",
        "file:///home/u/project/secrets/db_password.txt",
        "file:///home/u/project/client_secret_123.apps.googleusercontent.com.json",
        "file:///home/u/project/my-service-account.json",
        "file:///home/u/project/.ENV",
        "file:///c%3A/Users/u/project/.env",
        "file:///C:/Users/u/.ssh/id_rsa",
        "C:\\Users\\u\\project\\.env",
        "/home/u/project/.env",
        "vscode-remote://ssh-remote%2Bbox/home/u/project/.env",
    ],
)
def test_default_exclusions(uri: str) -> None:
    assert DEFAULTS.excludes(uri)


@pytest.mark.parametrize(
    "uri",
    [
        "file:///home/u/project/environment.py",
        "file:///home/u/project/env.py",
        "file:///home/u/project/.envoy.yaml",
        "file:///home/u/project/src/env/settings.py",
        "file:///home/u/project/keyboard.py",
        "file:///home/u/project/monkey.ts",
        "file:///home/u/project/botocore/credentials.py",
        "file:///home/u/project/google/auth/credentials.py",
        "file:///home/u/project/secrets_manager.py",
        "file:///home/u/project/tokens.json",
        "file:///home/u/project/README.md",
        "file:///home/u/project/id_rsa_parser/../main.py",
        "untitled:Untitled-1",
        "untitled:.env",
    ],
)
def test_not_excluded_by_default(uri: str) -> None:
    assert not DEFAULTS.excludes(uri)


def test_every_default_glob_excludes_something() -> None:
    """Each default glob compiles and matches a path built from it."""
    for glob in DEFAULT_EXCLUDED_GLOBS:
        sample = re.sub(r"\{(\w+),[^}]*\}", r"\1", glob.rstrip("/"))
        sample = re.sub(r"\[(.)[^\]]*\]", r"\1", sample).replace("*", "x")
        if glob.endswith("/"):
            sample += "/inside"
        assert DEFAULTS.excludes(f"/home/u/{sample}"), glob


def test_user_globs_add_to_the_defaults() -> None:
    exclusions = Exclusions(["*.secret.py", "private/", "config/prod/**", "/srv/app/*.yaml"])
    assert exclusions.excludes("file:///w/app/db.secret.py")
    assert exclusions.excludes("file:///w/app/private/notes.md")
    assert not exclusions.excludes("file:///w/app/private.md")
    assert exclusions.excludes("file:///w/config/prod/deep/values.yaml")
    assert not exclusions.excludes("file:///w/config/staging/values.yaml")
    assert exclusions.excludes("/srv/app/values.yaml")
    assert not exclusions.excludes("/opt/srv/app/values.yaml")
    assert exclusions.excludes("file:///w/.env")


def test_double_star_spans_zero_or_more_folders() -> None:
    exclusions = Exclusions(["deploy/**/values.yaml"], defaults=False)
    assert exclusions.excludes("/w/deploy/values.yaml")
    assert exclusions.excludes("/w/deploy/a/b/values.yaml")
    assert not exclusions.excludes("/w/deploy/a/b/other.yaml")


def test_character_classes_and_braces() -> None:
    exclusions = Exclusions(["secret[0-9].txt", "keys.{yml,yaml}", "log[!a-z].txt"], defaults=False)
    assert exclusions.excludes("/w/secret7.txt")
    assert not exclusions.excludes("/w/secretx.txt")
    assert exclusions.excludes("/w/keys.yaml")
    assert exclusions.excludes("/w/keys.yml")
    assert not exclusions.excludes("/w/keys.json")
    assert exclusions.excludes("/w/log1.txt")
    assert not exclusions.excludes("/w/logb.txt")


def test_a_bang_glob_takes_files_back() -> None:
    exclusions = Exclusions(["!.env.example", "!**/fixtures/**"])
    assert exclusions.excludes("file:///w/.env.local")
    assert not exclusions.excludes("file:///w/.env.example")
    assert not exclusions.excludes("file:///w/tests/fixtures/server.key")


def test_defaults_can_be_turned_off() -> None:
    exclusions = Exclusions(["*.pem"], defaults=False)
    assert not exclusions.excludes("file:///w/.env")
    assert exclusions.excludes("file:///w/cert.pem")
    assert not Exclusions(defaults=False).excludes("file:///w/.env")


def test_blank_and_comment_globs_are_ignored() -> None:
    assert glob_regex("") is None
    assert glob_regex("   ") is None
    assert glob_regex("# a comment") is None
    assert Exclusions(["", "# nothing"], defaults=False).globs == ()


def test_document_path_normalises_uris_and_paths() -> None:
    assert document_path("file:///home/u/My%20Project/.env") == "/home/u/My Project/.env"
    assert document_path("file:///c%3A/Users/u/x.py") == "/c:/Users/u/x.py"
    assert document_path("C:\\Users\\u\\x.py") == "/C:/Users/u/x.py"
    assert document_path("file:///home/u/a/../.ssh/id_rsa") == "/home/u/.ssh/id_rsa"
    assert document_path("relative/.env") == "/relative/.env"
    assert document_path("untitled:Untitled-1") is None


def test_answers_stay_right_past_the_cache_size() -> None:
    exclusions = Exclusions()
    for index in range(CACHE_SIZE + 10):
        assert exclusions.excludes(f"file:///w/{index}/.env")
        assert not exclusions.excludes(f"file:///w/{index}/main.py")
    assert exclusions.excludes("file:///w/0/.env")


GITHUB_TOKEN = "ghp_" + "a1B2c3D4" * 5
TOKEN_PIECES = [
    GITHUB_TOKEN,
    GITHUB_TOKEN[:12],
    "ghp_",
    "a1B2c3D4",
    "AKIAABCDEFGHIJKLMNOP",
    "AKIAABCDEFGH",
    "sk-" + "x9Y8z7" * 5,
    "sk-proj-",
    "csk-",
    "hf_",
    "aBcDeFgHiJ",
    JWT_HEADER,
    "eyJ",
    *"-_.\n x",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(TOKEN_PIECES), max_size=80), st.integers(min_value=0))
def test_tokens_found_around_the_cursor_line_are_those_of_the_whole_text(
    pieces: list[str], cut: int
) -> None:
    assert_scanned_alike(_tokens_around, _tokens, "".join(pieces), cut)


def assert_scanned_alike(around, whole, text: str, cut: int) -> None:
    """A line-local stage finds the same spans around any cut as in the whole text."""
    cut = cut % (len(text) + 1)
    assert sorted(around(text, cut)) == sorted(whole(text))


NAMED_PIECES = [
    "password",
    "db_token",
    "API_KEY",
    "Authorization",
    "Bearer ",
    " = ",
    "=",
    ": ",
    "> ",
    " ",
    "-",
    "#",
    "<",
    "</password>",
    "export ",
    "\\",
    "hunter2secret99",
    "A1b2C3d4E5f6G7h8I9j0",
    "${X}",
    "\u212a",
    "ey",
    "\u0130",
    *"\"'`\n\r",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(NAMED_PIECES), max_size=60), st.integers(min_value=0))
def test_names_found_around_the_cursor_line_are_those_of_the_whole_text(
    pieces: list[str], cut: int
) -> None:
    assert_scanned_alike(_named_around, _named, "".join(pieces), cut)


def test_tokens_on_the_lines_around_the_cursor_are_redacted_keystroke_after_keystroke() -> None:
    above = f"key = '{GITHUB_TOKEN}'\nx = 1\n"
    below = f"\nother = '{GITHUB_TOKEN}'\n"
    for typed in ("va", "val", "valu"):
        prefix, suffix = redact_parts(above + typed, ")" + below).parts
        assert GITHUB_TOKEN not in prefix + suffix
        assert prefix.endswith(typed) and suffix.startswith(")\nother = '<redacted:")
