/** Which `lspSpark.*` values reach the server, and where the toggle writes. */

/** Read by the extension itself; the server would reject it as an unknown setting. */
export const CLIENT_ONLY_KEYS: ReadonlySet<string> = new Set(["serverPath"]);

/**
 * A workspace must not redirect the user's API key to another host, run another binary or
 * model file, or let more of the user's files and secrets leave the machine. The manifest
 * declares each at machine scope; this also covers a workspace file VS Code would not stop.
 */
export const USER_ONLY_KEYS: ReadonlySet<string> = new Set([
  "serverPath",
  "baseUrl",
  "apiKey",
  "backend",
  "exclude",
  "defaultExcludes",
  "redactSecrets",
  "localModelPath",
]);

/** The part of VS Code's `WorkspaceConfiguration.inspect()` result that says who set a value. */
export interface Inspected {
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

/**
 * The value the user set for `key`, most specific scope first, or undefined when only the
 * default applies. Defaults are never sent: they would override the server's own layers
 * (config file, CEREBRAS_API_KEY and LSP_SPARK_* in the environment).
 */
export function explicitValue(key: string, inspected: Inspected | undefined): unknown {
  if (inspected === undefined) {
    return undefined;
  }
  const scopes = USER_ONLY_KEYS.has(key)
    ? [inspected.globalValue]
    : [inspected.workspaceFolderValue, inspected.workspaceValue, inspected.globalValue];
  return scopes.find((value) => value !== undefined);
}

/** The flat `{key: value}` object of every explicitly set key, as the settings UI left it. */
export function explicitSettings(
  keys: Iterable<string>,
  inspect: (key: string) => Inspected | undefined,
): Record<string, unknown> {
  const settings: Record<string, unknown> = {};
  for (const key of keys) {
    const value = explicitValue(key, inspect(key));
    if (value !== undefined) {
      settings[key] = value;
    }
  }
  return settings;
}

function isUnset(value: unknown): boolean {
  return value === undefined || value === null || (typeof value === "string" && value.trim() === "");
}

/**
 * What the server gets as `initializationOptions` and inside `didChangeConfiguration`:
 * client-only keys and unset values (null, "" left behind by the settings UI) are dropped.
 */
export function serverSettings(settings: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const forwarded: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(settings)) {
    if (!CLIENT_ONLY_KEYS.has(key) && !isUnset(value)) {
      forwarded[key] = typeof value === "string" ? value.trim() : value;
    }
  }
  return forwarded;
}

export type ToggleTarget = "global" | "workspace";

/**
 * The new `enable` value and where to write it: user settings, unless the workspace pins the
 * value, in which case writing globally would change nothing the user could see.
 */
export function toggledEnable(
  inspected: (Inspected & { defaultValue?: unknown }) | undefined,
): { value: boolean; target: ToggleTarget } {
  const workspace = inspected?.workspaceValue;
  const current = [workspace, inspected?.globalValue, inspected?.defaultValue].find(
    (value) => typeof value === "boolean",
  );
  return {
    value: current === false,
    target: typeof workspace === "boolean" ? "workspace" : "global",
  };
}

/** The setting names an extension manifest declares under `section`, without the prefix. */
export function declaredKeys(packageJSON: unknown, section = "lspSpark"): string[] {
  const manifest = packageJSON as { contributes?: { configuration?: { properties?: object } } } | undefined;
  return Object.keys(manifest?.contributes?.configuration?.properties ?? {})
    .filter((key) => key.startsWith(`${section}.`))
    .map((key) => key.slice(section.length + 1));
}
