"""The loopback Cerebras server for the VS Code browser test and benchmark, with scripted replies.

Run as `python loopback.py SCRIPT.json [--ttft S] [--tps N] [--api-key KEY]`: it prints the
server's base URL on the first line of stdout and serves until stdin closes, so it never
outlives the Node.js process that started it. The script is a JSON object:

- `source`: the file the "model" knows. A ghost-text request is answered with the rest of the
  source's line after the text before the cursor (the longest end of the prompt before
  `<CURSOR>` that the source contains, at least a line's worth), or with nothing when no such
  text is in the source, so every answer follows from what the editor shows.
- `alternatives` (optional): other versions of the source. A sampled request (temperature
  above 0: the server's alternatives, when the user cycles) is answered from them in turn,
  as a model sampling answers differently each time.
- `edits`: `{instruction: [[old, new], ...]}`. An edit request is answered with its scope
  with each `old` replaced by `new`, in a fenced block as a chat model replies.
- `nextEdits` (optional): `[[marker, expected], ...]`. A next-edit request whose editable
  region contains `marker` (the first such pair) is answered with the edits that make the
  file read as `expected` (`lsp_spark.testing.nextedit_model.scripted_reply`); one whose
  region contains none of them predicts nothing. So a prediction follows only the change the
  test typed.

Anything else (a request of another kind) gets an empty reply. Each reply is written to
stderr, with its kind, for the test's diagnostics and counts.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from lsp_spark.prompts.actions import EDIT_SYSTEM
from lsp_spark.prompts.chat import HOLE
from lsp_spark.prompts.chat import SYSTEM_PROMPT as COMPLETION_SYSTEM
from lsp_spark.testing.cerebras_server import CerebrasTestServer
from lsp_spark.testing.nextedit_model import is_next_edit_request, region_of, scripted_reply

MATCHED_CHARACTERS = 200
"""How much of the text before the cursor is looked up in the source, at most."""
MINIMUM_MATCH = 12
"""A shorter match (a few letters that could be anywhere) answers nothing."""
SCOPE = re.compile(r"The scope:\n(`{3,})[^\n]*\n(?P<code>.*?)\n\1", re.DOTALL)
INSTRUCTION = re.compile(r"^Instruction: (?P<instruction>.*)$", re.MULTILINE)
NO_NEXT_EDIT = "<none/>"
"""The next-edit model's answer when no edit follows (lsp_spark.nextedit.prompt.SYSTEM)."""


class ScriptedModel:
    """Replies decided by the request's content (see the module docstring)."""

    def __init__(
        self,
        source: str,
        alternatives: list[str],
        edits: dict[str, list[tuple[str, str]]],
        next_edits: list[tuple[str, str]],
    ) -> None:
        self.source = source
        self.alternatives = alternatives
        self.edits = edits
        self.next_edits = next_edits
        self.sampled = 0

    def reply(self, body: dict[str, Any]) -> str:
        messages = body.get("messages") or []
        system = messages[0].get("content", "") if messages else ""
        user = messages[-1].get("content", "") if messages else ""
        if system == COMPLETION_SYSTEM and body.get("temperature") and self.alternatives:
            source = self.alternatives[self.sampled % len(self.alternatives)]
            self.sampled += 1
            kind, reply = "alternative", rest_of_line(source, user)
        elif system == COMPLETION_SYSTEM:
            kind, reply = "completion", rest_of_line(self.source, user)
        elif system == EDIT_SYSTEM:
            kind, reply = "edit", self.edited_scope(user)
        elif is_next_edit_request(body):
            kind, reply = "next_edit", self.predicted_edits(body)
        else:
            kind, reply = "other", ""
        print(f"{kind} request answered {reply!r}", file=sys.stderr, flush=True)
        return reply

    def edited_scope(self, prompt: str) -> str:
        scope, instruction = SCOPE.search(prompt), INSTRUCTION.search(prompt)
        if scope is None or instruction is None:
            return ""
        code = scope["code"]
        for old, new in self.edits.get(instruction["instruction"].strip(), []):
            code = code.replace(old, new)
        return f"```python\n{code}\n```"

    def predicted_edits(self, body: dict[str, Any]) -> str:
        region = "\n".join(region_of(body)[3])
        for marker, expected in self.next_edits:
            if marker in region:
                return scripted_reply(body, expected)
        return NO_NEXT_EDIT


def rest_of_line(source: str, prompt: str) -> str:
    """The prompt starts with a header the source does not have, so the longest end of the
    text before the cursor that the source contains is what locates the cursor."""
    tail = prompt.split(HOLE, 1)[0][-MATCHED_CHARACTERS:]
    while len(tail) >= MINIMUM_MATCH:
        found = source.find(tail)
        if found >= 0:
            return source[found + len(tail) :].split("\n", 1)[0]
        tail = tail[1:]
    return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("script", type=Path, help="JSON: {source, alternatives, edits, nextEdits}")
    parser.add_argument("--ttft", type=float, default=0.0, help="seconds before the first token")
    parser.add_argument("--tps", type=float, default=0.0, help="tokens per second; 0: no pacing")
    parser.add_argument("--api-key", help="require 'Authorization: Bearer KEY'")
    args = parser.parse_args(argv)
    script = json.loads(args.script.read_text(encoding="utf-8"))
    edits = {
        instruction: [(old, new) for old, new in pairs]
        for instruction, pairs in script.get("edits", {}).items()
    }
    next_edits = [(marker, expected) for marker, expected in script.get("nextEdits", [])]
    model = ScriptedModel(script["source"], script.get("alternatives", []), edits, next_edits)
    with CerebrasTestServer(
        ttft=args.ttft,
        tokens_per_second=args.tps or None,
        reply_fn=model.reply,
        api_key=args.api_key,
    ) as server:
        print(server.base_url, flush=True)
        sys.stdin.read()
        if server.errors:
            print(f"loopback server errors: {server.errors!r}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
