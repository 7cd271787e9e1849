/**
 * Next-edit suggestions without VS Code's proposed inline-edit API (which a marketplace
 * extension cannot use): after each change in the active editor the server is asked
 * `textDocument/copilotInlineEdit`, and its first edit is drawn with decorations, the replaced
 * text struck through in red and the new text after it in green. Tab jumps to the edit, or
 * applies it when the cursor is on its line (and asks for the next one of the same
 * prediction); Escape dismisses it. The editor's diagnostics go to the server too, so its
 * predictions can fix them.
 */

import * as vscode from "vscode";
import { ErrorCodes, ExecuteCommandRequest, type LanguageClient, ResponseError } from "vscode-languageclient/node";

import {
  DIAGNOSTICS_NOTIFICATION,
  DID_SHOW_INLINE_EDIT_NOTIFICATION,
  DOCUMENT_SCHEMES,
  INLINE_EDIT_REQUEST,
  NEXT_EDIT_DISMISS_COMMAND,
  NEXT_EDIT_JUMP_OR_APPLY_COMMAND,
  NEXT_EDIT_VISIBLE_CONTEXT,
  OWN_DIAGNOSTIC_SOURCE,
} from "./protocol";
import { currentEdit, cursorIsOnEdit, endOfInsertion, foreignDiagnostics, type InlineEdit, presentation } from "./nextEditView";

/** As VS Code waits before asking for ghost text: a burst of keystrokes makes one request. */
const DEBOUNCE_MS = 50;

interface Shown {
  editor: vscode.TextEditor;
  edit: InlineEdit;
  range: vscode.Range;
}

export class NextEdits implements vscode.Disposable {
  private readonly removedText = vscode.window.createTextEditorDecorationType({
    backgroundColor: new vscode.ThemeColor("diffEditor.removedTextBackground"),
    textDecoration: "line-through",
    overviewRulerColor: new vscode.ThemeColor("editorOverviewRuler.deletedForeground"),
    overviewRulerLane: vscode.OverviewRulerLane.Center,
  });
  private readonly insertedText = vscode.window.createTextEditorDecorationType({
    after: {
      color: new vscode.ThemeColor("editorGutter.addedBackground"),
      backgroundColor: new vscode.ThemeColor("diffEditor.insertedTextBackground"),
    },
    rangeBehavior: vscode.DecorationRangeBehavior.ClosedClosed,
  });
  private readonly subscriptions: vscode.Disposable[];
  private timer: ReturnType<typeof setTimeout> | undefined;
  private pending: vscode.CancellationTokenSource | undefined;
  private shown: Shown | undefined;
  /** While our own WorkspaceEdit lands: its change event must not schedule a second request. */
  private applying = false;
  /** Servers that answered "method not found": an older lsp-spark without next edits. */
  private readonly unsupported = new WeakSet<LanguageClient>();
  /** What the server last heard per document, so a change of our own diagnostics sends nothing. */
  private sentDiagnostics = new Map<string, string>();
  private diagnosticsClient: LanguageClient | undefined;

  constructor(private readonly running: () => LanguageClient | undefined) {
    this.subscriptions = [
      vscode.workspace.onDidChangeTextDocument((event) => this.onDocumentChanged(event)),
      vscode.window.onDidChangeActiveTextEditor(() => this.hide()),
      vscode.languages.onDidChangeDiagnostics((event) => void this.forwardDiagnostics(event.uris)),
      vscode.workspace.onDidCloseTextDocument((document) => this.sentDiagnostics.delete(document.uri.toString())),
      vscode.commands.registerCommand(NEXT_EDIT_JUMP_OR_APPLY_COMMAND, () => this.jumpOrApply()),
      vscode.commands.registerCommand(NEXT_EDIT_DISMISS_COMMAND, () => this.hide()),
    ];
  }

  /** A (re)started server knows no diagnostics yet: it gets those of every open document. */
  onServerStarted(): void {
    void this.forwardDiagnostics(vscode.workspace.textDocuments.map((document) => document.uri));
  }

  dispose(): void {
    this.hide();
    for (const subscription of this.subscriptions) {
      subscription.dispose();
    }
    this.removedText.dispose();
    this.insertedText.dispose();
  }

  private onDocumentChanged(event: vscode.TextDocumentChangeEvent): void {
    if (event.contentChanges.length === 0) {
      return;
    }
    if (this.shown?.editor.document === event.document) {
      this.hide();
    }
    const editor = vscode.window.activeTextEditor;
    if (editor?.document !== event.document) {
      return;
    }
    this.cancel();
    if (!this.applying) {
      this.timer = setTimeout(() => void this.request(editor), DEBOUNCE_MS);
    }
  }

  private cancel(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.pending?.cancel();
    this.pending = undefined;
  }

  /** Asks for the edits at the cursor and shows the first, unless the document moved on meanwhile. */
  private async request(editor: vscode.TextEditor): Promise<void> {
    const client = this.running();
    if (client === undefined || this.unsupported.has(client) || vscode.window.activeTextEditor !== editor) {
      return;
    }
    this.cancel();
    const source = new vscode.CancellationTokenSource();
    this.pending = source;
    const document = editor.document;
    const version = document.version;
    const params = {
      textDocument: { uri: client.code2ProtocolConverter.asUri(document.uri), version },
      position: client.code2ProtocolConverter.asPosition(editor.selection.active),
    };
    let answer: unknown;
    let cancelled = false;
    try {
      answer = await client.sendRequest(INLINE_EDIT_REQUEST, params, source.token);
    } catch (error) {
      if (error instanceof ResponseError && error.code === ErrorCodes.MethodNotFound) {
        this.unsupported.add(client);
      } else if (!source.token.isCancellationRequested) {
        // In the output channel only: a background request must not pop up a notification.
        client.warn(`${INLINE_EDIT_REQUEST} failed: ${describe(error)}`, undefined, false);
      }
      return;
    } finally {
      cancelled = source.token.isCancellationRequested;
      if (this.pending === source) {
        this.pending = undefined;
      }
      source.dispose();
    }
    const edit = currentEdit(answer, document.version);
    if (cancelled || document.version !== version || edit === undefined || vscode.window.activeTextEditor !== editor) {
      return;
    }
    this.show(client, editor, edit);
  }

  private show(client: LanguageClient, editor: vscode.TextEditor, edit: InlineEdit): void {
    const range = client.protocol2CodeConverter.asRange(edit.range);
    const tabSize = typeof editor.options.tabSize === "number" ? editor.options.tabSize : undefined;
    const view = presentation(edit, tabSize);
    const hoverMessage =
      view.hoverText === undefined
        ? undefined
        : new vscode.MarkdownString().appendCodeblock(view.hoverText, editor.document.languageId);
    this.shown = { editor, edit, range };
    // The key first: once the decorations are on screen, Tab and Escape already reach us.
    void vscode.commands.executeCommand("setContext", NEXT_EDIT_VISIBLE_CONTEXT, true);
    editor.setDecorations(this.removedText, view.strikeThrough ? [{ range, hoverMessage }] : []);
    editor.setDecorations(
      this.insertedText,
      view.inlineText === undefined
        ? []
        : [
            {
              range: new vscode.Range(range.end, range.end),
              hoverMessage,
              renderOptions: { after: { contentText: view.inlineText } },
            },
          ],
    );
    void notify(client, DID_SHOW_INLINE_EDIT_NOTIFICATION, { item: edit });
  }

  /** Clears the edit on screen and forgets any request in flight (Escape, or the document moved on). */
  private hide(): void {
    this.cancel();
    const shown = this.shown;
    if (shown === undefined) {
      return;
    }
    this.shown = undefined;
    void vscode.commands.executeCommand("setContext", NEXT_EDIT_VISIBLE_CONTEXT, false);
    shown.editor.setDecorations(this.removedText, []);
    shown.editor.setDecorations(this.insertedText, []);
  }

  private async jumpOrApply(): Promise<void> {
    const shown = this.shown;
    const editor = vscode.window.activeTextEditor;
    if (shown === undefined || shown.editor !== editor) {
      this.hide();
      return;
    }
    if (cursorIsOnEdit(editor.selection.active.line, shown.range)) {
      await this.apply(shown);
      return;
    }
    editor.selection = new vscode.Selection(shown.range.start, shown.range.start);
    editor.revealRange(shown.range, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  }

  /**
   * Applies the edit, tells the server through the edit's own command (its acceptance), then
   * asks again at once: the server has the rest of the same prediction ready (the next use of
   * a renamed variable, say).
   */
  private async apply(shown: Shown): Promise<void> {
    this.hide();
    const { editor, edit, range } = shown;
    const workspaceEdit = new vscode.WorkspaceEdit();
    workspaceEdit.replace(editor.document.uri, range, edit.text);
    this.applying = true;
    let applied = false;
    try {
      applied = await vscode.workspace.applyEdit(workspaceEdit);
    } finally {
      this.applying = false;
    }
    if (!applied) {
      return;
    }
    const end = endOfInsertion(range.start, edit.text);
    const cursor = new vscode.Position(end.line, end.character);
    editor.selection = new vscode.Selection(cursor, cursor);
    const client = this.running();
    if (client === undefined) {
      return;
    }
    if (edit.command !== undefined) {
      try {
        await client.sendRequest(ExecuteCommandRequest.type, {
          command: edit.command.command,
          arguments: edit.command.arguments,
        });
      } catch (error) {
        client.warn(`${edit.command.command} failed: ${describe(error)}`, undefined, false);
      }
    }
    await this.request(editor);
  }

  /** Sends each open document's diagnostics, but lsp-spark's own, when they differ from the last sent. */
  private async forwardDiagnostics(uris: readonly vscode.Uri[]): Promise<void> {
    const client = this.running();
    if (client === undefined) {
      return;
    }
    if (this.diagnosticsClient !== client) {
      this.diagnosticsClient = client;
      this.sentDiagnostics = new Map();
    }
    const open = new Set(vscode.workspace.textDocuments.map((document) => document.uri.toString()));
    for (const uri of uris) {
      const key = uri.toString();
      if (!open.has(key) || !DOCUMENT_SCHEMES.includes(uri.scheme)) {
        continue;
      }
      const diagnostics = await client.code2ProtocolConverter.asDiagnostics(
        foreignDiagnostics(vscode.languages.getDiagnostics(uri), OWN_DIAGNOSTIC_SOURCE),
      );
      const serialized = JSON.stringify(diagnostics);
      if (this.sentDiagnostics.get(key) === serialized) {
        continue;
      }
      this.sentDiagnostics.set(key, serialized);
      await notify(client, DIAGNOSTICS_NOTIFICATION, { uri: client.code2ProtocolConverter.asUri(uri), diagnostics });
    }
  }
}

/** Sends a notification; a failure (the server stopping meanwhile) goes to the output channel. */
async function notify(client: LanguageClient, method: string, params: object): Promise<void> {
  try {
    await client.sendNotification(method, params);
  } catch (error) {
    client.warn(`${method} failed: ${describe(error)}`, undefined, false);
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
