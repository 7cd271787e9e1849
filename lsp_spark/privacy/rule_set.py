"""Secrets recognised by detect-secrets' plugins, read as data and matched in-process.

detect-secrets (Yelp, Apache-2.0, a core dependency) keeps a maintained set of detectors,
one per service (AWS, Azure storage, SendGrid, Telegram, Twilio, Mailchimp, Square,
IBM Cloud, SoftLayer, Artifactory, Cloudant, Discord...), each a class whose `denylist`
holds its regexes. The classes are found in the installed package when the set is first
needed, so updating the rules is updating the package; only their regexes are used.
Its scanner is not: it runs every regex over every line, which for an 8 KB prompt costs
milliseconds.

The regexes are run the way gitleaks runs its rules, which keeps a prompt's cost low:
each regex gets keywords, literal text that every match contains, found by reading the
parsed regex (`keywords`). Every keyword is searched for at once with one Aho-Corasick
automaton over the lower-case text (a few tens of microseconds for 8 KB), and a regex
runs only where one of its keywords occurs: tried at the few places where a match
around the keyword can start, or searched for near it, within its line (detect-secrets
scans line by line). A regex whose keywords are on most lines runs over the whole text
instead; `benchmarks/bench_privacy.py` measures what it all costs.
"""

from __future__ import annotations

import importlib
import inspect
import math
import pkgutil
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from re import _constants as sre  # type: ignore[attr-defined]
from re import _parser as sre_parser  # type: ignore[attr-defined]
from typing import Any, cast

from ahocorasick_rs import BytesAhoCorasick, Implementation

SKIPPED_DETECTORS = {
    "PrivateKeyDetector": "redaction.py's key-block stage redacts the whole block, also "
    "one that the prompt window cuts in half, where this detector finds only its header",
    "JwtTokenDetector": "redaction.py's token stage knows JWTs by their `eyJ`, also while "
    "they are typed",
    "BasicAuthDetector": "redaction.py's url-password stage finds the same passwords in "
    "URLs and knows placeholders (`${PASSWORD}`) from passwords",
    "IPPublicDetector": "a public IP address is no secret, and code is full of them",
}
"""Regex detectors of detect-secrets that are not used, and why. Beside them, the regexes
that detect-secrets builds with `build_assignment_regex` (IBM Cloud, SoftLayer, Cloudant
and IBM COS keys assigned to a name such as `api_key`) are not used: redaction.py's
assignment stage redacts a random value under such a name, with checks tuned for
prompts, and these regexes, which try a dozen optional groups at every position, would
be most of a prompt's cost on the many lines that say `key` or `token`."""

MIN_KEYWORD_CHARS = 2
"""A regex without keywords this long (one whose literal text is a `.` or a `:`) has
none: a one-letter keyword is on every line."""
SHORT_KEYWORD_CHARS = 2
"""Keywords this short (Twilio's `AC` and `SK`) are on most lines of code: a regex that
starts with such literal text runs over the whole text instead, where `re` skips from
one occurrence of its first characters to the next far faster than it starts once per
line."""
UNBOUNDED_REACH = 128
"""How far from its keyword a match of a regex without a bound (`.+`, `{10,}`, ` *`) is
looked for: far enough for a registry's URL before npm's `/:_authToken=` or an
assignment's spaces, near enough that a long line (a minified file, a base64 literal)
is not searched whole once per keyword."""
MATCH_LEAD = 16
"""A regex whose matches start at most this far before its keyword (most start at it)
is tried only at those starts; one with a longer or unknown lead is searched for around
the keyword."""
KEYWORDS_OF_DETECTOR = {"DiscordBotTokenDetector": ("discord", "bot")}
"""Keywords for the regexes that hold no usable literal text. Discord's bot tokens hold
only dots; over the whole text their regex costs about 0.2 ms per 8 KB (the budget of all
redaction is 1 ms), so, as gitleaks' Discord rules do, they are looked for near a word
that names them."""
MAX_KEYWORDS = 64
"""A run of literal text stops growing when spelling out its alternatives would give
more keywords than this (`[0-9a-f]` after `AP` makes 16; `[a-z0-9]` would make 36 for
each keyword so far)."""
ENTROPY_FLOOR = 3.0
"""Bits per character below which a match is a placeholder, not a key
(`SKaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa`): every real key of these services is random."""
SEPARATORS = " \t\r\n\"'=:"
"""What some regexes match around the secret to find where it starts and ends
(Artifactory's `(?:\\s|=|:|"|^)AKC…(?:\\s|"|$)`): trimmed off the redacted span."""


@dataclass(frozen=True, slots=True, eq=False)
class Rule:
    """One regex of a detector; hashed by identity, a key of where its search ended."""

    kind: str
    """The detector's `secret_type` as a placeholder name (`twilio-api-key`)."""
    pattern: re.Pattern[str]
    """detect-secrets' regex, with `^` and `$` at line ends: it scans line by line."""
    keywords: tuple[str, ...]
    """Lower case; empty when the regex runs over the whole text."""
    reach: int
    """The most characters a match spans (UNBOUNDED_REACH when the regex sets no bound):
    how far past its start a `match` may go, and how far on either side of a keyword a
    search looks."""
    lead: int | None
    """The most characters a match has before its keyword, when at most MATCH_LEAD."""


@dataclass(frozen=True, slots=True)
class RuleSet:
    rules: tuple[Rule, ...]
    unanchored: tuple[Rule, ...]
    """The rules without keywords, run over the whole text."""
    keywords: tuple[str, ...]
    rules_by_keyword: tuple[tuple[Rule, ...], ...]
    """The rules of each keyword, in the automaton's order of keywords."""
    automaton: BytesAhoCorasick


def detectors() -> list[tuple[str, str, Sequence[re.Pattern[str]]]]:
    """Name, secret type and regexes of every regex detector in the installed
    detect-secrets, less SKIPPED_DETECTORS. Importing the plugin modules only defines
    classes (and imports `requests`, which their optional verification uses)."""
    from detect_secrets import plugins
    from detect_secrets.plugins.base import RegexBasedDetector

    found: list[tuple[str, str, Sequence[re.Pattern[str]]]] = []
    for module_info in pkgutil.iter_modules(plugins.__path__):
        module = importlib.import_module(f"{plugins.__name__}.{module_info.name}")
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if (
                cls.__module__ == module.__name__
                and issubclass(cls, RegexBasedDetector)
                and not inspect.isabstract(cls)
                and name not in SKIPPED_DETECTORS
            ):
                # Class attributes that the plugin base class declares as properties.
                denylist = cast("Iterable[re.Pattern[str]]", cls.denylist)
                patterns = tuple(p for p in denylist if not _is_assignment(p))
                found.append((name, cast(str, cls.secret_type), patterns))
    return found


def _is_assignment(pattern: re.Pattern[str]) -> bool:
    from detect_secrets.plugins.base import RegexBasedDetector

    head = RegexBasedDetector.build_assignment_regex("\0", "", "").pattern.partition("\0")[0]
    return pattern.pattern.startswith(head)


def kind_of(secret_type: str) -> str:
    """`Twilio API Key` → `twilio-api-key`."""
    return re.sub(r"[^a-z0-9]+", "-", secret_type.lower()).strip("-")


# --- Keywords read from a parsed regex ---------------------------------------------------

_ZERO_WIDTH = {sre.AT, sre.ASSERT, sre.ASSERT_NOT}
"""Between two literals these change nothing about the text: `a\\bb` still needs `ab`."""


def keywords(pattern: re.Pattern[str]) -> tuple[str, ...]:
    """Lower-case text of which every match of `pattern` contains one: of the runs of
    literal text (with small classes and alternatives spelled out) that every match
    holds, the one whose shortest keyword is longest. Empty when no run has keywords of
    MIN_KEYWORD_CHARS."""
    return _keywords_and_lead(pattern)[0]


def lead(pattern: re.Pattern[str]) -> int:
    """The most characters a match has before its keyword (at most UNBOUNDED_REACH)."""
    return _keywords_and_lead(pattern)[1]


def _keywords_and_lead(pattern: re.Pattern[str]) -> tuple[tuple[str, ...], int]:
    parsed = sre_parser.parse(pattern.pattern, pattern.flags)
    best: tuple[str, ...] = ()
    best_start: int | None = None
    for run, start in _literal_runs(parsed):
        minimal = _minimal({text.lower() for text in run})
        shortest = min(map(len, minimal))
        if shortest >= MIN_KEYWORD_CHARS and (
            not best
            or shortest > min(map(len, best))
            or (shortest == min(map(len, best)) and len(minimal) < len(best))
        ):
            best, best_start = minimal, start
    if best_start is None:
        return best, UNBOUNDED_REACH
    widest = sre_parser.SubPattern(parsed.state, parsed.data[:best_start]).getwidth()[1]
    return best, min(int(widest), UNBOUNDED_REACH)


def anchored_keywords(pattern: re.Pattern[str]) -> tuple[str, ...]:
    """The regex's keywords, or none, to run it over the whole text, when they are
    SHORT_KEYWORD_CHARS long and the regex starts with literal text."""
    found = keywords(pattern)
    parsed = sre_parser.parse(pattern.pattern, pattern.flags)
    if min(map(len, found), default=0) <= SHORT_KEYWORD_CHARS and parsed[0][0] is sre.LITERAL:
        return ()
    return found


def reach(pattern: re.Pattern[str]) -> int:
    """The most characters a match spans (at most UNBOUNDED_REACH)."""
    widest = sre_parser.parse(pattern.pattern, pattern.flags).getwidth()[1]
    return min(int(widest), UNBOUNDED_REACH)


def _minimal(texts: set[str]) -> tuple[str, ...]:
    """Without the texts that contain a shorter one: finding that one finds them too."""
    ordered = sorted(texts, key=len)
    kept: list[str] = []
    for text in ordered:
        if not any(shorter in text for shorter in kept):
            kept.append(text)
    return tuple(sorted(kept))


def _literal_runs(items: Any, nested: bool = False) -> Iterator[tuple[set[str], int | None]]:
    """Every run of consecutive elements that match text from a small, known set, with
    the index of the element it starts at (None inside a group)."""
    run: set[str] = {""}
    start = 0
    for index, (op, argument) in enumerate(items):
        if op in _ZERO_WIDTH:
            continue
        spelled = _texts(op, argument)
        if spelled is None and op in (sre.MAX_REPEAT, sre.MIN_REPEAT) and argument[0] >= 1:
            repeated = _texts(*argument[2][0]) if len(argument[2]) == 1 else None
            if repeated is not None and repeated[1]:
                # Its first character follows the run, its last precedes what comes next
                # (counted from after the whole repetition: a character too many).
                yield _grown(run, repeated[0]), None if nested else start
                run, start = repeated[0], index + 1
                continue
        if spelled is None:
            yield run, None if nested else start
            run, start = {""}, index + 1
            if op is sre.SUBPATTERN:
                yield from _literal_runs(argument[-1], nested=True)
            continue
        texts, complete = spelled
        grown = {head + tail for head in run for tail in texts}
        if len(grown) > MAX_KEYWORDS:
            yield run, None if nested else start
            grown, start = texts, index
        if not complete:
            yield grown, None if nested else start
            grown, start = {""}, index + 1
        run = grown
    yield run, None if nested else start


def _grown(run: set[str], texts: set[str]) -> set[str]:
    grown = {head + tail for head in run for tail in texts}
    return grown if len(grown) <= MAX_KEYWORDS else run


def _texts(op: Any, argument: Any) -> tuple[set[str], bool] | None:
    """The texts one element matches or starts with, when they are few and of fixed
    content, and whether they are all of it."""
    if op is sre.LITERAL:
        return {chr(argument)}, True
    if op is sre.IN:
        chars = _class_chars(argument)
        return None if chars is None else (chars, True)
    if op is sre.SUBPATTERN:
        return _sequence_texts(argument[-1])
    if op is sre.BRANCH:
        alternatives = [_sequence_texts(branch) for branch in argument[1]]
        if any(found is None for found in alternatives):
            return None
        texts = set().union(*(found[0] for found in alternatives if found))
        return texts, all(found[1] for found in alternatives if found)
    return None


def _sequence_texts(items: Any) -> tuple[set[str], bool] | None:
    """The texts a sequence matches or starts with; None when they may be empty."""
    texts: set[str] = {""}
    for op, argument in items:
        if op in _ZERO_WIDTH:
            continue
        spelled = _texts(op, argument)
        grown = None if spelled is None else {h + t for h in texts for t in spelled[0]}
        if spelled is None or grown is None or len(grown) > MAX_KEYWORDS:
            return None if "" in texts else (texts, False)
        texts = grown
        if not spelled[1]:
            return texts, False
    return None if "" in texts else (texts, True)


def _class_chars(items: Any) -> set[str] | None:
    chars: set[str] = set()
    for op, argument in items:
        if op is sre.LITERAL:
            chars.add(chr(argument))
        elif op is sre.RANGE:
            chars.update(map(chr, range(argument[0], argument[1] + 1)))
        elif op is sre.CATEGORY and argument is sre.CATEGORY_DIGIT:
            chars.update("0123456789")
        else:
            return None
    lowered = {char.lower() for char in chars}
    return lowered if len(lowered) <= 16 else None


# --- The rule set -------------------------------------------------------------------------


def _rule(name: str, secret_type: str, pattern: re.Pattern[str]) -> Rule:
    before = lead(pattern)
    return Rule(
        kind=kind_of(secret_type),
        pattern=re.compile(pattern.pattern, pattern.flags | re.MULTILINE),
        keywords=KEYWORDS_OF_DETECTOR.get(name) or anchored_keywords(pattern),
        # A word that names the secret may stand up to UNBOUNDED_REACH from its match.
        reach=reach(pattern) + (UNBOUNDED_REACH if name in KEYWORDS_OF_DETECTOR else 0),
        lead=before if before <= MATCH_LEAD and name not in KEYWORDS_OF_DETECTOR else None,
    )


def build(found: Iterable[tuple[str, str, Sequence[re.Pattern[str]]]]) -> RuleSet:
    rules = tuple(
        _rule(name, secret_type, pattern)
        for name, secret_type, patterns in found
        for pattern in patterns
    )
    by_keyword: dict[str, list[Rule]] = {}
    for rule in rules:
        for keyword in rule.keywords:
            by_keyword.setdefault(keyword, []).append(rule)
    automaton = BytesAhoCorasick(
        [keyword.encode() for keyword in by_keyword], implementation=Implementation.DFA
    )
    return RuleSet(
        rules=rules,
        unanchored=tuple(rule for rule in rules if not rule.keywords),
        keywords=tuple(by_keyword),
        rules_by_keyword=tuple(tuple(found) for found in by_keyword.values()),
        automaton=automaton,
    )


@cache
def rule_set() -> RuleSet:
    """Built once, on first use (the server does it at `initialized`): importing the
    plugins takes 0.2-0.3 s, most of it `requests`."""
    return build(detectors())


Found = tuple[int, int, str]
"""Start, end and kind of one secret."""


def find(text: str, lowered: str) -> list[Found]:
    """The secrets that the rule set finds in `text` (`lowered` is its lower case, of
    the same length)."""
    rules = rule_set()
    # Keywords are ASCII: one `?` per other character keeps offsets those of `text`.
    hits = rules.automaton.find_matches_as_indexes(
        lowered.encode("ascii", "replace"), overlapping=True
    )
    found: set[Found] = set()
    for rule in rules.unanchored:
        found.update(_matches(rule, text, 0, len(text)))
    searched: dict[Rule, int] = {}
    """Per rule searched around its keywords, where its last search ended."""
    for keyword, at, _ in hits:
        for rule in rules.rules_by_keyword[keyword]:
            if rule.lead is not None:
                found.update(_matches_at(rule, text, max(0, at - rule.lead), at))
            elif at >= searched.get(rule, 0):
                line_end = text.find("\n", at)
                end = min(line_end if line_end != -1 else len(text), at + rule.reach)
                start = max(text.rfind("\n", 0, at) + 1, at - rule.reach)
                found.update(_matches(rule, text, start, end))
                searched[rule] = end
    return sorted(found)


def _matches_at(rule: Rule, text: str, first: int, last: int) -> Iterable[Found]:
    """The matches that start from `first` to `last`: one `match` per start costs less
    than a search over the keyword's surroundings, which tries every start there. The
    keyword's line need not be found: these regexes match no line break but in the
    blanks around a secret (trimmed as SEPARATORS)."""
    start = first
    while start <= last:
        match = rule.pattern.match(text, start, start + rule.reach)
        if match is None:
            start += 1
            continue
        found = _secret(rule, match)
        if found is not None:
            yield found
        start = max(match.end(), start + 1)


def _matches(rule: Rule, text: str, start: int, end: int) -> Iterable[Found]:
    # `search` in a loop: on a line's window, `finditer` costs three times more.
    match = rule.pattern.search(text, start, end)
    while match is not None:
        found = _secret(rule, match)
        if found is not None:
            yield found
        match = rule.pattern.search(text, max(match.end(), match.start() + 1), end)


def _secret(rule: Rule, match: re.Match[str]) -> Found | None:
    """The secret in `match` (its first group that matched, as detect-secrets reports
    it, else the whole match), without the separators around it, unless it is too
    regular to be a key."""
    group = next((index for index, value in enumerate(match.groups(), 1) if value), 0)
    first = match.start(group)
    value = match.group(group)
    trimmed = value.strip(SEPARATORS)
    if not trimmed or entropy(trimmed) < ENTROPY_FLOOR:
        return None
    first += len(value) - len(value.lstrip(SEPARATORS))
    return first, first + len(trimmed), rule.kind


def entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    length = len(value)
    return -sum(n / length * math.log2(n / length) for n in Counter(value).values())
