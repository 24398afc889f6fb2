import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openStore } from "../../src/client/open.js";
import { collect, runCli, startCli, watching } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";
import { initChannels } from "../mcp/client.js";

/*
 * A woken `wait` (and `hook wait`) hands the message over first and writes its records after:
 * a process that dies between its output and those records has delivered the message, and the
 * next read or wait delivers it again (at least once, docs/guarantees.md), never loses it.
 */

const DIE = fileURLToPath(new URL("./workers/die-after-output.cjs", import.meta.url));
let root: string;
let state: string;
const cleanups: Array<() => void> = [];

beforeEach(async () => {
  const r = tempDir("agent-chat-handover-");
  const s = tempDir("agent-chat-handover-state-");
  root = r.dir;
  state = s.dir;
  cleanups.push(r.cleanup, s.cleanup);
  await initChannels(root, { review: ["alice", "bob"] });
});
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

async function post(body: string): Promise<number> {
  const store = await openStore(root, { watch: false });
  const { seq } = await store.post("review", { from: "alice", to: "bob", body });
  await store.close();
  return seq;
}

/** Runs the CLI killed right after its first write to `fd`: a crash after its output. */
function dyingAfterOutput(args: string[], fd: 1 | 2, input?: string) {
  const options = (process.env.NODE_OPTIONS ?? "").trim();
  return startCli(args, {
    root,
    env: {
      XDG_STATE_HOME: state,
      NODE_OPTIONS: `${options} --require ${JSON.stringify(DIE)}`.trim(),
      DIE_AFTER_OUTPUT_FD: String(fd),
    },
    ...(input === undefined ? {} : { input }),
    timeoutMs: 30_000,
  });
}

describe("a woken wait hands the message over first", () => {
  it("a wait killed right after printing the message leaves its cursor: the next read shows it again", async () => {
    const waiter = dyingAfterOutput(["wait", "review", "--as", "bob", "--timeout", "60"], 1);
    await watching(waiter);
    await post("deploy when ready");
    const woken = await collect(waiter);
    expect(woken.signal).toBe("SIGKILL");
    expect(woken.stdout).toContain("deploy when ready");
    const again = await runCli(["read", "review", "--as", "bob"], { root });
    expect(again.code).toBe(0);
    expect(again.stdout).toContain("deploy when ready");
  });

  it("a wait that lives on writes its cursor after the output, and exits by itself", async () => {
    const waiter = startCli(["wait", "review", "--as", "bob", "--timeout", "60"], {
      root,
      timeoutMs: 30_000,
    });
    await watching(waiter);
    const seq = await post("once only");
    const woken = await collect(waiter);
    expect(woken).toMatchObject({ code: 0, signal: null });
    expect(woken.stdout).toContain("once only");
    const store = await openStore(root, { watch: false });
    expect(await store.cursor("review", "bob")).toBe(seq);
    await store.close();
    const again = await runCli(["read", "review", "--as", "bob"], { root });
    expect(again.stdout).not.toContain("once only");
  });

  it("a hook wait killed right after its notice tells the session again at its next wait", async () => {
    const input = JSON.stringify({ session_id: "s1", hook_event_name: "Stop" });
    const args = ["hook", "wait", "--as", "bob", "--timeout", "60"];
    const waiter = dyingAfterOutput(args, 2, input);
    await watching(waiter);
    const seq = await post("look at this");
    const woken = await collect(waiter);
    expect(woken.signal).toBe("SIGKILL");
    expect(woken.stderr).toContain(`review #${seq} from alice`);
    // Not recorded as told: the session's next wait tells of it at once, rather than parking.
    const next = await runCli([...args.slice(0, -1), "5"], {
      root,
      input,
      env: { XDG_STATE_HOME: state },
      timeoutMs: 30_000,
    });
    expect(next.code).toBe(2);
    expect(next.stderr).toContain(`review #${seq} from alice`);
  });
});

describe("the store's side: onAnswer", () => {
  it("on a folder, hears the answer before the cursor is saved", async () => {
    const store = await openStore(root);
    const seq = await post("first");
    const seen: number[] = [];
    const result = await store.wait(["review"], {
      as: "bob",
      timeoutMs: 10_000,
      onAnswer: (answer) => {
        seen.push(answer.messages.length);
        // What a crash here would leave: the cursor where it was.
        seen.push(readCursorFile());
      },
    });
    expect(seen).toEqual([1, 0]);
    expect(result.messages.map((m) => m.seq)).toEqual([seq]);
    expect(readCursorFile()).toBe(seq);
    await store.close();
  });
});

function readCursorFile(): number {
  try {
    return Number(readFileSync(join(root, "review", ".cursors", "bob.txt"), "utf8"));
  } catch {
    return 0;
  }
}
