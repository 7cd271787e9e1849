/** VS Code glue: start `lsp-spark serve`, forward settings, commands, next edits and the status bar item. */

import * as vscode from "vscode";
import {
  CancellationToken,
  type ClientCapabilities,
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  type LanguageClientOptions,
  type ServerCapabilities,
  type ServerOptions,
  State,
  type StaticFeature,
  TransportKind,
} from "vscode-languageclient/node";

import { buildEditArgument, validateInstruction } from "./edit";
import { NextEdits } from "./nextEdit";
import {
  DEFAULT_SERVER_COMMAND,
  DOCUMENT_SCHEMES,
  EDIT_COMMAND,
  SECTION,
  SERVER_ARGS,
  SHOW_STATS_COMMAND,
  STATS_PARAMS,
  STATS_REQUEST,
  TOGGLE_COMMAND,
  withoutClientCommandRegistration,
  withoutClientCommands,
} from "./protocol";
import { findExecutable } from "./serverPath";
import { declaredKeys, explicitSettings, serverSettings, toggledEnable } from "./settings";
import { type ClientState, formatStatsReport, formatStatus, parseStats, type Stats } from "./status";
import { Throttle } from "./throttle";

const STATUS_REFRESH_MS = 1000;

/**
 * Every `lspSpark.*` key the user has set, declared in package.json or not, without defaults.
 * This replaces `synchronize.configurationSection`, which would send VS Code's defaults for
 * every declared key (and serverPath) and so override the server's config file and environment,
 * CEREBRAS_API_KEY included.
 */
function userSettings(declared: readonly string[]): Record<string, unknown> {
  const config = vscode.workspace.getConfiguration(SECTION);
  const present = Object.keys(config).filter(
    (key) => typeof (config as unknown as Record<string, unknown>)[key] !== "function",
  );
  return explicitSettings(new Set([...declared, ...present]), (key) => config.inspect(key));
}

/** Drops our own command names from the server's static list before the client registers it. */
class ClientCommandsFeature implements StaticFeature {
  fillClientCapabilities(): void {}

  preInitialize(capabilities: ServerCapabilities): void {
    const provider = capabilities.executeCommandProvider;
    if (provider !== undefined) {
      provider.commands = withoutClientCommands(provider.commands) ?? [];
    }
  }

  initialize(): void {}

  getState(): { kind: "static" } {
    return { kind: "static" };
  }

  clear(): void {}
}

/**
 * Tells the server that VS Code already waits after keystrokes (50 ms) and cancels stale
 * inline completion requests, so the server does not wait a second time.
 */
class DebounceDeclaration implements StaticFeature {
  fillClientCapabilities(capabilities: ClientCapabilities): void {
    capabilities.experimental = {
      ...(capabilities.experimental as Record<string, unknown> | undefined),
      lspSpark: { debouncesInlineCompletion: true },
    };
  }

  initialize(): void {}

  getState(): { kind: "static" } {
    return { kind: "static" };
  }

  clear(): void {}
}

class Spark implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private state: ClientState = "starting";
  private stats: Stats | undefined;
  private readonly statusItem = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);
  private readonly statsChannel = vscode.window.createOutputChannel("lsp-spark stats");
  private readonly refresher = new Throttle(
    () => void this.refreshStats(),
    STATUS_REFRESH_MS,
    () => vscode.window.state.focused,
  );
  private readonly nextEdits = new NextEdits(() => this.running());

  constructor(private readonly declared: readonly string[]) {
    this.statusItem.command = SHOW_STATS_COMMAND;
    this.render();
    this.statusItem.show();
  }

  async start(): Promise<void> {
    this.setState("starting");
    const configured = vscode.workspace.getConfiguration(SECTION).inspect<string>("serverPath")?.globalValue;
    const requested = configured?.trim() || DEFAULT_SERVER_COMMAND;
    const command = findExecutable(requested, {
      baseDir: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath,
    });
    if (command === undefined) {
      this.setState("failed");
      void this.reportMissingServer(requested);
      return;
    }
    const serverOptions: ServerOptions = {
      command,
      args: [...SERVER_ARGS],
      transport: TransportKind.stdio,
    };
    const initial = this.forwardedSettings();
    const clientOptions: LanguageClientOptions = {
      documentSelector: DOCUMENT_SCHEMES.map((scheme) => ({ scheme })),
      initializationOptions: initial,
      outputChannelName: "lsp-spark",
      middleware: {
        provideInlineCompletionItems: async (document, position, context, token, next) => {
          const result = await next(document, position, context, token);
          this.refresher.poke();
          return result;
        },
        handleRegisterCapability: async (params, next) => {
          const registrations = params.registrations.map(withoutClientCommandRegistration);
          await next({ registrations }, CancellationToken.None);
        },
        workspace: {
          configuration: async (params, token, next) => {
            const answers = await next(params, token);
            if (!Array.isArray(answers)) {
              return answers;
            }
            return params.items.map((item, index) =>
              item.section === SECTION ? this.forwardedSettings() : answers[index],
            );
          },
        },
      },
    };
    const client = new LanguageClient("lspSpark", "lsp-spark", serverOptions, clientOptions);
    // vscode-languageclient 10.x registers InlineCompletionItemFeature among its built-in features (9.x only via ProposedFeatures.createAll), so registerProposedFeatures() is not needed.
    client.registerFeature(new ClientCommandsFeature());
    client.registerFeature(new DebounceDeclaration());
    client.onDidChangeState((event) => {
      if (event.newState === State.Running) {
        this.setState("running");
        if (JSON.stringify(this.forwardedSettings()) !== JSON.stringify(initial)) {
          this.pushSettings(client);
        }
        this.refresher.poke();
        this.nextEdits.onServerStarted();
      } else if (this.client === client) {
        this.setState(event.newState === State.Starting ? "starting" : "stopped");
      }
    });
    this.client = client;
    try {
      await client.start();
    } catch (error) {
      this.setState("failed");
      client.error("lsp-spark could not start", error, false);
    }
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client !== undefined && client.state !== State.Stopped) {
      await client.stop();
    }
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  onConfigurationChanged(event: vscode.ConfigurationChangeEvent): void {
    if (!event.affectsConfiguration(SECTION)) {
      return;
    }
    if (event.affectsConfiguration(`${SECTION}.serverPath`)) {
      void this.restart();
      return;
    }
    this.render();
    const client = this.running();
    if (client !== undefined) {
      this.pushSettings(client);
    }
  }

  /** Settings changed after start reach the server as `workspace/didChangeConfiguration`. */
  private pushSettings(client: LanguageClient): void {
    void client
      .sendNotification(DidChangeConfigurationNotification.type, {
        settings: { [SECTION]: this.forwardedSettings() },
      })
      .then(() => this.refresher.poke());
  }

  onWindowStateChanged(state: vscode.WindowState): void {
    if (state.focused) {
      this.refresher.resume();
    }
  }

  async showStats(): Promise<void> {
    const client = this.running();
    if (client === undefined) {
      void vscode.window.showWarningMessage("lsp-spark: the server is not running.");
      return;
    }
    const stats = await this.fetchStats(client);
    if (stats === undefined) {
      return;
    }
    this.statsChannel.clear();
    this.statsChannel.appendLine(formatStatsReport(stats));
    this.statsChannel.show(true);
  }

  async toggle(): Promise<void> {
    const config = vscode.workspace.getConfiguration(SECTION);
    const { value, target } = toggledEnable(config.inspect<boolean>("enable"));
    await config.update(
      "enable",
      value,
      target === "workspace" ? vscode.ConfigurationTarget.Workspace : vscode.ConfigurationTarget.Global,
    );
  }

  async editWithInstruction(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    if (editor === undefined) {
      void vscode.window.showInformationMessage("lsp-spark: open a file to edit it with an instruction.");
      return;
    }
    if (this.running() === undefined) {
      void vscode.window.showWarningMessage("lsp-spark: the server is not running.");
      return;
    }
    const instruction = await vscode.window.showInputBox({
      title: "lsp-spark: Edit with instruction",
      prompt: "What should change in the selection (or at the cursor)?",
      placeHolder: "add error handling",
      validateInput: validateInstruction,
      ignoreFocusOut: true,
    });
    const client = this.running();
    if (client === undefined) {
      return;
    }
    const argument = buildEditArgument(
      client.code2ProtocolConverter.asUri(editor.document.uri),
      editor.selection.anchor,
      editor.selection.active,
      instruction,
    );
    if (argument === undefined) {
      return;
    }
    await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: "lsp-spark: editing…" },
      async () => {
        try {
          await client.sendRequest(ExecuteCommandRequest.type, { command: EDIT_COMMAND, arguments: [argument] });
        } catch (error) {
          void vscode.window.showErrorMessage(`lsp-spark: the edit failed: ${describe(error)}`);
        }
      },
    );
  }

  dispose(): void {
    this.nextEdits.dispose();
    this.refresher.dispose();
    this.statusItem.dispose();
    this.statsChannel.dispose();
  }

  private forwardedSettings(): Record<string, unknown> {
    return serverSettings(userSettings(this.declared));
  }

  private running(): LanguageClient | undefined {
    return this.client?.state === State.Running ? this.client : undefined;
  }

  private async refreshStats(): Promise<void> {
    const client = this.running();
    if (client !== undefined) {
      await this.fetchStats(client);
    }
  }

  private async fetchStats(client: LanguageClient): Promise<Stats | undefined> {
    try {
      this.stats = parseStats(await client.sendRequest(STATS_REQUEST, STATS_PARAMS));
      this.render();
      return this.stats;
    } catch (error) {
      client.warn(`${STATS_REQUEST} failed: ${describe(error)}`);
      return undefined;
    }
  }

  private setState(state: ClientState): void {
    this.state = state;
    this.render();
  }

  private render(): void {
    const enabled = vscode.workspace.getConfiguration(SECTION).get<boolean>("enable", true);
    const view = formatStatus(this.state, enabled, this.stats);
    this.statusItem.text = view.text;
    this.statusItem.tooltip = view.tooltip;
  }

  private async reportMissingServer(requested: string): Promise<void> {
    const choice = await vscode.window.showErrorMessage(
      `lsp-spark: cannot find the server executable "${requested}". ` +
        "Install it (pip install lsp-spark) or set lspSpark.serverPath to its full path.",
      "Open Settings",
    );
    if (choice === "Open Settings") {
      await vscode.commands.executeCommand("workbench.action.openSettings", `${SECTION}.serverPath`);
    }
  }
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

let spark: Spark | undefined;

export function activate(context: vscode.ExtensionContext): void {
  const current = new Spark(declaredKeys(context.extension.packageJSON));
  spark = current;
  context.subscriptions.push(
    current,
    vscode.commands.registerCommand(EDIT_COMMAND, () => current.editWithInstruction()),
    vscode.commands.registerCommand(TOGGLE_COMMAND, () => current.toggle()),
    vscode.commands.registerCommand(SHOW_STATS_COMMAND, () => current.showStats()),
    vscode.workspace.onDidChangeConfiguration((event) => current.onConfigurationChanged(event)),
    vscode.window.onDidChangeWindowState((state) => current.onWindowStateChanged(state)),
  );
  void current.start();
}

export async function deactivate(): Promise<void> {
  await spark?.stop();
  spark = undefined;
}
