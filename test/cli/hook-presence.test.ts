import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openStore } from "../../src/client/open.js";
import type { PresenceInfo } from "../../src/store/types.js";
import { runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";

let tmp: ReturnType<typeof tempDir>;
let state: ReturnType<typeof tempDir>;
const env = () => ({
  AGENT_CHAT_DAEMON: "off",
  AGENT_CHAT_HARNESS: undefined,
  CLAUDECODE: undefined,
  COPILOT_CLI: undefined,
  XDG_STATE_HOME: state.dir,
});

beforeEach(async () => {
  tmp = tempDir();
  state = tempDir();
  const store = await openStore(tmp.dir, { recordPresence: false });
  await store.init("review", { members: ["alice", "bob"] });
  await store.close();
});

afterEach(() => {
  tmp.cleanup();
  state.cleanup();
});

async function bob(): Promise<PresenceInfo | undefined> {
  const store = await openStore(tmp.dir, { watch: false, recordPresence: false });
  try {
    return (await store.who("review")).find((p) => p.agent === "bob");
  } finally {
    await store.close();
  }
}

/** Every hook run is the agent's activity (issue 17, part 3), not only one that tells of news. */
describe("a hook run records presence", () => {
  it("with nothing unread: silent, exit 0, and the agent is active in the hook's harness", async () => {
    expect((await bob())?.state).toBe("never-seen");
    const r = await runCli(["hook", "prompt", "--as", "bob", "--format", "codex"], {
      root: tmp.dir,
      env: env(),
    });
    expect(r).toMatchObject({ code: 0, stdout: "", stderr: "" });
    expect(await bob()).toMatchObject({ state: "active", harness: "codex" });
  });
});

describe("presence names the harness a command runs in", () => {
  it("GitHub Copilot CLI: what it starts (COPILOT_CLI=1 in their environment) is recorded as copilot", async () => {
    const r = await runCli(["read", "review", "--as", "bob"], {
      root: tmp.dir,
      env: { ...env(), COPILOT_CLI: "1" },
    });
    expect(r.code, r.stderr).toBe(0);
    expect(await bob()).toMatchObject({ state: "active", harness: "copilot" });
  });
});
