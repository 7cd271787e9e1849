"""Every kind of secret issue 40 found missing is redacted, and the ordinary code around it
is not; detect-secrets' regexes, read from the installed package, run behind keywords
that every one of their matches contains."""

from __future__ import annotations

import base64
import random
import re
import string

import pytest

from lsp_spark.privacy import redact
from lsp_spark.privacy import rule_set as rules

_rng = random.Random(40)
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"


def fake(alphabet: str, length: int) -> str:
    """Random characters, made at run time so that no scanner takes this file for a leak."""
    return "".join(_rng.choice(alphabet) for _ in range(length))


PASSWORD = fake(ALNUM, 14)
BASIC = base64.b64encode(f"deploy:{fake(ALNUM, 12)}".encode()).decode()
DISCORD_TOKEN = fake(ALNUM + "_-", 68)

SECRET_KINDS: dict[str, tuple[str, str]] = {
    # kind: (a line of code holding the secret, the secret)
    "pgpassword": (f'PGPASSWORD="{PASSWORD}" psql -h db.internal -U shop\n', PASSWORD),
    "pgpassword-export": (f"export PGPASSWORD={PASSWORD}\n", PASSWORD),
    "mysql-pwd": (f"MYSQL_PWD={PASSWORD} mysql -u root shop < dump.sql\n", PASSWORD),
    "db-pwd": (f'DB_PWD = "{PASSWORD}"\n', PASSWORD),
    "shopify": (f'TOKEN_SHOP = "{(token := "shp" + "at_" + fake(HEX, 32))}"\n', token),
    "azure-account-key": (
        "STORAGE = 'DefaultEndpointsProtocol=https;AccountName=shopassets;"
        f"AccountKey={(key := fake(ALNUM + '+/', 86) + '==')};EndpointSuffix=core.windows.net'\n",
        key,
    ),
    "private-key-id": (f'  "private_key_id": "{(key_id := fake(HEX, 40))}",\n', key_id),
    "sendgrid": (
        f'mail = SendGridAPIClient("{(sg := "SG." + fake(ALNUM, 22) + "." + fake(ALNUM, 43))}")\n',
        sg,
    ),
    "telegram": (
        f'bot = Bot("{fake(string.digits, 10)}:{(bot := "AA" + fake(ALNUM + "_-", 33))}")\n',
        bot,
    ),
    "discord-webhook": (
        f'HOOK = "https://discord.com/api/webhooks/{fake(string.digits, 18)}/{DISCORD_TOKEN}"\n',
        DISCORD_TOKEN,
    ),
    "sentry-dsn": (
        f'sentry_sdk.init(dsn="https://{(dsn := fake(HEX, 32))}@o482934.ingest.sentry.io/57319")\n',
        dsn,
    ),
    "digitalocean": (f'do = Client("{(do := "dop" + "_v1_" + fake(HEX, 64))}")\n', do),
    "mysql-p": (f"mysql -h db -u root -p{PASSWORD} shop < dump.sql\n", PASSWORD),
    "x-auth-basic": (f'headers = {{"X-Auth": "Basic {BASIC}"}}\n', BASIC),
    "twilio-api-key": (f'twilio = Client("{(sk := "SK" + fake(HEX, 32))}", secret)\n', sk),
    "twilio-auth-token": (f'TWILIO_AUTH_TOKEN = "{(auth := fake(HEX, 32))}"\n', auth),
}

ORDINARY_ABOVE = 'def login(request):\n    password = request.form["password"]\n'
ORDINARY_BELOW = "token = get_token()\nreturn render(request, 'home.html', {'user': user})\n"


@pytest.mark.parametrize(("line", "secret"), SECRET_KINDS.values(), ids=SECRET_KINDS)
def test_each_kind_is_redacted_and_the_code_around_it_is_not(line: str, secret: str) -> None:
    result = redact(ORDINARY_ABOVE + line + ORDINARY_BELOW)
    assert secret not in result.text
    assert result.total == 1, result.counts
    assert result.text.startswith(ORDINARY_ABOVE) and result.text.endswith(ORDINARY_BELOW)
    placeholder = re.search(r"<redacted:[a-z0-9-]+>", result.text)
    assert placeholder is not None
    assert (
        result.text.replace(placeholder.group(), secret) == ORDINARY_ABOVE + line + ORDINARY_BELOW
    )


ORDINARY_CODE = [
    'password = request.form["password"]',
    "token = get_token()",
    "pwd = os.getcwd()",
    "export PWD=/home/user/shop",
    "MYSQL_PWD=$(cat /run/secrets/db) mysql -u root shop",
    "mysql -u root -p shop < dump.sql",
    'mysql -u root -p"$MYSQL_PASSWORD" shop',
    "mysqldump -h db -P 3306 -u backup shop",
    "LIBS = $(shell mysql_config --libs) -pthread",
    "auth = HTTPBasicAuth(user, password)",
    '"description": "Basic usage of the client"',
    'CONNECTION = "Server=db;Database=shop;Trusted_Connection=True;"',
    'CONNECTION = "Server=db;Database=shop;User Id=app;Password={0};"',
    'kms_key_id = "1234abcd-12ab-34cd-56ef-1234567890ab"',
    "private_key_id = credentials.private_key_id",
    'session = boto3.Session(aws_access_key_id=key_id, region_name="eu-west-1")',
    'sentry_sdk.init(dsn=os.environ["SENTRY_DSN"], traces_sample_rate=0.2)',
    'WEBHOOK = "https://discord.com/api/webhooks/<id>/<token>"',
    'schedule = "12:30"',
    f'"integrity": "sha512-{fake(ALNUM + "+/", 86)}==",',
    f'content-hash = "{fake(HEX, 64)}"',
    f'commit = "{fake(HEX, 40)}"',
    'WORK_DONE = ContextVar(\n    "work_done_token", default=None\n)',
    "mask = skimage.morphology.disk(3)",
]


@pytest.mark.parametrize("code", ORDINARY_CODE)
def test_ordinary_code_near_these_kinds_is_left_alone(code: str) -> None:
    assert redact(code + "\n").text == code + "\n"


# --- detect-secrets' regexes as data ---------------------------------------------------


def test_every_regex_detector_of_the_package_is_used_or_skipped_on_purpose() -> None:
    """A detector added by a new release of detect-secrets is picked up without a change
    here; the skipped ones are still in the package, so their reasons still hold."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector

    regex_detectors = {
        cls.__name__
        for cls in get_mapping_from_secret_type_to_class().values()
        if issubclass(cls, RegexBasedDetector)
    }
    used = {name for name, _, _ in rules.detectors()}
    assert used | set(rules.SKIPPED_DETECTORS) == regex_detectors
    assert not used & set(rules.SKIPPED_DETECTORS)
    assert len(rules.rule_set().rules) >= 30


@pytest.mark.parametrize(
    ("regex", "keywords"),
    [
        (r"SG\.[a-zA-Z0-9_-]{22}", ("sg.",)),
        (r"(ghp|gho)_[A-Za-z0-9_]{36}", ("gho_", "ghp_")),
        (r"(?:A3T[A-Z0-9]|ABIA|AKIA)[0-9A-Z]{16}", ("a3t", "abia", "akia")),
        (r"[0-9a-z]{32}-us[0-9]{1,2}", tuple(f"-us{digit}" for digit in range(10))),
        (r"\d{8,10}:[0-9A-Za-z_-]{35}", tuple(f"{digit}:" for digit in range(10))),
        (r'(?:\s|=|:|"|^)AKC[a-zA-Z0-9]{10,}(?:\s|"|$)', ("akc",)),
        (r"(?:(?<=\W)|(?<=^))(?:cloudant|cl)(?:_|-|)(?:api|)(?:key|pwd)=(\w+)", ("key=", "pwd=")),
        (r"x(?:ab|)yz[0-9]+\.example", tuple(f"{digit}.example" for digit in range(10))),
        (r"token:(?!x)ab[a-z]+", ("token:ab",)),
        (r"[MNO][a-zA-Z\d_-]{23,25}\.[a-zA-Z\d_-]{6}", ()),
    ],
)
def test_keywords_are_text_that_every_match_contains(regex: str, keywords: tuple[str, ...]) -> None:
    assert rules.keywords(re.compile(regex)) == keywords


@pytest.mark.parametrize(
    ("regex", "lead"),
    [
        (r"SG\.[a-zA-Z0-9_-]{22}", 0),
        (r'(?:\s|=|:|"|^)AKC[a-zA-Z0-9]{10,}', 1),
        (r"\d{8,10}:[0-9A-Za-z_-]{35}", 10),
        (r"\/\/.+\/:_authToken=\s*(npm_.+)", rules.UNBOUNDED_REACH),
    ],
)
def test_the_lead_is_the_most_characters_a_match_has_before_its_keyword(
    regex: str, lead: int
) -> None:
    """A match is tried only from this far before a keyword: too short a lead would miss
    the start of a Telegram bot's id."""
    assert rules.lead(re.compile(regex)) == lead


LOWER_ALNUM = string.ascii_lowercase + string.digits
ASSIGNMENTS = {
    "IbmCloudIamDetector": f'IBM_CLOUD_IAM_API_KEY = "{fake(ALNUM + "_-", 44)}"',
    "SoftlayerDetector": f"softlayer_api_key: {fake(LOWER_ALNUM, 64)}",
    "CloudantDetector": f'cloudant_password = "{fake(HEX, 64)}"',
    "IbmCosHmacDetector": f'cos_hmac_secret_access_key = "{fake(HEX, 48)}"',
}


@pytest.mark.parametrize(("detector", "line"), ASSIGNMENTS.items(), ids=ASSIGNMENTS)
def test_what_the_unused_assignment_regexes_find_is_redacted_all_the_same(
    detector: str, line: str
) -> None:
    """detect-secrets' assignment regexes are not run (see SKIPPED_DETECTORS): the
    values they find are redacted by the assignment stage of redaction.py."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    [cls] = [c for c in get_mapping_from_secret_type_to_class().values() if c.__name__ == detector]
    [value] = {found for found in cls().analyze_string(line)}
    assert value in line
    assert value not in redact(line).text


def test_the_regexes_find_what_detect_secrets_finds() -> None:
    """The same secret as detect-secrets' own scanner reports, on the line that holds it."""
    from detect_secrets.plugins.sendgrid import SendGridDetector

    line, secret = SECRET_KINDS["sendgrid"]
    assert set(SendGridDetector().analyze_string(line)) == {secret}
    assert [line[start:end] for start, end, _ in rules.find(line, line.lower())] == [secret]


def test_a_regex_without_literal_text_runs_near_a_word_that_names_it() -> None:
    """Discord's bot tokens hold no literal text but dots: their regex runs near
    `discord` or `bot`, and not on lines without them."""
    token = "M" + fake(ALNUM, 23) + "." + fake(ALNUM, 6) + "." + fake(ALNUM, 27)
    text = f"bot.run('{token}')\n"
    assert rules.find(text, text.lower()) == [(9, 9 + len(token), "discord-bot-token")]
    elsewhere = f"client.run('{token}')\n"
    assert rules.find(elsewhere, elsewhere.lower()) == []


def test_the_entropy_floor_applies() -> None:
    """A Twilio key of one letter repeated is a placeholder, not a key."""
    low_entropy = "SK" + "a" * 32
    assert rules.find(low_entropy, low_entropy.lower()) == []
    assert redact(f"twilio = Client('{low_entropy}')").total == 0


def test_separators_that_a_regex_matches_around_the_secret_stay() -> None:
    """Artifactory's regex takes in the blank and the quote around the token."""
    token = "AKC" + fake(ALNUM, 20)
    text = f'ARTIFACTORY = "{token}"\n'
    assert rules.find(text, text.lower()) == [(15, 15 + len(token), "artifactory-credentials")]


@pytest.mark.parametrize(("line", "secret"), SECRET_KINDS.values(), ids=SECRET_KINDS)
def test_redacting_twice_finds_nothing_more(line: str, secret: str) -> None:
    """No rule takes a placeholder for a secret, so `redact` is idempotent."""
    again = redact(redact(line).text)
    assert again.total == 0, again.counts


def test_offsets_hold_after_characters_outside_ascii() -> None:
    """The keyword scan runs over bytes; text before the secret in other scripts (and
    outside the BMP) must not shift where the placeholder goes."""
    line, secret = SECRET_KINDS["sendgrid"]
    text = "# Größe: naïve café 🚀 — " + "ключ " * 20 + "\n" + line
    assert redact(text).text == text.replace(secret, "<redacted:sendgrid-api-key>")
