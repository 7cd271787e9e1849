import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { isBuiltin } from "node:module";
import * as path from "node:path";
import { test } from "node:test";

const bundle = readFileSync(path.join(__dirname, "..", "..", "dist", "extension.js"), "utf8");

test("the bundle needs nothing but VS Code and Node, so `vsce package --no-dependencies` is enough", () => {
  const required = new Set([...bundle.matchAll(/require\("([^"]+)"\)/g)].map((match) => match[1] as string));
  assert.ok(required.has("vscode"));
  const foreign = [...required].filter((name) => name !== "vscode" && !isBuiltin(name));
  assert.deepEqual(foreign, []);
  assert.match(bundle, /vscode-languageclient|InlineCompletion/, "the language client is inside the bundle");
});
