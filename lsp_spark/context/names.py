"""The names a blank line in a function is about to bind.

Code below the cursor that reads a name before anything binds it goes on as if the line
bound it (`return area` under the blank line of `area = l * b`, `count += 1` in the loop
under the blank line of `count = 0`); above deeper code, the header to be written there
binds what that body reads (`for n in numbers:` above `running_max = n`). A model that sees
the suffix can tell; one that sees only the code above cannot, so the backend holds it to
those names.
"""

from __future__ import annotations

import re

from lsp_spark.languages import LanguageProfile


def names_to_bind(
    profile: LanguageProfile, prefix: str, suffix: str, document: str
) -> tuple[str, ...]:
    """The names that the code of the cursor's function below the cursor reads before
    anything binds them: not the function (found in `prefix` and `suffix`, the text around
    the cursor) above the cursor, and no other text of the document, where a name counts as
    bound wherever else it appears (an import, a global, a function defined further down)."""
    headers, read_before_bound = profile.headers, profile.names_read_before_bound
    if headers is None or read_before_bound is None:
        return ()
    row = headers.enclosing_function(prefix)
    if row is None:
        return ()
    above = prefix.split("\n")[row:]
    depth = len(above[0]) - len(above[0].lstrip())
    below = suffix.split("\n")[1:]
    end = next(
        (
            index
            for index, line in enumerate(below)
            if line.strip() and len(line) - len(line.lstrip()) <= depth
        ),
        len(below),
    )
    function = "\n".join(line[depth:] for line in [*above, *below[:end]])
    return tuple(
        sorted(
            name
            for name in read_before_bound(function, len(above) - 1)
            if _occurrences(name, document) == _occurrences(name, function)
        )
    )


def _occurrences(name: str, text: str) -> int:
    return len(re.findall(rf"(?<!\w){re.escape(name)}(?!\w)", text))
