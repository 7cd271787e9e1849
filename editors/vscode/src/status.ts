/** Text for the status bar item and the stats report, from the server's `lspSpark/stats` answer. */

export interface Percentiles {
  p50?: number;
  p95?: number;
}

/** The fields of the server's stats snapshot that we show; anything missing is shown as "–". */
export interface Stats {
  backend?: string;
  model?: string;
  requests?: number;
  suggestions?: number;
  empty?: number;
  cacheHits?: number;
  cacheHitRate?: number;
  typeThroughHits?: number;
  prefetchHits?: number;
  prefetches?: number;
  tokensSaved?: number;
  shown?: number;
  accepted?: number;
  partiallyAccepted?: number;
  upstreamRequests?: number;
  upstreamErrors?: number;
  superseded?: number;
  tokensReceived?: number;
  latencyMs?: Percentiles;
  firstTokenMs?: Percentiles;
  tokensPerSecond?: Percentiles;
  lastLatencyMs?: number;
  lastTokensPerSecond?: number;
}

const COUNTERS = [
  "requests",
  "suggestions",
  "empty",
  "cacheHits",
  "cacheHitRate",
  "typeThroughHits",
  "prefetchHits",
  "prefetches",
  "tokensSaved",
  "shown",
  "accepted",
  "partiallyAccepted",
  "upstreamRequests",
  "upstreamErrors",
  "superseded",
  "tokensReceived",
  "lastLatencyMs",
  "lastTokensPerSecond",
] as const;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function finite(value: unknown): number | undefined {
  return typeof value === "number" && Number.isFinite(value) ? value : undefined;
}

function percentiles(value: unknown): Percentiles | undefined {
  if (!isRecord(value)) {
    return undefined;
  }
  return { p50: finite(value.p50), p95: finite(value.p95) };
}

/** Keep only well-typed fields, so a newer or older server never breaks the display. */
export function parseStats(value: unknown): Stats {
  if (!isRecord(value)) {
    return {};
  }
  const stats: Stats = {
    backend: typeof value.backend === "string" ? value.backend : undefined,
    model: typeof value.model === "string" ? value.model : undefined,
    latencyMs: percentiles(value.latencyMs),
    firstTokenMs: percentiles(value.firstTokenMs),
    tokensPerSecond: percentiles(value.tokensPerSecond),
  };
  for (const key of COUNTERS) {
    stats[key] = finite(value[key]);
  }
  return stats;
}

export type ClientState = "starting" | "running" | "stopped" | "failed";

export interface StatusView {
  text: string;
  tooltip: string;
}

const ICON = "$(zap)";

function whole(value: number): string {
  return Math.round(value).toString();
}

/** The status bar line: "$(zap) lsp-spark: cerebras · 120 ms · 1850 tok/s". */
export function formatStatus(state: ClientState, enabled: boolean, stats?: Stats): StatusView {
  if (state === "failed" || state === "stopped") {
    return {
      text: "$(error) lsp-spark: not running",
      tooltip: "The lsp-spark server is not running; see the lsp-spark output channel.",
    };
  }
  if (state === "starting") {
    return { text: `${ICON} lsp-spark: starting…`, tooltip: "The lsp-spark server is starting." };
  }
  if (!enabled) {
    return {
      text: `${ICON} lsp-spark: off`,
      tooltip: "Suggestions are off (lsp-spark: Toggle suggestions turns them on).",
    };
  }
  const parts = [stats?.backend ?? "ready"];
  if (stats?.lastLatencyMs !== undefined) {
    parts.push(`${whole(stats.lastLatencyMs)} ms`);
  }
  if (stats?.lastTokensPerSecond !== undefined) {
    parts.push(`${whole(stats.lastTokensPerSecond)} tok/s`);
  }
  const model = stats?.model ? ` (${stats.model})` : "";
  return {
    text: `${ICON} lsp-spark: ${parts.join(" · ")}`,
    tooltip: `lsp-spark: ${stats?.backend ?? "backend unknown"}${model}. Click for stats.`,
  };
}

function count(value: number | undefined): string {
  return value === undefined ? "–" : whole(value);
}

function ms(value: number | undefined): string {
  return value === undefined ? "–" : `${whole(value)} ms`;
}

function rate(value: number | undefined): string {
  return value === undefined ? "–" : `${(value * 100).toFixed(1)} %`;
}

function ratio(part: number | undefined, total: number | undefined): number | undefined {
  return part === undefined || !total ? undefined : part / total;
}

function row(label: string, value: string): string {
  return `  ${label.padEnd(16)}${value}`;
}

/** The multi-line report for the output channel. */
export function formatStatsReport(stats: Stats): string {
  const model = stats.model ? ` (${stats.model})` : "";
  return [
    `lsp-spark stats: ${stats.backend ?? "backend unknown"}${model}`,
    row(
      "Latency",
      `p50 ${ms(stats.latencyMs?.p50)} · p95 ${ms(stats.latencyMs?.p95)} · last ${ms(stats.lastLatencyMs)}`,
    ),
    row("First token", `p50 ${ms(stats.firstTokenMs?.p50)} · p95 ${ms(stats.firstTokenMs?.p95)}`),
    row(
      "Throughput",
      `p50 ${count(stats.tokensPerSecond?.p50)} tok/s · last ${count(stats.lastTokensPerSecond)} tok/s`,
    ),
    row(
      "Cache hit rate",
      `${rate(stats.cacheHitRate)} (${count(stats.cacheHits)} hits, ` +
        `${count(stats.typeThroughHits)} type-through, ${count(stats.prefetchHits)} prefetched)`,
    ),
    row(
      "Suggestions",
      `shown ${count(stats.shown)} · accepted ${count(stats.accepted)} ` +
        `(${rate(ratio(stats.accepted, stats.shown))}) · partially ${count(stats.partiallyAccepted)}`,
    ),
    row(
      "Requests",
      `${count(stats.requests)} (${count(stats.suggestions)} with a suggestion, ${count(stats.empty)} empty)`,
    ),
    row(
      "Upstream",
      `${count(stats.upstreamRequests)} requests · ${count(stats.upstreamErrors)} errors · ` +
        `${count(stats.superseded)} superseded · ${count(stats.prefetches)} prefetches`,
    ),
    row("Tokens", `received ${count(stats.tokensReceived)} · saved ${count(stats.tokensSaved)}`),
  ].join("\n");
}
