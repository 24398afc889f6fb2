import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";
import { initGoverned, referenceReply, startRequest, stderrContains } from "./helpers.js";

/**
 * The approval flow end to end across real processes: a requester blocks in `agent-chat
 * request`, the maintainer decides from another process with `agent-chat approve`.
 */

describe("governed requests across processes", () => {
  let root: string;
  let cleanup: () => void;
  const cli = (args: string[]) => runCli(args, { root });

  beforeEach(async () => {
    ({ dir: root, cleanup } = tempDir("agent-chat-gov-"));
    await initGoverned(root);
  });
  afterEach(() => cleanup());

  const request = (action: string, ...more: string[]) => startRequest(root, action, ...more);

  it("waits for the maintainer; a non-maintainer's approval is ignored and reported", async () => {
    const req = request("merge");
    await req.posted;
    const ignored = stderrContains(req.child, "ignored #2 'approved' from carol");
    await cli([
      "post",
      "review",
      "--from",
      "carol",
      "--reply",
      "1",
      "--status",
      "approved",
      "--body",
      "lgtm",
    ]);
    expect(await ignored).toContain("carol is not the maintainer (alice)");
    expect(req.child.exitCode).toBeNull(); // still waiting

    const approved = await cli(["approve", "review", "1", "--as", "alice", "--note", "ship it"]);
    expect(approved.code).toBe(0);
    expect(approved.stdout).toBe("approved #1 (merge: Do merge); posted #3\n");
    const started = Date.now();
    const result = await req.done;
    expect(result.code).toBe(0);
    expect(result.stdout).toBe("#1 (merge) approved by alice in #3: ship it\n");
    // The approve process has exited; the file watch (not the 60 s poll) woke the requester:
    // 20 s is far below the poll, and far above what a loaded machine adds.
    expect(Date.now() - started).toBeLessThan(20_000);

    // Waiting moved no cursor: bob still reads carol's note and alice's verdict.
    const read = JSON.parse((await cli(["--json", "read", "review", "--as", "bob"])).stdout);
    expect(read.messages.map((m: { seq: number; status: string }) => [m.seq, m.status])).toEqual([
      [2, "approved"],
      [3, "approved"],
    ]);
    // The request is decided: nothing pending, and a second verdict is refused.
    expect(JSON.parse((await cli(["--json", "pending", "review"])).stdout).pending).toEqual([]);
    const again = await cli(["approve", "review", "1", "--as", "alice", "--reject"]);
    expect(again.code).toBe(1);
    expect(
      JSON.parse((await cli(["--json", "approve", "review", "1", "--as", "alice"])).stdout).error
        .code,
    ).toBe("ALREADY_DECIDED");
    expect(again.stderr).toContain("request #1 was already approved by alice in #3");
  });

  it("a rejection ends the request with exit 4 and the maintainer's reason", async () => {
    const req = request("merge", "--json");
    await req.posted;
    const listed = JSON.parse((await cli(["--json", "pending", "review"])).stdout);
    expect(listed).toMatchObject({
      maintainer: "alice",
      pending: [{ seq: 1, action: "merge", band: "approval", from: "bob", title: "Do merge" }],
    });
    const rejected = await cli([
      "approve",
      "review",
      "1",
      "--as",
      "alice",
      "--reject",
      "--note",
      "not before 1.4",
    ]);
    expect(rejected.code).toBe(0);
    const result = await req.done;
    expect(result.code).toBe(4);
    expect(result.stderr).toContain(
      "request #1 (merge) was rejected by alice in #2: not before 1.4",
    );
    expect(JSON.parse(result.stdout).error.code).toBe("REJECTED");
  });

  it("only the maintainer can decide, and only requests", async () => {
    const req = request("merge", "--timeout", "120");
    await req.posted;
    const byBob = await cli(["--json", "approve", "review", "1", "--as", "carol"]);
    expect(byBob.code).toBe(1);
    expect(JSON.parse(byBob.stdout).error.code).toBe("NOT_MAINTAINER");
    expect(byBob.stderr).toContain("carol is not the maintainer of review (alice is)");
    await cli(["post", "review", "--from", "carol", "--body", "just chatting"]);
    const notRequest = await cli(["approve", "review", "2", "--as", "alice"]);
    expect(notRequest.stderr).toContain("#2 in review is not a request (its status is discussion");
    const both = await cli(["approve", "review", "1", "--as", "alice", "--reject", "--veto"]);
    expect(both.code).toBe(64);
    await cli(["approve", "review", "1", "--as", "alice"]);
    expect((await req.done).code).toBe(0);
  });

  it("a name that only shares the maintainer's cursor key never decides", async () => {
    const req = request("merge", "--timeout", "120");
    await req.posted;
    const approve = await cli(["--json", "approve", "review", "1", "--as", "alice."]);
    expect(approve.code).toBe(1);
    expect(JSON.parse(approve.stdout).error.code).toBe("NOT_MAINTAINER");
    const post = await cli(
      ["--json", "post", "review", "--from", "alice.", "--reply", "1"].concat([
        "--status",
        "approved",
        "--body",
        "lgtm",
      ]),
    );
    expect(post.code).toBe(1);
    expect(JSON.parse(post.stdout).error.code).toBe("NOT_A_MEMBER");
    expect(post.stderr).toContain("the name collides with alice, its maintainer");
    // chat.py takes any sender: its `alice.` verdict is ignored and reported, not obeyed.
    await referenceReply(join(root, "review"), {
      from: "alice.",
      to: "bob",
      replyTo: 1,
      status: "approved",
      body: "lookalike",
    });
    await stderrContains(req.child, "forged (the sender's name reads as alice's but is another)");
    await cli(["approve", "review", "1", "--as", "alice", "--reject"]);
    expect((await req.done).code).toBe(4);
  });

  it("a verdict the reference chat.py wrote counts like ours", async () => {
    const req = request("merge");
    await req.posted;
    await referenceReply(join(root, "review"), {
      from: "alice",
      to: "bob",
      replyTo: 1,
      status: "approved",
      body: "approved from chat.py",
    });
    const result = await req.done;
    expect(result.code).toBe(0);
    expect(result.stdout).toBe("#1 (merge) approved by alice in #2: approved from chat.py\n");
  });
});
