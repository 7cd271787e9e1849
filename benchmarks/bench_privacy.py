"""Cost of redacting an 8 KB prompt and of deciding whether a file is excluded.

Run ``python benchmarks/bench_privacy.py [--tiny] [--output PATH]``: prints p50/p95
microseconds per call and writes ``benchmarks/results/privacy.json`` (or PATH); ``--tiny``
makes a hundredth of the calls, to check the benchmark still runs. Redaction runs on every
prompt, so the case that matters is ordinary code with no secret in it (budget: 1 ms per
8 KB prompt, issue 40); the cases with secrets and the worst cases show what the rarer
paths cost. "Names of many services" is the worst case for detect-secrets' rules: every
line holds some rule's keyword, so every line runs a rule's regex.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import string
import sys
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from timing import add_size_options, measure

from lsp_spark.privacy import Exclusions, redact, redact_parts, rule_set

ROOT = Path(__file__).resolve().parent.parent
SIZE = 8192
CALLS = 2000
EXCLUSION_CALLS = 20_000
TINY_SHARE = 100
"""--tiny divides every count of calls by this."""
BUDGET_US = 1000.0
RESULTS = Path(__file__).resolve().parent / "results" / "privacy.json"
ALNUM = string.ascii_letters + string.digits


def repeat(call: Callable[[], object], times: int) -> Iterator[Callable[[], object]]:
    for _ in range(times):
        yield call


def to_size(text: str) -> str:
    return (text * (SIZE // len(text) + 1))[:SIZE]


def fake(rng: random.Random, alphabet: str, length: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(length))


def source(*names: str) -> str:
    """Real code from this repository (not the privacy package, which is all secret words)."""
    return to_size("".join((ROOT / "lsp_spark" / name).read_text("utf-8") for name in names))


def config_with_secrets(rng: random.Random) -> str:
    """Settings-like text with a secret on most lines, repeated to 8 KB."""
    block = f"""import os

DEBUG = os.environ.get("DEBUG") == "1"
DATABASE_URL = "postgres://app:{fake(rng, ALNUM, 12)}@db:5432/app"
SECRET_KEY = "{fake(rng, ALNUM, 40)}"
GITHUB_TOKEN = "{"gh" + "p_" + fake(rng, ALNUM, 36)}"
OPENAI_API_KEY = "{"sk-" + "proj-" + fake(rng, ALNUM, 48)}"
AWS_ACCESS_KEY_ID = "{"AK" + "IA" + fake(rng, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)}"
STRIPE_KEY = "{"sk" + "_live_" + fake(rng, ALNUM, 24)}"
HEADERS = {{"Authorization": "Bearer {fake(rng, ALNUM, 32)}"}}
password = "{fake(rng, ALNUM, 14)}"
api_key: str = "{fake(rng, ALNUM, 32)}"
JWT = "{"ey" + "JhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0." + fake(rng, ALNUM, 43)}"
TOKEN_SHOP = "{"shp" + "at_" + fake(rng, "0123456789abcdef", 32)}"
MAIL = "{"SG." + fake(rng, ALNUM, 22) + "." + fake(rng, ALNUM, 43)}"
STORAGE = "AccountName=assets;AccountKey={fake(rng, ALNUM, 86)}==;EndpointSuffix=core.windows.net"
HOOK = "https://discord.com/api/webhooks/{fake(rng, "0123456789", 18)}/{fake(rng, ALNUM, 68)}"


def connect(settings):
    return Client(settings.api_key, timeout=settings.timeout)
"""
    return to_size(block)


def many_services() -> str:
    """A line naming a service for each keyword of detect-secrets' rules, with no secret."""
    config = rule_set.rule_set()
    lines = [
        f"{keyword.strip('_.-').upper() or 'X'}_URL = settings.get({keyword!r}, DEFAULT_URL)\n"
        for keyword in config.keywords
    ]
    return to_size("".join(lines))


def key_block(rng: random.Random) -> str:
    lines = "\n".join(fake(rng, ALNUM + "+/", 64) for _ in range(SIZE // 65))
    return ("-----" + "BEGIN PRIVATE KEY-----\n" + lines + "\n-----END PRIVATE KEY-----\n")[:SIZE]


def base64_blob(rng: random.Random) -> str:
    return to_size(f'ICON_PNG = "{fake(rng, ALNUM + "+/", SIZE)}"\n')


def redaction_cases(rng: random.Random) -> dict[str, str]:
    plain = (ROOT / "fixtures" / "privacy" / "plain-code.input.py").read_text("utf-8")
    return {
        "Python, no secrets (server.py)": source("server.py"),
        "Python, no secrets, non-ASCII (pipeline.py)": source("pipeline.py"),
        "secret-sounding code, no secrets": to_size(plain),
        "names of many services, no secrets": many_services(),
        "settings full of secrets": config_with_secrets(rng),
        "worst: one 8 KB private key block": key_block(rng),
        "worst: 8 KB base64 literal": base64_blob(rng),
    }


def exclusion_cases(calls: int) -> dict[str, Iterator[Callable[[], object]]]:
    exclusions = Exclusions(["*.secret.py", "!.env.example"])
    warm = "file:///home/u/project/src/app/main.py"
    exclusions.excludes(warm)
    fresh = [f"file:///home/u/project/src/pkg{i}/module_{i}.py" for i in range(calls)]
    return {
        "Exclusions.excludes, URI seen before": repeat(partial(exclusions.excludes, warm), calls),
        "Exclusions.excludes, new URI": (partial(exclusions.excludes, uri) for uri in fresh),
        "Exclusions(...) built from defaults + 2 globs": repeat(
            partial(Exclusions, ["*.secret.py", "!.env.example"]), calls // 100
        ),
    }


def run(share: int) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, int]]]:
    """Every case, with 1/`share` of the calls."""
    rng = random.Random(20240611)
    calls = CALLS // share
    results: dict[str, dict[str, float]] = {}
    counts: dict[str, dict[str, int]] = {}
    for name, text in redaction_cases(rng).items():
        counts[name] = redact(text).counts
        results[f"redact: {name}"] = measure(repeat(partial(redact, text), calls))
    text = source("server.py")
    middle = len(text) // 2
    results["redact_parts: prefix + suffix around the cursor (server.py)"] = measure(
        repeat(partial(redact_parts, text[:middle], text[middle:]), calls)
    )
    for name, cases in exclusion_cases(EXCLUSION_CALLS // share).items():
        results[name] = measure(cases)
    return results, counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    add_size_options(parser, RESULTS, f"1/{TINY_SHARE} of the calls: checks, not figures")
    arguments = parser.parse_args()
    results, counts = run(TINY_SHARE if arguments.tiny else 1)
    width = max(map(len, results))
    print(f"{SIZE} characters per prompt, Python {platform.python_version()}")
    print(f"{'operation':<{width}}  {'p50 µs':>8}  {'p95 µs':>8}  {'mean µs':>8}")
    for name, stats in results.items():
        print(
            f"{name:<{width}}  {stats['p50_us']:>8.2f}  {stats['p95_us']:>8.2f}"
            f"  {stats['mean_us']:>8.2f}"
        )
    plain = [stats for name, stats in results.items() if "no secrets" in name]
    worst = {key: max(stats[key] for stats in plain) for key in ("p50_us", "p95_us")}
    verdict = "within" if worst["p50_us"] <= BUDGET_US else "OVER"
    print(
        f"cost per {SIZE // 1024} KB prompt without secrets, worst case: p50 "
        f"{worst['p50_us']:.0f} µs, p95 {worst['p95_us']:.0f} µs; p50 {verdict} the "
        f"{BUDGET_US:.0f} µs budget"
    )
    for name, found in counts.items():
        print(f"  found in {name!r}: {sum(found.values())} {dict(sorted(found.items()))}")
    arguments.output.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "prompt_chars": SIZE,
        "budget_us": BUDGET_US,
        "no_secret_worst": worst,
        "results": results,
        "redactions_found": counts,
    }
    arguments.output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {arguments.output}")


if __name__ == "__main__":
    main()
