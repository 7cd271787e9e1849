/**
 * The packaged extension in real VS Code (code-server's workbench in Chromium), talking to the
 * real `lsp-spark serve` and the loopback Cerebras server: what a user sees and gets.
 *
 * Run by ../ci.sh through run.sh. Without Chromium, code-server, the .vsix or a Python with
 * lsp_spark this skips, and fails under LSP_SPARK_REQUIRE_EDITORS=1.
 */

import assert from "node:assert/strict";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, before, test } from "node:test";

import { Missing, Session } from "./harness.ts";

const FILE = "calc.py";
const HEADER = '"""Small arithmetic helpers."""\n\n\n';
const ADD = "def add(a, b):\n";
const SCALE = "\n\ndef scale(values, factor):\n";
const TOTAL = "\n\ndef total(values):\n    return sum(values)\n";
/** Two functions with empty bodies, the cursor's places: lines 5 and 9, after the indent. */
const INITIAL = `${HEADER}${ADD}    \n${SCALE}    \n${TOTAL}`;
const ADD_BODY = "    return a + b";
const SCALE_BODY = "    return [value * factor for value in values]";
/** What the scripted model knows: its suggestions are the rest of these lines. */
const SOURCE = `${HEADER}${ADD}${ADD_BODY}\n${SCALE}${SCALE_BODY}\n${TOTAL}`;
/** What it says when sampled: the server's alternatives, asked for when the user cycles. */
const SCALE_ALTERNATIVES = ["    return list(map(lambda value: value * factor, values))", "    return [factor * value for value in values]"];
const INSTRUCTION = "skip missing values";
const EDITED_TOTAL = "    return sum(value for value in values if value is not None)";

/** The next-edit scenario: the user renames a parameter, the server predicts its other uses. */
const CLAMP_FILE = "clamp.py";
const CLAMP = [
  "def clamp(value, lowest, highest):",
  "    if value < lowest:",
  "        return lowest",
  "    if value > highest:",
  "        return highest",
  "    return value",
  "",
].join("\n");
const RENAMED_SIGNATURE = "def clamp(number, lowest, highest):";
/** The file once the rename is done everywhere: what the scripted model predicts. */
const CLAMP_RENAMED = CLAMP.replaceAll("value", "number");
/** The file with the signature and the first `uses` uses renamed. */
function clampRenamedUpTo(uses: number): string {
  let text = CLAMP.replace("clamp(value", "clamp(number");
  for (let use = 0; use < uses; use++) {
    text = text.replace(/\bvalue\b/, "number");
  }
  return text;
}

let session: Session | undefined;
let missing: string | undefined;

before(async () => {
  try {
    session = await Session.start({
      files: { [FILE]: INITIAL, [CLAMP_FILE]: CLAMP },
      model: {
        source: SOURCE,
        alternatives: SCALE_ALTERNATIVES.map((line) => SOURCE.replace(SCALE_BODY, line)),
        edits: { [INSTRUCTION]: [["    return sum(values)", EDITED_TOTAL]] },
        nextEdits: [[RENAMED_SIGNATURE, CLAMP_RENAMED]],
      },
      // As tests/editors/helpers.py spark_environment: answers never wait for a debounce,
      // and no prefetch asks the model anything the test did not type.
      environment: { LSP_SPARK_DEBOUNCE_MS: "0", LSP_SPARK_PREFETCH: "false" },
    });
  } catch (error) {
    if (!(error instanceof Missing) || process.env.LSP_SPARK_REQUIRE_EDITORS === "1") {
      throw error;
    }
    missing = error.message;
  }
});

after(async () => {
  await session?.close();
});

/** The running session, or a skip when something is not installed (see `before`). */
function live(t: { skip(message: string): void }): Session | undefined {
  if (missing !== undefined) {
    t.skip(`${missing} (set LSP_SPARK_REQUIRE_EDITORS=1 to make this a failure)`);
    return undefined;
  }
  assert.ok(session, "the session did not start");
  return session;
}

let failed: string | undefined;

/**
 * Runs a step on the live session. Each step starts where the one before left the file, so
 * after a failure the rest fail at once (naming it) instead of each waiting out its timeouts;
 * the first failure adds VS Code's, code-server's and the servers' logs.
 */
async function step(t: { name: string; skip(message: string): void }, body: (session: Session) => Promise<void>): Promise<void> {
  const current = live(t);
  if (current === undefined) {
    return;
  }
  if (failed !== undefined) {
    throw new Error(`not run: the step before failed (${failed})`);
  }
  try {
    await body(current);
  } catch (error) {
    failed = t.name;
    console.error(await current.diagnostics());
    throw error;
  }
}

test("ghost text in VS Code, from the packaged extension and the real server", async (t) => {
  await t.test("the extension starts the server and the status bar says so", (t) =>
    step(t, async (s) => {
      await s.openFile(FILE);
      await s.statusItem().filter({ hasText: /lsp-spark: (ready|cerebras)/ }).waitFor();
    }),
  );

  await t.test("typing shows the suggestion as ghost text, and Tab inserts it", (t) =>
    step(t, async (s) => {
      await s.goTo(5, 5);
      await s.page.keyboard.type("ret");
      await s.waitForGhostText("urn a + b");
      const screenshot = path.join(process.env.LSP_SPARK_SCREENSHOTS || tmpdir(), "vscode.png");
      await s.screenshot(screenshot);
      t.diagnostic(`screenshot: ${screenshot}`);
      await s.page.keyboard.press("Tab");
      await s.waitForNoGhostText();
      await s.saveAndExpect(FILE, INITIAL.replace(`${ADD}    \n`, `${ADD}${ADD_BODY}\n`));
    }),
  );

  await t.test("the status bar shows the backend and the last latency", (t) =>
    step(t, async (s) => {
      await s.statusItem().filter({ hasText: /lsp-spark: cerebras · \d+ ms/ }).waitFor();
    }),
  );

  await t.test("Ctrl+Right accepts one word and leaves the rest as ghost text", (t) =>
    step(t, async (s) => {
      await s.goTo(9, 5);
      await s.page.keyboard.type("ret");
      await s.waitForGhostText("urn [value * factor for value in values]");
      await s.page.keyboard.press("Control+ArrowRight");
      await s.waitForGhostText(" [value * factor for value in values]");
      await s.saveAndExpect(FILE, `${HEADER}${ADD}${ADD_BODY}\n${SCALE}    return\n${TOTAL}`);
    }),
  );

  /**
   * Alt+] asks again explicitly; the server answers the suggestion shown and its alternatives
   * (sampled upstream), and VS Code shows the next one, counting them in the toolbar that
   * hovering the ghost text brings up.
   */
  await t.test("Alt+] cycles to the alternatives, and Tab inserts the one shown", (t) =>
    step(t, async (s) => {
      const rest = (line: string): string => line.slice("    return".length);
      await s.page.keyboard.press("Alt+BracketRight");
      await s.waitForGhostText(rest(SCALE_ALTERNATIVES[0]!));
      await s.ghostText().first().hover();
      await s.page.locator(".inlineSuggestionsHints", { hasText: "2/3" }).waitFor();
      await s.page.keyboard.press("Alt+BracketRight");
      await s.waitForGhostText(rest(SCALE_ALTERNATIVES[1]!));
      await s.page.keyboard.press("Tab");
      await s.waitForNoGhostText();
      await s.saveAndExpect(FILE, SOURCE.replace(SCALE_BODY, SCALE_ALTERNATIVES[1]!));
    }),
  );

  await t.test("Edit with instruction rewrites only the line the instruction is about", (t) =>
    step(t, async (s) => {
      await s.goTo(13, 5);
      await s.runCommand("lsp-spark: Edit with instruction");
      const input = s.page.locator(".quick-input-widget input");
      await s.page.locator(".quick-input-widget", { hasText: "lsp-spark: Edit with instruction" }).waitFor();
      await input.fill(INSTRUCTION);
      await s.page.keyboard.press("Enter");
      await s.page.locator(".editor-instance .view-line", { hasText: "if value is not None" }).waitFor();
      const cycled = SOURCE.replace(SCALE_BODY, SCALE_ALTERNATIVES[1]!);
      await s.saveAndExpect(FILE, cycled.replace("    return sum(values)", EDITED_TOTAL));
    }),
  );

  await t.test("renaming a parameter shows the next edit: the old name struck through, the new one after it", (t) =>
    step(t, async (s) => {
      await s.openFile(CLAMP_FILE);
      await s.goTo(1, 11);
      await s.page.keyboard.press("Control+Shift+ArrowRight");
      await s.page.keyboard.type("number");
      await s.waitForNextEdit({ line: "    if value < lowest:", struck: "value", inserted: "number" });
      const screenshot = path.join(process.env.LSP_SPARK_SCREENSHOTS || tmpdir(), "vscode-next-edit.png");
      await s.screenshot(screenshot);
      t.diagnostic(`screenshot: ${screenshot}`);
    }),
  );

  await t.test("Tab goes to the edit, Tab again applies it, and the prediction's next use is shown", (t) =>
    step(t, async (s) => {
      await s.page.keyboard.press("Tab");
      await s.waitForCursor(2, 8);
      await s.waitForNextEdit({ line: "    if value < lowest:", struck: "value", inserted: "number" });
      await s.page.keyboard.press("Tab");
      await s.waitForNextEdit({ line: "    if value > highest:", struck: "value", inserted: "number" });
      await s.saveAndExpect(CLAMP_FILE, clampRenamedUpTo(1));
    }),
  );

  await t.test("Tab applies the chained second use the same way", (t) =>
    step(t, async (s) => {
      await s.page.keyboard.press("Tab");
      await s.waitForCursor(4, 8);
      await s.page.keyboard.press("Tab");
      await s.waitForNextEdit({ line: "    return value", struck: "value", inserted: "number" });
      await s.saveAndExpect(CLAMP_FILE, clampRenamedUpTo(2));
    }),
  );

  await t.test("Escape dismisses the next edit and leaves the file as it is", (t) =>
    step(t, async (s) => {
      await s.page.keyboard.press("Escape");
      await s.waitForNextEdit(undefined);
      await s.page.keyboard.press("Tab");
      await s.saveAndExpect(CLAMP_FILE, clampRenamedUpTo(2).replace("    if number > highest:", "    if number    > highest:"));
    }),
  );

  await t.test("the page asked nothing of any host but 127.0.0.1", (t) =>
    step(t, async (s) => {
      assert.deepEqual(s.outsideRequests, []);
    }),
  );
});
