/**
 * The extension's pure pieces against the real `lsp-spark serve` process and the loopback
 * Cerebras stand-in: the settings we forward are the ones the server accepts, the stats we
 * format are the ones it sends. VS Code itself cannot run here (no download), so this speaks
 * LSP the way vscode-languageclient does, with the same protocol library.
 */

import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { createInterface } from "node:readline";
import { after, before, test } from "node:test";
import {
  DidChangeConfigurationNotification,
  DidChangeTextDocumentNotification,
  DidOpenTextDocumentNotification,
  ExitNotification,
  InitializedNotification,
  InitializeRequest,
  type InitializeResult,
  InlineCompletionRequest,
  InlineCompletionTriggerKind,
  type InlineCompletionList,
  type ProtocolConnection,
  ShowMessageNotification,
  type ShowMessageParams,
  ShutdownRequest,
  StreamMessageReader,
  StreamMessageWriter,
  createProtocolConnection,
} from "vscode-languageserver-protocol/node";

import { DEFAULT_SERVER_COMMAND, SECTION, SERVER_ARGS, STATS_PARAMS, STATS_REQUEST, withoutClientCommands } from "../src/protocol";
import { findExecutable } from "../src/serverPath";
import { declaredKeys, explicitSettings, type Inspected, serverSettings, toggledEnable } from "../src/settings";
import { formatStatsReport, formatStatus, parseStats } from "../src/status";

const REPO = path.resolve(__dirname, "..", "..", "..", "..");
const STEP_MS = 20_000;
const MANIFEST = JSON.parse(readFileSync(path.join(__dirname, "..", "..", "package.json"), "utf8"));

/** Bounded wait: every step of this test fails instead of hanging. */
function within<T>(promise: Promise<T>, what: string, ms = STEP_MS): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The Python that has lsp_spark installed: $LSP_SPARK_PYTHON, the repo's .venv, or python3. */
function findPython(): string {
  const candidates = [process.env.LSP_SPARK_PYTHON, path.join(REPO, ".venv", "bin", "python"), "python3"];
  for (const candidate of candidates) {
    if (candidate === undefined || (candidate.includes("/") && !existsSync(candidate))) {
      continue;
    }
    const probe = spawnSync(candidate, ["-c", "import lsp_spark"], { timeout: STEP_MS });
    if (probe.status === 0) {
      return candidate;
    }
  }
  throw new Error("no Python with lsp_spark installed: run `make install` or set LSP_SPARK_PYTHON");
}

/** The server's environment: none of the user's keys or config, like lsp_spark.testing.isolated_environment. */
function isolatedEnvironment(configHome: string, binDir: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.startsWith("CEREBRAS_") && !name.startsWith("LSP_SPARK_")) {
      env[name] = value;
    }
  }
  env.XDG_CONFIG_HOME = configHome;
  env.PATH = [binDir, process.env.PATH ?? ""].join(path.delimiter);
  return env;
}

const LOOPBACK = `
import sys
from lsp_spark.testing.cerebras_server import CerebrasTestServer
with CerebrasTestServer(api_key="test-key", models=["gpt-oss-120b"]) as server:
    server.config.default_reply = "return a + b"
    print(server.base_url, flush=True)
    sys.stdin.read()
`;

const children: ChildProcess[] = [];
let configHome = "";
let python = "";
let baseUrl = "";
let connection: ProtocolConnection;
let initializeResult: InitializeResult;
const messages: ShowMessageParams[] = [];

/** Settings as VS Code's inspect() would report them: user, workspace, and defaults-only keys. */
function inspected(overrides: Record<string, Inspected> = {}): Record<string, Inspected> {
  return {
    enable: { globalValue: true },
    backend: { globalValue: "cerebras" },
    apiKey: { globalValue: "test-key" },
    baseUrl: { globalValue: baseUrl, workspaceValue: "http://127.0.0.1:9" },
    model: { globalValue: "gpt-oss-120b" },
    debounceMs: { globalValue: 0 },
    maxTokens: { globalValue: 64 },
    maxLines: { globalValue: 8 },
    logLevel: { globalValue: "warning" },
    serverPath: { globalValue: "/somewhere/lsp-spark" },
    prefetch: { workspaceValue: false },
    completionDeadlineMs: {},
    ...overrides,
  };
}

function forwarded(settings: Record<string, Inspected>): Record<string, unknown> {
  return serverSettings(explicitSettings(Object.keys(settings), (key) => settings[key]));
}

before(async () => {
  python = findPython();
  configHome = mkdtempSync(path.join(tmpdir(), "lsp-spark-vscode-config-"));
  const loopback = spawn(python, ["-c", LOOPBACK], { stdio: ["pipe", "pipe", "inherit"] });
  children.push(loopback);
  const firstLine = new Promise<string>((resolve, reject) => {
    createInterface({ input: loopback.stdout! }).once("line", resolve);
    loopback.once("exit", (code) => reject(new Error(`loopback server exited with ${code}`)));
  });
  baseUrl = (await within(firstLine, "loopback server start")).trim();
  assert.match(baseUrl, /^http:\/\/127\.0\.0\.1:\d+/);

  const binDir = path.dirname(python.includes("/") ? python : (findExecutable(python) ?? python));
  const env = isolatedEnvironment(configHome, binDir);
  const command = findExecutable(DEFAULT_SERVER_COMMAND, { env });
  assert.ok(command, `${DEFAULT_SERVER_COMMAND} not found on PATH next to ${python}`);
  const server = spawn(command, [...SERVER_ARGS], { env, stdio: ["pipe", "pipe", "inherit"] });
  children.push(server);
  connection = createProtocolConnection(new StreamMessageReader(server.stdout!), new StreamMessageWriter(server.stdin!));
  connection.onNotification(ShowMessageNotification.type, (params) => {
    messages.push(params);
  });
  connection.listen();

  initializeResult = await within(
    connection.sendRequest(InitializeRequest.type, {
      processId: process.pid,
      rootUri: null,
      capabilities: {
        textDocument: { inlineCompletion: { dynamicRegistration: false }, synchronization: { dynamicRegistration: false } },
        workspace: { configuration: false, didChangeConfiguration: { dynamicRegistration: false } },
      },
      initializationOptions: forwarded(inspected()),
    }),
    "initialize",
  );
  await connection.sendNotification(InitializedNotification.type, {});
});

after(async () => {
  if (connection !== undefined) {
    await within(connection.sendRequest(ShutdownRequest.type), "shutdown").catch(() => undefined);
    await connection.sendNotification(ExitNotification.type).catch(() => undefined);
  }
  for (const child of children) {
    child.stdin?.end();
    const exited = new Promise<void>((resolve) => (child.exitCode !== null ? resolve() : child.once("exit", () => resolve())));
    await within(exited, "child exit", 5000).catch(() => child.kill("SIGKILL"));
  }
  connection?.dispose();
  rmSync(configHome, { recursive: true, force: true });
});

const URI = "file:///tmp/lsp-spark-vscode/add.py";

async function inlineCompletion(line: number, character: number): Promise<InlineCompletionList> {
  const result = await within(
    connection.sendRequest(InlineCompletionRequest.type, {
      textDocument: { uri: URI },
      position: { line, character },
      context: { triggerKind: InlineCompletionTriggerKind.Automatic },
    }),
    "inline completion",
  );
  assert.ok(result !== null && !Array.isArray(result), "an InlineCompletionList");
  return result as InlineCompletionList;
}

async function stats() {
  return parseStats(await within(connection.sendRequest(STATS_REQUEST, STATS_PARAMS), STATS_REQUEST));
}

async function pushSettings(settings: Record<string, unknown>): Promise<void> {
  await connection.sendNotification(DidChangeConfigurationNotification.type, { settings: { [SECTION]: settings } });
}

test("the server keeps its own commands once ours are taken out, and offers inline completion", () => {
  const advertised = initializeResult.capabilities.executeCommandProvider?.commands ?? [];
  const kept = withoutClientCommands(advertised) ?? [];
  assert.ok(kept.includes("lspSpark.accepted"), JSON.stringify(advertised));
  assert.ok(kept.includes("lspSpark.stats"), JSON.stringify(advertised));
  assert.ok(!kept.includes("lspSpark.editWithInstruction"));
  assert.ok(initializeResult.capabilities.inlineCompletionProvider);
});

test("forwarded settings reach the server, which completes through the loopback Cerebras", async () => {
  await connection.sendNotification(DidOpenTextDocumentNotification.type, {
    textDocument: { uri: URI, languageId: "python", version: 1, text: "def add(a, b):\n    " },
  });
  const list = await inlineCompletion(1, 4);
  assert.equal(list.items.length, 1, JSON.stringify(list));
  assert.match(String(list.items[0]?.insertText), /return a \+ b/);
  assert.equal(list.items[0]?.command?.command, "lspSpark.accepted");

  const current = await stats();
  assert.equal(current.backend, "cerebras");
  assert.equal(current.model, "gpt-oss-120b");
  assert.ok(current.lastLatencyMs !== undefined && current.lastLatencyMs >= 0);
  assert.match(formatStatus("running", true, current).text, /^\$\(zap\) lsp-spark: cerebras · \d+ ms( · \d+ tok\/s)?$/);
  const report = formatStatsReport(current);
  assert.match(report, /^lsp-spark stats: cerebras \(gpt-oss-120b\)$/m);
  assert.match(report, /Latency {9}p50 \d+ ms · p95 \d+ ms · last \d+ ms/);
  assert.match(report, /Upstream {8}1 requests/);
  assert.deepEqual(messages, [], "the server warned about the forwarded settings");
});

test("toggling enable off through didChangeConfiguration stops suggestions", async () => {
  const { value } = toggledEnable({ globalValue: true, defaultValue: true } as Inspected);
  assert.equal(value, false);
  await pushSettings(forwarded(inspected({ enable: { globalValue: value } })));
  await connection.sendNotification(DidChangeTextDocumentNotification.type, {
    textDocument: { uri: URI, version: 2 },
    contentChanges: [{ text: "def sub(a, b):\n    " }],
  });
  const before = (await stats()).upstreamRequests;
  const list = await inlineCompletion(1, 4);
  assert.deepEqual(list.items, []);
  assert.equal((await stats()).upstreamRequests, before);
  assert.equal(formatStatus("running", false, await stats()).text, "$(zap) lsp-spark: off");

  await pushSettings(forwarded(inspected()));
  const again = await inlineCompletion(1, 4);
  assert.equal(again.items.length, 1, JSON.stringify(again));
});

test("a bad value is reported by the server, and serverPath never reaches it", async () => {
  const shown = within(
    new Promise<ShowMessageParams>((resolve) => {
      connection.onNotification(ShowMessageNotification.type, (params) => {
        messages.push(params);
        resolve(params);
      });
    }),
    "the server's warning",
  );
  await pushSettings(forwarded(inspected({ maxLines: { globalValue: 0 } })));
  const warning = await shown;
  assert.match(warning.message, /maxLines/);
  assert.doesNotMatch(warning.message, /serverPath/);
});

test("every setting package.json declares is one the server accepts", async () => {
  const declared = declaredKeys(MANIFEST);
  const seen = messages.length;
  const settings: Record<string, Inspected> = {};
  for (const key of declared) {
    if (key === "localModelPath") {
      continue; // another model file counts only from the server's own configuration
    }
    const schema = MANIFEST.contributes.configuration.properties[`${SECTION}.${key}`];
    const types = [schema.type].flat();
    const unsetSample = types.includes("boolean") ? true : types.includes("integer") ? 5 : "x";
    const sample = schema.enum?.[0] ?? (schema.default === null || schema.default === "" ? unsetSample : schema.default);
    settings[key] = { globalValue: key === "baseUrl" ? baseUrl : sample };
  }
  settings.backend = { globalValue: "cerebras" };
  settings.apiKey = { globalValue: "test-key" };
  settings.model = { globalValue: "gpt-oss-120b" };
  await pushSettings(forwarded(settings));
  const list = await inlineCompletion(1, 4);
  assert.equal(list.items.length, 1, JSON.stringify(list));
  assert.deepEqual(messages.slice(seen), []);
});
