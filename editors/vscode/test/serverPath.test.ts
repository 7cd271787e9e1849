import assert from "node:assert/strict";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { after, test } from "node:test";

import { findExecutable } from "../src/serverPath";

const root = mkdtempSync(path.join(tmpdir(), "lsp-spark-path-"));
after(() => rmSync(root, { recursive: true, force: true }));

function file(relative: string, mode: number): string {
  const full = path.join(root, relative);
  mkdirSync(path.dirname(full), { recursive: true });
  writeFileSync(full, "#!/bin/sh\n");
  chmodSync(full, mode);
  return full;
}

const first = file("a/lsp-spark", 0o755);
const second = file("b/lsp-spark", 0o755);
const notExecutable = file("c/lsp-spark", 0o644);
mkdirSync(path.join(root, "d/lsp-spark"), { recursive: true });

test("a bare name is found on PATH, first match wins, non-executables and directories are skipped", () => {
  const dirs = (...names: string[]): string => names.map((name) => path.join(root, name)).join(path.delimiter);
  assert.equal(findExecutable("lsp-spark", { env: { PATH: dirs("a", "b") }, platform: "linux" }), first);
  assert.equal(findExecutable("lsp-spark", { env: { PATH: dirs("c", "d", "b") }, platform: "linux" }), second);
  assert.equal(findExecutable("lsp-spark", { env: { PATH: dirs("c", "d") }, platform: "linux" }), undefined);
  assert.equal(findExecutable("lsp-spark", { env: {}, platform: "linux" }), undefined);
});

test("a path is checked as given, relative ones against the workspace folder", () => {
  assert.equal(findExecutable(first, { env: { PATH: "" }, platform: "linux" }), first);
  assert.equal(findExecutable(notExecutable, { env: {}, platform: "linux" }), undefined);
  assert.equal(findExecutable("b/lsp-spark", { env: {}, platform: "linux", baseDir: root }), second);
  assert.equal(findExecutable("b/lsp-spark", { env: {}, platform: "linux" }), undefined);
  assert.equal(findExecutable("  ", { env: { PATH: path.join(root, "a") }, platform: "linux" }), undefined);
});

test("~/ is the home directory", () => {
  const home = process.env.HOME;
  process.env.HOME = root;
  try {
    assert.equal(findExecutable("~/a/lsp-spark", { env: {}, platform: "linux" }), first);
    assert.equal(findExecutable("~/c/lsp-spark", { env: {}, platform: "linux" }), undefined);
  } finally {
    process.env.HOME = home;
  }
});
