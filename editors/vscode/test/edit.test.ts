import assert from "node:assert/strict";
import { test } from "node:test";

import { buildEditArgument, validateInstruction } from "../src/edit";

const uri = "file:///work/app.py";

test("a selection becomes the range, in document order whichever way it was made", () => {
  const forward = buildEditArgument(uri, { line: 1, character: 2 }, { line: 3, character: 0 }, "add logging");
  const backward = buildEditArgument(uri, { line: 3, character: 0 }, { line: 1, character: 2 }, "add logging");
  const expected = {
    uri,
    range: { start: { line: 1, character: 2 }, end: { line: 3, character: 0 } },
    instruction: "add logging",
  };
  assert.deepEqual(forward, expected);
  assert.deepEqual(backward, expected);
  const sameLine = buildEditArgument(uri, { line: 2, character: 9 }, { line: 2, character: 4 }, "x");
  assert.deepEqual(sameLine?.range, { start: { line: 2, character: 4 }, end: { line: 2, character: 9 } });
});

test("no selection sends the cursor as an empty range", () => {
  const argument = buildEditArgument(uri, { line: 5, character: 7 }, { line: 5, character: 7 }, " add error handling ");
  assert.deepEqual(argument, {
    uri,
    range: { start: { line: 5, character: 7 }, end: { line: 5, character: 7 } },
    instruction: "add error handling",
  });
});

test("a cancelled or blank input box sends nothing", () => {
  const at = { line: 0, character: 0 };
  assert.equal(buildEditArgument(uri, at, at, undefined), undefined);
  assert.equal(buildEditArgument(uri, at, at, "   "), undefined);
  assert.ok(validateInstruction(" ") !== undefined);
  assert.equal(validateInstruction("rename x"), undefined);
});

test("the argument carries only line and character, whatever else the positions hold", () => {
  const anchor = { line: 1, character: 1, isEqual: () => false, _internal: 7 };
  const active = { line: 1, character: 3, isEqual: () => false, _internal: 8 };
  const argument = buildEditArgument(uri, anchor, active, "x");
  assert.equal(
    JSON.stringify(argument),
    '{"uri":"file:///work/app.py","range":{"start":{"line":1,"character":1},"end":{"line":1,"character":3}},"instruction":"x"}',
  );
});
