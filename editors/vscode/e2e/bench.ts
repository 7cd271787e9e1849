/**
 * Keystroke → ghost text in VS Code, timed in the browser; run by benchmarks/editor_vscode.py.
 *
 * `node bench.ts --keystrokes N --warmup W --ttft S --tps N [--server-env NAME=VALUE ...]
 * --output FILE` opens a file of functions with empty bodies in code-server's workbench (the
 * packaged extension, the real server, the loopback Cerebras server paced at the given TTFT
 * and tokens/s) and, for each body in turn, moves there with Go to Line and types its first
 * character. No answer the server has seen covers that place, so each keystroke goes
 * upstream. The time runs from `performance.now()` in a capturing keydown listener to the
 * MutationObserver callback that first sees a ghost text element in the editor (and to the
 * next animation frame after it, when the browser paints it). Every sample's ghost text is
 * checked against the line the model was asked for. Writes `{samples: [{domMs, frameMs,
 * ghostText, expected}], ...}`, with the server's own timing of each upstream request (its
 * debug log: waited, first token, generation, ...) beside them, which shows what VS Code and
 * the transport add.
 *
 * Exits with status 3 when something it needs is not installed (see harness.ts `Missing`).
 */

import { writeFileSync } from "node:fs";
import { parseArgs } from "node:util";

import { Missing, Session } from "./harness.ts";

const MISSING_STATUS = 3;
const TYPED = "r";
const LOG_WAIT_MS = 10_000;
/** The server's debug line for each answered request (lsp_spark/pipeline.py). */
const SERVER_TIMING =
  /completion: context ([\d.]+) ms, waited ([\d.]+) ms, first token ([\d.]+) ms, generation ([\d.]+) ms, post-processing ([\d.]+) ms/g;

interface ServerTiming {
  contextMs: number;
  waitedMs: number;
  firstTokenMs: number;
  generationMs: number;
  postProcessingMs: number;
}

interface Sample {
  domMs: number;
  frameMs: number;
  ghostText: string;
  expected: string;
}

function functions(count: number): { initial: string; source: string; bodies: string[] } {
  const header = '"""Scaling helpers, one per offset."""\n';
  const bodies = Array.from({ length: count }, (_, index) => `    return [value * factor + ${index} for value in values]`);
  const definition = (index: number): string => `\n\ndef scale_${index}(values, factor):\n`;
  return {
    initial: header + bodies.map((_, index) => `${definition(index)}    \n`).join(""),
    source: header + bodies.map((body, index) => `${definition(index)}${body}\n`).join(""),
    bodies,
  };
}

/** Installs the probes, types one key and resolves with the timings the page took. */
async function timeKeystroke(session: Session): Promise<{ domMs: number; frameMs: number; ghostText: string }> {
  const page = session.page;
  await page.evaluate((key) => {
    const probe = { keyAt: 0, domAt: 0, frameAt: 0, text: "" };
    (window as unknown as { __ghostProbe: typeof probe }).__ghostProbe = probe;
    const selector = ".editor-instance .monaco-editor .ghost-text-decoration, .editor-instance .monaco-editor .ghost-text";
    const onKey = (event: KeyboardEvent): void => {
      if (event.key === key && probe.keyAt === 0) {
        probe.keyAt = performance.now();
        window.removeEventListener("keydown", onKey, true);
      }
    };
    window.addEventListener("keydown", onKey, true);
    const observer = new MutationObserver(() => {
      const ghosts = document.querySelectorAll(selector);
      if (probe.keyAt === 0 || ghosts.length === 0) {
        return;
      }
      probe.domAt = performance.now();
      probe.text = [...ghosts].map((element) => element.textContent ?? "").join("").replace(/\u00a0/g, " ");
      observer.disconnect();
      requestAnimationFrame(() => {
        probe.frameAt = performance.now();
      });
    });
    observer.observe(document.body, { childList: true, subtree: true, characterData: true });
  }, TYPED);
  await page.keyboard.press(TYPED);
  const handle = await page.waitForFunction(() => {
    const probe = (window as unknown as { __ghostProbe: { keyAt: number; domAt: number; frameAt: number; text: string } })
      .__ghostProbe;
    return probe.frameAt > 0 ? probe : undefined;
  });
  const probe = (await handle.jsonValue()) as { keyAt: number; domAt: number; frameAt: number; text: string };
  return { domMs: probe.domAt - probe.keyAt, frameMs: probe.frameAt - probe.keyAt, ghostText: probe.text };
}

/** The server's timings of the upstream requests, once its log (written by VS Code as it
 * comes) has one per keystroke, or what it has after LOG_WAIT_MS. */
async function serverTimings(session: Session, expected: number): Promise<ServerTiming[]> {
  const deadline = Date.now() + LOG_WAIT_MS;
  let timings: ServerTiming[] = [];
  while (Date.now() < deadline) {
    timings = [...session.serverLog().matchAll(SERVER_TIMING)].map((match) => {
      const [contextMs, waitedMs, firstTokenMs, generationMs, postProcessingMs] = match.slice(1).map(Number) as [
        number,
        number,
        number,
        number,
        number,
      ];
      return { contextMs, waitedMs, firstTokenMs, generationMs, postProcessingMs };
    });
    if (timings.length >= expected) {
      break;
    }
    await session.page.waitForTimeout(100);
  }
  return timings;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      keystrokes: { type: "string", default: "40" },
      warmup: { type: "string", default: "2" },
      ttft: { type: "string", default: "0.1" },
      tps: { type: "string", default: "1000" },
      "server-env": { type: "string", multiple: true, default: [] },
      output: { type: "string" },
    },
  });
  const serverEnvironment = Object.fromEntries(
    (values["server-env"] ?? []).map((assignment) => assignment.split(/=(.*)/s).slice(0, 2) as [string, string]),
  );
  const keystrokes = Number(values.keystrokes);
  const warmup = Number(values.warmup);
  if (values.output === undefined || !(keystrokes > 0) || !(warmup >= 0)) {
    throw new Error("usage: bench.ts --keystrokes N --warmup W --ttft S --tps N --output FILE");
  }
  const file = functions(warmup + keystrokes);
  const session = await Session.start({
    files: { "scale.py": file.initial },
    model: { source: file.source },
    ttftSeconds: Number(values.ttft),
    tokensPerSecond: Number(values.tps),
    environment: serverEnvironment,
  });
  try {
    const started = Date.now();
    await session.openFile("scale.py");
    await session.statusItem().filter({ hasText: /lsp-spark: (ready|cerebras)/ }).waitFor();
    const samples: Sample[] = [];
    for (const [index, body] of file.bodies.entries()) {
      // Line of scale_<index>'s body: the header, then four lines per function.
      await session.goTo(5 + index * 4, 5);
      await session.ghostText().first().waitFor({ state: "detached" });
      const timing = await timeKeystroke(session);
      const expected = body.trimStart().slice(TYPED.length);
      await session.page.keyboard.press("Escape");
      if (index >= warmup) {
        samples.push({ ...timing, expected });
      }
    }
    const report = {
      keystrokes,
      warmup,
      ttftSeconds: Number(values.ttft),
      tokensPerSecond: Number(values.tps),
      upstreamRequests: session.upstreamRequests(),
      outsideRequests: session.outsideRequests,
      typingSeconds: (Date.now() - started) / 1000,
      serverEnvironment,
      samples,
      // The warm-up keystrokes' requests come first.
      server: (await serverTimings(session, file.bodies.length)).slice(warmup),
    };
    writeFileSync(values.output, JSON.stringify(report, null, 2));
  } catch (error) {
    console.error(await session.diagnostics());
    throw error;
  } finally {
    await session.close();
  }
}

try {
  await main();
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = error instanceof Missing ? MISSING_STATUS : 1;
}
