/** The single argument of the server's `lspSpark.editWithInstruction` command. */

export interface Position {
  line: number;
  character: number;
}

export interface Range {
  start: Position;
  end: Position;
}

export interface EditArgument {
  uri: string;
  range: Range;
  instruction: string;
}

function before(a: Position, b: Position): boolean {
  return a.line < b.line || (a.line === b.line && a.character < b.character);
}

function plain(position: Position): Position {
  return { line: position.line, character: position.character };
}

/** Message for the input box while the instruction is blank, undefined once it is usable. */
export function validateInstruction(text: string): string | undefined {
  return text.trim() === "" ? "Describe the change, e.g. \"add error handling\"." : undefined;
}

/**
 * `{uri, range, instruction}` for a selection given as anchor and cursor (either order; equal
 * positions are the cursor as an empty range), or undefined when the input box was cancelled
 * or left blank, so that nothing is sent.
 */
export function buildEditArgument(
  uri: string,
  anchor: Position,
  active: Position,
  instruction: string | undefined,
): EditArgument | undefined {
  const text = instruction?.trim();
  if (!text) {
    return undefined;
  }
  const [start, end] = before(active, anchor) ? [active, anchor] : [anchor, active];
  return { uri, range: { start: plain(start), end: plain(end) }, instruction: text };
}
