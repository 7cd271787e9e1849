/** Finding the server executable before starting it, so a missing one gets a clear message. */

import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

function isExecutableFile(candidate: string, platform: NodeJS.Platform): boolean {
  try {
    if (!fs.statSync(candidate).isFile()) {
      return false;
    }
    fs.accessSync(candidate, platform === "win32" ? fs.constants.F_OK : fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function expandHome(command: string): string {
  return command === "~" || command.startsWith("~/") ? path.join(os.homedir(), command.slice(1)) : command;
}

export interface FindOptions {
  env?: NodeJS.ProcessEnv;
  platform?: NodeJS.Platform;
  /** Where a relative path such as `.venv/bin/lsp-spark` is looked up (the first workspace folder). */
  baseDir?: string;
}

/**
 * The absolute path of `command`: a path (absolute, `~/…`, or relative to baseDir) is checked
 * as it is; a bare name is searched on PATH (with PATHEXT on Windows). Undefined if not found.
 */
export function findExecutable(command: string, options: FindOptions = {}): string | undefined {
  const env = options.env ?? process.env;
  const platform = options.platform ?? process.platform;
  const expanded = expandHome(command.trim());
  if (expanded === "") {
    return undefined;
  }
  const extensions =
    platform === "win32" ? ["", ...(env.PATHEXT ?? ".EXE;.CMD;.BAT;.COM").split(";").filter(Boolean)] : [""];
  const withExtensions = (base: string): string | undefined =>
    extensions.map((extension) => base + extension).find((file) => isExecutableFile(file, platform));

  if (expanded.includes("/") || (platform === "win32" && expanded.includes("\\"))) {
    const absolute = path.isAbsolute(expanded)
      ? expanded
      : options.baseDir !== undefined
        ? path.resolve(options.baseDir, expanded)
        : undefined;
    return absolute === undefined ? undefined : withExtensions(absolute);
  }
  for (const directory of (env.PATH ?? env.Path ?? "").split(path.delimiter)) {
    if (directory !== "") {
      const found = withExtensions(path.join(directory, expanded));
      if (found !== undefined) {
        return found;
      }
    }
  }
  return undefined;
}
