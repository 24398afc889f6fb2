import { constants, promises as fsp } from "node:fs";
import { basename, delimiter, join } from "node:path";

/**
 * Two programs are called `agent-chat`: ours (npm) and the console script of the reference
 * chat.py 0.7 (PyPI `agent-chat-plugin`). Which one a bare `agent-chat` starts is the first on
 * PATH; hooks and MCP entries that name it bare start that one.
 */
export type CliKind = "ours" | "reference" | "other";

export interface CliOnPath {
  path: string;
  kind: CliKind;
}

/** What a program's first bytes say it is. */
const PEEK_BYTES = 4096;

/** Every `agent-chat` executable on `pathEnv`, in PATH order, and which program each is. */
export async function agentChatsOnPath(pathEnv: string | undefined): Promise<CliOnPath[]> {
  const out: CliOnPath[] = [];
  const seen = new Set<string>();
  for (const dir of (pathEnv ?? "").split(delimiter)) {
    if (dir === "") continue;
    const path = join(dir, "agent-chat");
    try {
      await fsp.access(path, constants.X_OK);
      const real = await fsp.realpath(path);
      if (seen.has(real)) continue;
      seen.add(real);
      out.push({ path, kind: await kindOf(real) });
    } catch {
      // Not there, or not ours to run.
    }
  }
  return out;
}

async function kindOf(real: string): Promise<CliKind> {
  const file = await fsp.open(real, "r");
  try {
    const { bytesRead, buffer } = await file.read(Buffer.alloc(PEEK_BYTES), 0, PEEK_BYTES, 0);
    const head = buffer.subarray(0, bytesRead).toString("utf8");
    const firstLine = head.split("\n", 1)[0] ?? "";
    if (/python/i.test(firstLine) || head.includes("from chat import main")) return "reference";
    if (basename(real) === "cli.cjs" || /\bnode\b/.test(firstLine)) return "ours";
    return "other";
  } finally {
    await file.close();
  }
}
