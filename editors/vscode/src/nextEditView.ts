/**
 * The decisions behind the next-edit UI, kept apart from VS Code so tests can run them in plain
 * Node: which answer still applies, how an edit is drawn, where Tab goes, and which diagnostics
 * the server hears about.
 */

import type { Position, Range } from "./edit";

/** One edit of a `textDocument/copilotInlineEdit` answer, as the server sends it. */
export interface InlineEdit {
  text: string;
  range: Range;
  textDocument: { uri: string; version: number };
  command?: { title: string; command: string; arguments?: unknown[] };
}

function isPosition(value: unknown): value is Position {
  const position = value as Position | null | undefined;
  return typeof position?.line === "number" && typeof position.character === "number";
}

function isInlineEdit(value: unknown): value is InlineEdit {
  const edit = value as Partial<InlineEdit> | null | undefined;
  return (
    typeof edit?.text === "string" &&
    isPosition(edit.range?.start) &&
    isPosition(edit.range?.end) &&
    typeof edit.textDocument?.version === "number"
  );
}

/**
 * The edit to show from an answer, or undefined when there is none or the answer is stale:
 * the server computed it for another version than the one the editor holds now (the user kept
 * typing while the request was out), so its range may no longer cover the text it names.
 */
export function currentEdit(answer: unknown, documentVersion: number): InlineEdit | undefined {
  const edits = (answer as { edits?: unknown } | null | undefined)?.edits;
  const first: unknown = Array.isArray(edits) ? edits[0] : undefined;
  if (!isInlineEdit(first) || first.textDocument.version !== documentVersion) {
    return undefined;
  }
  return first;
}

/** How an edit is drawn: the replaced text struck through, the new text after it. */
export interface Presentation {
  /** Whether the range covers text to strike through (false for a pure insertion). */
  strikeThrough: boolean;
  /** The inline text after the range, or undefined for a pure deletion. */
  inlineText: string | undefined;
  /** The whole new text for the hover, when the inline text shows only its first line. */
  hoverText: string | undefined;
}

const LINE_BREAK = /\r\n|\r|\n/;
const ELLIPSIS = "…";

function isEmpty(range: Range): boolean {
  return range.start.line === range.end.line && range.start.character === range.end.character;
}

/**
 * An inline decoration holds one line, so multi-line new text shows its first line and an
 * ellipsis, with all of it in the hover. Tabs become spaces: the decoration's CSS content
 * would draw a tab as a single narrow space.
 */
export function presentation(edit: Pick<InlineEdit, "text" | "range">, tabSize = 4): Presentation {
  const lines = edit.text.split(LINE_BREAK);
  const firstLine = lines[0]!.replace(/\t/g, " ".repeat(tabSize));
  const multiLine = lines.length > 1;
  return {
    strikeThrough: !isEmpty(edit.range),
    inlineText: edit.text === "" ? undefined : multiLine ? `${firstLine}${ELLIPSIS}` : firstLine,
    hoverText: multiLine ? edit.text : undefined,
  };
}

/** Tab applies the edit when the cursor is on one of its lines, and jumps to it otherwise. */
export function cursorIsOnEdit(cursorLine: number, range: Range): boolean {
  return range.start.line <= cursorLine && cursorLine <= range.end.line;
}

/** Where the cursor goes after applying: the end of the inserted text, which starts at `start`. */
export function endOfInsertion(start: Position, text: string): Position {
  const lines = text.split(LINE_BREAK);
  const last = lines[lines.length - 1]!;
  return lines.length === 1
    ? { line: start.line, character: start.character + last.length }
    : { line: start.line + lines.length - 1, character: last.length };
}

/**
 * The diagnostics the server hears about: everyone's but its own (its review findings), which
 * it already knows and must not "fix" by predicting edits for them.
 */
export function foreignDiagnostics<D extends { source?: string | undefined }>(
  diagnostics: readonly D[],
  ownSource: string,
): D[] {
  return diagnostics.filter((diagnostic) => diagnostic.source !== ownSource);
}
