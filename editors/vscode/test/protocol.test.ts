import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

import { CLIENT_COMMANDS, withoutClientCommandRegistration, withoutClientCommands } from "../src/protocol";

const manifest = JSON.parse(readFileSync(path.join(__dirname, "..", "..", "package.json"), "utf8"));

test("the server's own commands stay, ours are left to our registration", () => {
  assert.deepEqual(
    withoutClientCommands(["lspSpark.stats", "lspSpark.editWithInstruction", "lspSpark.accepted"]),
    ["lspSpark.stats", "lspSpark.accepted"],
  );
  assert.equal(withoutClientCommands(undefined), undefined);
});

test("dynamic executeCommand registrations are filtered too, other registrations pass untouched", () => {
  const commands = {
    id: "1",
    method: "workspace/executeCommand",
    registerOptions: { commands: ["lspSpark.editWithInstruction", "lspSpark.stats"], workDoneProgress: true },
  };
  assert.deepEqual(withoutClientCommandRegistration(commands), {
    id: "1",
    method: "workspace/executeCommand",
    registerOptions: { commands: ["lspSpark.stats"], workDoneProgress: true },
  });
  assert.deepEqual(commands.registerOptions.commands, ["lspSpark.editWithInstruction", "lspSpark.stats"]);
  const other = { id: "2", method: "workspace/didChangeConfiguration", registerOptions: { section: "lspSpark" } };
  assert.equal(withoutClientCommandRegistration(other), other);
});

test("package.json contributes exactly the commands the extension registers", () => {
  const contributed = manifest.contributes.commands.map((command: { command: string }) => command.command);
  assert.deepEqual(new Set(contributed), CLIENT_COMMANDS);
  for (const command of manifest.contributes.commands) {
    assert.equal(command.category, "lsp-spark");
  }
});

test("package.json declares the settings the brief names, in the lspSpark section", () => {
  const keys = Object.keys(manifest.contributes.configuration.properties);
  for (const key of ["enable", "backend", "apiKey", "baseUrl", "model", "debounceMs", "maxTokens", "maxLines", "logLevel", "serverPath"]) {
    assert.ok(keys.includes(`lspSpark.${key}`), key);
  }
  assert.deepEqual(manifest.contributes.configuration.properties["lspSpark.backend"].enum, ["auto", "cerebras", "openai", "local"]);
  assert.match(manifest.contributes.configuration.properties["lspSpark.apiKey"].markdownDescription, /CEREBRAS_API_KEY/);
  assert.equal(manifest.main, "./dist/extension.js");
});
