/** Names shared with the lsp-spark server; kept apart so tests can use them without VS Code. */

export const SECTION = "lspSpark";
export const STATS_REQUEST = "lspSpark/stats";
/**
 * The stats request takes no parameters, but pygls drops a request whose `params` member is
 * absent (as vscode-jsonrpc sends it) without answering, so an empty object is sent instead.
 */
export const STATS_PARAMS = {};
export const EDIT_COMMAND = "lspSpark.editWithInstruction";
export const TOGGLE_COMMAND = "lspSpark.toggle";
export const SHOW_STATS_COMMAND = "lspSpark.showStats";
export const NEXT_EDIT_JUMP_OR_APPLY_COMMAND = "lspSpark.nextEdit.jumpOrApply";
export const NEXT_EDIT_DISMISS_COMMAND = "lspSpark.nextEdit.dismiss";
/** The context key the Tab and Escape keybindings of package.json depend on. */
export const NEXT_EDIT_VISIBLE_CONTEXT = "lspSpark.nextEditVisible";
export const INLINE_EDIT_REQUEST = "textDocument/copilotInlineEdit";
export const DID_SHOW_INLINE_EDIT_NOTIFICATION = "textDocument/didShowInlineEdit";
export const DIAGNOSTICS_NOTIFICATION = "lspSpark/diagnostics";
/** The `source` of the server's own diagnostics (its review findings). */
export const OWN_DIAGNOSTIC_SOURCE = "lsp-spark";
/** The URI schemes of the documents the server is given (the client's document selector). */
export const DOCUMENT_SCHEMES: readonly string[] = ["file", "untitled"];
export const DEFAULT_SERVER_COMMAND = "lsp-spark";
export const SERVER_ARGS: readonly string[] = ["serve"];

/** Commands this extension registers itself in VS Code, whatever the server advertises. */
export const CLIENT_COMMANDS: ReadonlySet<string> = new Set([
  EDIT_COMMAND,
  TOGGLE_COMMAND,
  SHOW_STATS_COMMAND,
  NEXT_EDIT_JUMP_OR_APPLY_COMMAND,
  NEXT_EDIT_DISMISS_COMMAND,
]);

/**
 * The server's executeCommand list minus the commands we register ourselves: the language
 * client registers a VS Code command for every advertised name, and a second registration of
 * `lspSpark.editWithInstruction` would throw and stop the client from starting.
 */
export function withoutClientCommands(commands: readonly string[] | undefined): string[] | undefined {
  return commands?.filter((command) => !CLIENT_COMMANDS.has(command));
}

const EXECUTE_COMMAND_METHOD = "workspace/executeCommand";

interface Registration {
  id: string;
  method: string;
  registerOptions?: unknown;
}

/** The same filter for a dynamic `client/registerCapability` of workspace/executeCommand. */
export function withoutClientCommandRegistration<R extends Registration>(registration: R): R {
  const options = registration.registerOptions as { commands?: string[] } | undefined;
  if (registration.method !== EXECUTE_COMMAND_METHOD || options === undefined) {
    return registration;
  }
  return { ...registration, registerOptions: { ...options, commands: withoutClientCommands(options.commands) ?? [] } };
}
