import assert from "node:assert/strict";
import { test } from "node:test";

import { formatStatsReport, formatStatus, parseStats } from "../src/status";

const snapshot = {
  backend: "cerebras",
  model: "gpt-oss-120b",
  requests: 40,
  suggestions: 30,
  empty: 10,
  cacheHits: 12,
  cacheHitRate: 0.375,
  typeThroughHits: 4,
  prefetchHits: 2,
  prefetches: 5,
  tokensSaved: 900,
  shown: 25,
  accepted: 10,
  partiallyAccepted: 3,
  upstreamRequests: 20,
  upstreamErrors: 1,
  superseded: 6,
  earlyStops: 2,
  tokensReceived: 2400,
  latencyMs: { p50: 118.4, p95: 342.6 },
  firstTokenMs: { p50: 80.2, p95: 150.9 },
  tokensPerSecond: { p50: 1850.4 },
  lastLatencyMs: 97.6,
  lastTokensPerSecond: 2011.2,
};

test("the status bar shows backend, last latency and throughput", () => {
  const view = formatStatus("running", true, parseStats(snapshot));
  assert.equal(view.text, "$(zap) lsp-spark: cerebras · 98 ms · 2011 tok/s");
  assert.match(view.tooltip, /gpt-oss-120b/);
});

test("before any completion only the backend is shown", () => {
  const fresh = parseStats({ backend: "local", model: "qwen", lastLatencyMs: null, lastTokensPerSecond: null });
  assert.equal(formatStatus("running", true, fresh).text, "$(zap) lsp-spark: local");
  assert.equal(formatStatus("running", true, undefined).text, "$(zap) lsp-spark: ready");
});

test("starting, off and not running win over stale numbers", () => {
  const stats = parseStats(snapshot);
  assert.equal(formatStatus("starting", true, stats).text, "$(zap) lsp-spark: starting…");
  assert.equal(formatStatus("running", false, stats).text, "$(zap) lsp-spark: off");
  assert.equal(formatStatus("failed", true, stats).text, "$(error) lsp-spark: not running");
  assert.equal(formatStatus("stopped", false, stats).text, "$(error) lsp-spark: not running");
});

test("parseStats keeps well-typed fields and drops the rest", () => {
  const parsed = parseStats({ backend: 3, shown: "7", accepted: 2, latencyMs: { p50: null, p95: 9 }, lastLatencyMs: Number.NaN });
  assert.equal(parsed.backend, undefined);
  assert.equal(parsed.shown, undefined);
  assert.equal(parsed.accepted, 2);
  assert.deepEqual(parsed.latencyMs, { p50: undefined, p95: 9 });
  assert.equal(parsed.lastLatencyMs, undefined);
  assert.deepEqual(parseStats(null), {});
  assert.deepEqual(parseStats([1, 2]), {});
});

test("the report lists latency, first token, throughput, cache, acceptance, upstream and tokens", () => {
  const report = formatStatsReport(parseStats(snapshot));
  const lines = report.split("\n");
  assert.equal(lines[0], "lsp-spark stats: cerebras (gpt-oss-120b)");
  assert.ok(lines.includes("  Latency         p50 118 ms · p95 343 ms · last 98 ms"), report);
  assert.ok(lines.includes("  First token     p50 80 ms · p95 151 ms"), report);
  assert.ok(lines.includes("  Throughput      p50 1850 tok/s · last 2011 tok/s"), report);
  assert.ok(lines.includes("  Cache hit rate  37.5 % (12 hits, 4 type-through, 2 prefetched)"), report);
  assert.ok(lines.includes("  Suggestions     shown 25 · accepted 10 (40.0 %) · partially 3"), report);
  assert.ok(lines.includes("  Requests        40 (30 with a suggestion, 10 empty)"), report);
  assert.ok(lines.includes("  Upstream        20 requests · 1 errors · 6 superseded · 5 prefetches"), report);
  assert.ok(lines.includes("  Tokens          received 2400 · saved 900"), report);
});

test("an empty server shows dashes, not zeros or NaN", () => {
  const report = formatStatsReport(parseStats({ backend: "cerebras", shown: 0, accepted: 0 }));
  assert.match(report, /Latency {9}p50 – · p95 – · last –/);
  assert.match(report, /shown 0 · accepted 0 \(–\)/);
  assert.doesNotMatch(report, /NaN|undefined/);
});
