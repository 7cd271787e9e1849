import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

import { currentEdit, cursorIsOnEdit, endOfInsertion, foreignDiagnostics, presentation } from "../src/nextEditView";
import {
  NEXT_EDIT_DISMISS_COMMAND,
  NEXT_EDIT_JUMP_OR_APPLY_COMMAND,
  NEXT_EDIT_VISIBLE_CONTEXT,
  OWN_DIAGNOSTIC_SOURCE,
} from "../src/protocol";

const manifest = JSON.parse(readFileSync(path.join(__dirname, "..", "..", "package.json"), "utf8"));

const uri = "file:///work/area.py";

/** `width` on line 2 (0-based 1), as the server answers a rename of `width` to `w`. */
function renameEdit(version: number) {
  return {
    text: "w",
    range: { start: { line: 1, character: 11 }, end: { line: 1, character: 16 } },
    textDocument: { uri, version },
    command: { title: "Accept next edit", command: "lspSpark.acceptNextEdit", arguments: [uri, "7"] },
  };
}

test("the first edit of an answer for the document's current version is shown", () => {
  const first = renameEdit(4);
  const second = { ...renameEdit(4), range: { start: { line: 3, character: 11 }, end: { line: 3, character: 16 } } };
  assert.deepEqual(currentEdit({ edits: [first, second] }, 4), first);
});

test("an answer computed for another version is dropped: the user kept typing meanwhile", () => {
  assert.equal(currentEdit({ edits: [renameEdit(3)] }, 4), undefined);
  assert.equal(currentEdit({ edits: [renameEdit(5)] }, 4), undefined);
});

test("no edits, no answer, or an answer of another shape shows nothing", () => {
  assert.equal(currentEdit({ edits: [] }, 1), undefined);
  assert.equal(currentEdit(null, 1), undefined);
  assert.equal(currentEdit(undefined, 1), undefined);
  assert.equal(currentEdit({ items: [renameEdit(1)] }, 1), undefined);
  assert.equal(currentEdit({ edits: [{ ...renameEdit(1), text: undefined }] }, 1), undefined);
  assert.equal(currentEdit({ edits: [{ ...renameEdit(1), range: { start: { line: 1 } } }] }, 1), undefined);
  assert.equal(currentEdit({ edits: [{ ...renameEdit(1), textDocument: { uri } }] }, 1), undefined);
});

test("a replacement strikes the old text through and shows the new text after it", () => {
  assert.deepEqual(presentation(renameEdit(1)), { strikeThrough: true, inlineText: "w", hoverText: undefined });
});

test("a pure insertion strikes nothing, a pure deletion shows no new text", () => {
  const at = { line: 2, character: 4 };
  assert.deepEqual(presentation({ text: "self.", range: { start: at, end: at } }), {
    strikeThrough: false,
    inlineText: "self.",
    hoverText: undefined,
  });
  assert.deepEqual(presentation({ text: "", range: renameEdit(1).range }), {
    strikeThrough: true,
    inlineText: undefined,
    hoverText: undefined,
  });
});

test("multi-line new text shows its first line and an ellipsis inline, and all of it in the hover", () => {
  const text = "if w <= 0:\n        return 0\n    return w * height";
  assert.deepEqual(presentation({ text, range: renameEdit(1).range }), {
    strikeThrough: true,
    inlineText: "if w <= 0:…",
    hoverText: text,
  });
  assert.equal(presentation({ text: "\r\nreturn 0", range: renameEdit(1).range }).inlineText, "…");
});

test("tabs in the inline text are drawn as the editor's indentation", () => {
  assert.equal(presentation({ text: "\treturn w", range: renameEdit(1).range }, 2).inlineText, "  return w");
  assert.equal(presentation({ text: "\tx", range: renameEdit(1).range }).inlineText, "    x");
});

test("Tab applies on any line the edit covers and jumps from anywhere else", () => {
  const range = { start: { line: 3, character: 4 }, end: { line: 5, character: 0 } };
  assert.equal(cursorIsOnEdit(2, range), false);
  assert.equal(cursorIsOnEdit(3, range), true);
  assert.equal(cursorIsOnEdit(4, range), true);
  assert.equal(cursorIsOnEdit(5, range), true);
  assert.equal(cursorIsOnEdit(6, range), false);
});

test("after applying, the cursor goes to the end of the new text", () => {
  assert.deepEqual(endOfInsertion({ line: 1, character: 11 }, "w"), { line: 1, character: 12 });
  assert.deepEqual(endOfInsertion({ line: 1, character: 11 }, ""), { line: 1, character: 11 });
  assert.deepEqual(endOfInsertion({ line: 1, character: 4 }, "if w:\n        return 0\n    "), { line: 3, character: 4 });
  assert.deepEqual(endOfInsertion({ line: 0, character: 0 }, "a\r\nbc"), { line: 1, character: 2 });
});

test("the server hears every diagnostic but its own", () => {
  type Diagnostic = { message: string; source?: string };
  const pyright: Diagnostic = { message: "\"width\" is not defined", source: "Pyright" };
  const unnamed: Diagnostic = { message: "syntax error" };
  const own: Diagnostic = { message: "possible off-by-one", source: OWN_DIAGNOSTIC_SOURCE };
  assert.deepEqual(foreignDiagnostics([pyright, own, unnamed], OWN_DIAGNOSTIC_SOURCE), [pyright, unnamed]);
});

test("Tab and Escape reach the next edit only while it is visible and nothing else wants the key", () => {
  const bindings = manifest.contributes.keybindings as { key: string; command: string; when: string }[];
  const byKey = new Map(bindings.map((binding) => [binding.key, binding]));
  assert.equal(byKey.get("tab")?.command, NEXT_EDIT_JUMP_OR_APPLY_COMMAND);
  assert.equal(byKey.get("escape")?.command, NEXT_EDIT_DISMISS_COMMAND);
  for (const binding of bindings) {
    const clauses = binding.when.split(" && ");
    assert.equal(clauses[0], NEXT_EDIT_VISIBLE_CONTEXT);
    for (const clause of ["editorTextFocus", "!inlineSuggestionVisible", "!suggestWidgetVisible"]) {
      assert.ok(clauses.includes(clause), `${binding.key}: ${binding.when}`);
    }
  }
});
