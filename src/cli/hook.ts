import { openStore } from "../client/open.js";
import {
  detectFormat,
  HOOK_EVENTS,
  HOOK_FORMATS,
  type HookEvent,
  type HookFormat,
  hookOutput,
  parseHookInput,
} from "../mcp/hook.js";
import { countUnread } from "../mcp/unread.js";
import { oneOf, UsageError } from "./usage.js";

/** How long a hook waits for its host's JSON on stdin, and how much of it it reads. */
const HOOK_STDIN_MS = 250;
const HOOK_STDIN_MAX = 1024 * 1024;

/** The hook command as given on the command line (checked by `runHook`). */
export interface HookArgs {
  event: string;
  as?: string | undefined;
  format?: string | undefined;
  block?: boolean | undefined;
}

/** What a hook needs from its process: the root, the environment and the two outputs. */
export interface HookIo {
  readonly root: string;
  readonly env: NodeJS.ProcessEnv;
  out(text: string): void;
  err(text: string): void;
}

/**
 * `agent-chat hook EVENT`: prints the unread notice in the host tool's form, or nothing when
 * nothing is unread. It never throws and never moves a cursor: a hook must not break the tool
 * that runs it, so a problem is said on stderr and the process still exits 0.
 */
export async function runHook(args: HookArgs, io: HookIo): Promise<void> {
  try {
    const input = parseHookInput(await readHookStdin());
    const agent = args.as ?? io.env.AGENT_CHAT_NAME;
    if (!agent) throw new UsageError("--as NAME is required (or set AGENT_CHAT_NAME)");
    const format = args.format ? oneOf(args.format, HOOK_FORMATS, "--format") : detectFormat(input);
    const event = oneOf(args.event, HOOK_EVENTS, "event") as HookEvent;
    // No file watch: a hook lives a few milliseconds, a watch would only cost set-up time.
    const store = await openStore(io.root, { watch: false });
    try {
      const count = await countUnread(store, agent);
      io.out(
        hookOutput({
          event,
          format: format as HookFormat,
          agent,
          count,
          input,
          block: args.block === true,
        }),
      );
    } finally {
      await store.close();
    }
  } catch (err) {
    io.err(`agent-chat hook: ${(err as Error).message}\n`);
  }
}

async function readHookStdin(): Promise<string> {
  if (process.stdin.isTTY) return "";
  return new Promise((resolveText) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = () => {
      clearTimeout(timer);
      process.stdin.off("data", onData);
      process.stdin.off("end", done);
      process.stdin.off("error", done);
      process.stdin.pause();
      resolveText(Buffer.concat(chunks).toString("utf8"));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > HOOK_STDIN_MAX) return done();
      chunks.push(chunk);
    };
    const timer = setTimeout(done, HOOK_STDIN_MS);
    process.stdin.on("data", onData);
    process.stdin.once("end", done);
    process.stdin.once("error", done);
  });
}
