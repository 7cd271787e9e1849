"""The suggestion cache and the adaptive debounce, alone."""

from __future__ import annotations

import pytest
from lsprotocol import types

from lsp_spark.scheduler.cache import LineState, SuggestionCache
from lsp_spark.scheduler.debounce import DEFAULT_SECONDS, AdaptiveDebounce
from lsp_spark.server import client_debounces


def state(prefix: str, suffix: str = "", row: int = 3, previous: str = "def f():") -> LineState:
    return LineState("file:///a.py", row, prefix, suffix, previous)


def test_the_same_state_is_answered_again() -> None:
    cache = SuggestionCache()
    cache.remember(state("    x = "), "compute()", 0)
    found = cache.recall(state("    x = "))
    assert found is not None and (found.text, found.origin) == ("compute()", "cache")


def test_typing_the_suggestions_characters_shortens_it() -> None:
    cache = SuggestionCache()
    cache.remember(state("    x = "), "compute()", 0)
    found = cache.recall(state("    x = comp"))
    assert found is not None and (found.text, found.origin) == ("ute()", "typed")


def test_typing_other_characters_misses() -> None:
    cache = SuggestionCache()
    cache.remember(state("    x = "), "compute()", 0)
    assert cache.recall(state("    x = cont")) is None
    assert cache.recall(state("    x = comp", suffix=")")) is None
    assert cache.recall(state("    x = comp", previous="def g():")) is None
    assert cache.recall(state("    x = comp", row=4)) is None


def test_typing_the_whole_suggestion_leaves_nothing_to_show() -> None:
    cache = SuggestionCache()
    cache.remember(state("    x = "), "compute()", 0)
    assert cache.recall(state("    x = compute()")) is None


def test_a_prefetched_next_line_fits_the_editors_indentation() -> None:
    cache = SuggestionCache()
    cache.remember_next_line("file:///a.py", 4, "    total = 0", "    for item in items:")
    found = cache.recall(state("    ", row=4, previous="    total = 0"))
    assert found is not None and (found.text, found.origin) == ("for item in items:", "prefetch")
    assert cache.recall(state("", row=4, previous="    total = 0")) is not None
    assert cache.recall(state("        ", row=4, previous="    total = 0")) is None


def test_forgetting_a_document_drops_its_entries() -> None:
    cache = SuggestionCache()
    cache.remember(state("    x = "), "compute()", 0)
    cache.forget("file:///a.py")
    assert cache.recall(state("    x = ")) is None


def test_debounce_defaults_then_follows_the_rhythm() -> None:
    debounce = AdaptiveDebounce()
    assert debounce.seconds(None) == DEFAULT_SECONDS
    for moment in range(10):
        debounce.keystroke(moment * 0.08)
    assert abs(debounce.seconds(None) - 0.012) < 1e-9
    assert debounce.seconds(0) == 0
    assert debounce.seconds(120) == 0.12


def test_debounce_stays_within_bounds_and_ignores_pauses() -> None:
    debounce = AdaptiveDebounce()
    for moment in range(10):
        debounce.keystroke(moment * 0.6)
    assert debounce.seconds(None) == 0.02
    slow = AdaptiveDebounce()
    for moment in range(10):
        slow.keystroke(moment * 5.0)
    assert slow.seconds(None) == DEFAULT_SECONDS


def test_a_client_that_debounces_is_not_made_to_wait_twice() -> None:
    debounce = AdaptiveDebounce()
    debounce.client_debounces = True
    assert debounce.seconds(None) == 0
    assert debounce.seconds(30) == 0.03


@pytest.mark.parametrize(
    ("experimental", "declared"),
    [
        ({"lspSpark": {"debouncesInlineCompletion": True}}, True),
        ({"lspSpark": {"debouncesInlineCompletion": "yes"}}, False),
        ({"lspSpark": True}, False),
        ({"other": {}}, False),
        ([1, 2], False),
        (None, False),
    ],
)
def test_the_debounce_declaration_is_read_from_experimental_capabilities(
    experimental: object, declared: bool
) -> None:
    capabilities = types.ClientCapabilities(experimental=experimental)
    assert client_debounces(capabilities) is declared
