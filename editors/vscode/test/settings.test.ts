import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

import {
  declaredKeys,
  explicitSettings,
  explicitValue,
  type Inspected,
  serverSettings,
  toggledEnable,
  USER_ONLY_KEYS,
} from "../src/settings";

const manifest = JSON.parse(readFileSync(path.join(__dirname, "..", "..", "package.json"), "utf8"));

test("the most specific scope the user set wins, and defaults are never picked up", () => {
  assert.equal(explicitValue("model", { globalValue: "a", workspaceValue: "b" }), "b");
  assert.equal(explicitValue("model", { globalValue: "a", workspaceValue: "b", workspaceFolderValue: "c" }), "c");
  assert.equal(explicitValue("model", { globalValue: "a" }), "a");
  assert.equal(explicitValue("model", { defaultValue: "x" } as Inspected), undefined);
  assert.equal(explicitValue("model", undefined), undefined);
  assert.equal(explicitValue("enable", { globalValue: true, workspaceValue: false }), false);
});

test("a workspace cannot set the server path or the API host", () => {
  assert.equal(explicitValue("baseUrl", { workspaceValue: "http://evil.example" }), undefined);
  assert.equal(explicitValue("baseUrl", { globalValue: "http://127.0.0.1:9", workspaceValue: "http://evil.example" }), "http://127.0.0.1:9");
  assert.equal(explicitValue("serverPath", { workspaceFolderValue: "/tmp/evil" }), undefined);
});

test("a workspace cannot choose the backend, the key or lower privacy", () => {
  assert.equal(explicitValue("backend", { workspaceValue: "openai" }), undefined);
  assert.equal(explicitValue("apiKey", { workspaceFolderValue: "sk-theirs" }), undefined);
  assert.equal(explicitValue("redactSecrets", { globalValue: true, workspaceValue: false }), true);
  assert.equal(explicitValue("defaultExcludes", { workspaceValue: false }), undefined);
  assert.equal(explicitValue("exclude", { workspaceValue: ["!.env"] }), undefined);
  assert.equal(explicitValue("localModelPath", { workspaceValue: "/tmp/evil.gguf" }), undefined);
});

test("the manifest declares every user-only setting at machine scope", () => {
  const properties: Record<string, { scope?: string }> = manifest.contributes.configuration.properties;
  for (const key of USER_ONLY_KEYS) {
    assert.equal(properties[`lspSpark.${key}`]?.scope, "machine", key);
  }
});

test("explicitSettings keeps only keys the user set, declared or not", () => {
  const inspected: Record<string, Inspected> = {
    backend: { globalValue: "cerebras" },
    model: {},
    prefetch: { workspaceValue: false },
  };
  assert.deepEqual(
    explicitSettings(["backend", "model", "prefetch", "missing"], (key) => inspected[key]),
    { backend: "cerebras", prefetch: false },
  );
});

test("initializationOptions drop serverPath and unset values but keep false and 0", () => {
  assert.deepEqual(
    serverSettings({
      serverPath: "/opt/bin/lsp-spark",
      enable: false,
      debounceMs: 0,
      apiKey: "",
      baseUrl: "   ",
      model: null,
      maxTokens: 64,
      backend: " cerebras ",
    }),
    { enable: false, debounceMs: 0, maxTokens: 64, backend: "cerebras" },
  );
  assert.deepEqual(serverSettings({}), {});
});

test("toggle flips the effective value and writes where it takes effect", () => {
  assert.deepEqual(toggledEnable({ defaultValue: true } as Inspected), { value: false, target: "global" });
  assert.deepEqual(toggledEnable({ globalValue: false }), { value: true, target: "global" });
  assert.deepEqual(toggledEnable({ globalValue: true, workspaceValue: false }), { value: true, target: "workspace" });
  assert.deepEqual(toggledEnable(undefined), { value: false, target: "global" });
});

test("declaredKeys reads the manifest's lspSpark settings and ignores others", () => {
  const manifest = {
    contributes: {
      configuration: { properties: { "lspSpark.enable": {}, "lspSpark.maxLines": {}, "editor.fontSize": {} } },
    },
  };
  assert.deepEqual(declaredKeys(manifest), ["enable", "maxLines"]);
  assert.deepEqual(declaredKeys({}), []);
  assert.deepEqual(declaredKeys(undefined), []);
});
