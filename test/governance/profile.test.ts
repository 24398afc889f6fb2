import { describe, expect, it } from "vitest";
import { AgentChatError } from "../../src/core/errors.js";
import type { Message } from "../../src/core/message.js";
import { type ChannelMeta, serializeMeta } from "../../src/core/meta.js";
import {
  changeProfile,
  type GovernanceRequest,
  governanceOf,
  judgeReply,
  lookupBand,
  openRequests,
  parseBandAssignment,
  withProfile,
} from "../../src/features/governance/rules.js";

const base: ChannelMeta = {
  channel: "review",
  members: ["alice", "bob"],
  topic: "t",
  created: "2026-07-17T14:03:22+07:00",
};

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AgentChatError);
    return `${(err as AgentChatError).code}: ${(err as Error).message}`;
  }
  throw new Error("expected an error");
}

describe("band assignments", () => {
  it("parses ACTION=BAND, lower-casing both", () => {
    expect(parseBandAssignment("merge=approval")).toEqual(["merge", "approval"]);
    expect(parseBandAssignment("Deploy=APPROVAL")).toEqual(["deploy", "approval"]);
    expect(parseBandAssignment("*=auto")).toEqual(["*", "auto"]);
  });

  it.each([
    [
      "merge=aproval",
      'INVALID_ARGUMENT: invalid band "aproval" for action merge: use auto, notify, approval',
    ],
    ["merge", "INVALID_ARGUMENT: --band wants ACTION=BAND"],
    ["=auto", "INVALID_ARGUMENT: action name is empty"],
    ["rm -rf=auto", 'INVALID_ARGUMENT: invalid action name "rm -rf"'],
    ["merge=", 'INVALID_ARGUMENT: invalid band "" for action merge'],
  ])("%j → %s", (text, message) => {
    expect(code(() => parseBandAssignment(text))).toContain(message);
  });
});

describe("profiles in _meta.json", () => {
  const profile = changeProfile(
    undefined,
    { maintainer: "alice", bands: { refactor: "notify", merge: "approval", "*": "auto" } },
    "review",
  );

  it("are written after the reference's keys, bands sorted with * last", () => {
    const text = serializeMeta(withProfile({ ...base, other: 1 }, profile));
    expect(Object.keys(JSON.parse(text))).toEqual([
      "channel",
      "members",
      "topic",
      "created",
      "other",
      "maintainer",
      "bands",
      "veto_window_seconds",
    ]);
    expect(Object.keys(JSON.parse(text).bands)).toEqual(["merge", "refactor", "*"]);
  });

  it("round-trip through governanceOf", () => {
    const meta = JSON.parse(serializeMeta(withProfile(base, profile))) as ChannelMeta;
    expect(governanceOf(meta)).toEqual(profile);
    expect(governanceOf(base)).toBeUndefined();
  });

  it("a hand-edited bad profile is reported as CORRUPT_META naming the problem", () => {
    expect(code(() => governanceOf({ ...base, bands: { merge: "maybe" } }))).toBe(
      'CORRUPT_META: channel review: _meta.json: invalid band "maybe" for action merge: use auto, notify, approval',
    );
    expect(code(() => governanceOf({ ...base, bands: ["merge"] }))).toContain(
      '"bands" must be an object',
    );
    expect(code(() => governanceOf({ ...base, veto_window_seconds: -1 }))).toContain(
      "veto window must be a positive number",
    );
    expect(code(() => governanceOf({ ...base, maintainer: "../x" }))).toContain(
      "invalid agent name",
    );
  });

  it("notify and approval bands need a maintainer", () => {
    expect(code(() => changeProfile(undefined, { bands: { merge: "approval" } }, "review"))).toBe(
      "INVALID_ARGUMENT: channel review: merge=approval need a maintainer to decide them (add --maintainer NAME)",
    );
    expect(changeProfile(undefined, { bands: { "*": "auto" } }, "review").bands).toEqual({
      "*": "auto",
    });
  });

  it("changes merge into the current profile; null removes a band", () => {
    const next = changeProfile(
      profile,
      { bands: { refactor: null, deploy: "approval" }, vetoWindowSeconds: 60 },
      "review",
    );
    expect(next).toEqual({
      maintainer: "alice",
      bands: { merge: "approval", "*": "auto", deploy: "approval" },
      vetoWindowSeconds: 60,
    });
  });
});

describe("band lookup", () => {
  const withDefault = changeProfile(
    undefined,
    { maintainer: "alice", bands: { merge: "approval", refactor: "notify", "*": "auto" } },
    "review",
  );
  const strict = changeProfile(
    undefined,
    { maintainer: "alice", bands: { merge: "approval" } },
    "review",
  );

  it("finds the action's own band, else the * default", () => {
    expect(lookupBand(withDefault, "merge", "review")).toEqual({
      action: "merge",
      band: "approval",
      matched: "merge",
    });
    expect(lookupBand(withDefault, "Refactor", "review").band).toBe("notify");
    expect(lookupBand(withDefault, "lint", "review")).toEqual({
      action: "lint",
      band: "auto",
      matched: "*",
    });
  });

  it("an action without a band and without a default is UNKNOWN_ACTION, with the fix", () => {
    expect(code(() => lookupBand(strict, "deploy", "review"))).toBe(
      "UNKNOWN_ACTION: action deploy has no band in channel review (known: merge); add one with: " +
        "agent-chat govern review --band deploy=approval (or a default for every action: --band '*'=auto)",
    );
    expect(code(() => lookupBand(strict, "*", "review"))).toContain("request a named action");
    expect(code(() => lookupBand(strict, "two words", "review"))).toContain("invalid action name");
  });
});

function msg(seq: number, fields: Partial<Message>): Message {
  return {
    seq,
    from: "bob",
    to: "all",
    channel: "review",
    ts: "2026-07-17T14:03:22+07:00",
    status: "discussion",
    title: `m${seq}`,
    body: "",
    extra: {},
    file: `${seq}.md`,
    ...fields,
  };
}

describe("verdicts", () => {
  const request: GovernanceRequest = {
    seq: 5,
    from: "bob",
    action: "merge",
    band: "approval",
    title: "Merge",
    ts: "",
    digest: "digest-of-5",
  };

  it("only the maintainer's reply to that very request counts", () => {
    const judge = (fields: Partial<Message>) => judgeReply(msg(6, fields), request, "alice");
    expect(judge({ from: "Alice", replyTo: 5, status: "Approved", body: "ok" })).toEqual({
      kind: "verdict",
      verdict: "approved",
      by: "Alice",
      seq: 6,
      note: "ok",
    });
    expect(judge({ from: "carol", replyTo: 5, status: "approved" })).toMatchObject({
      kind: "ignored",
      reason: "carol is not the maintainer (alice)",
    });
    expect(judge({ from: "alice", replyTo: 4, status: "approved" })).toBeUndefined();
    expect(judge({ from: "alice", status: "approved" })).toBeUndefined();
    expect(judge({ from: "alice", replyTo: 5, status: "discussion" })).toMatchObject({
      kind: "comment",
    });
  });

  it("a verdict bound to another request of the same number, or another requester, is none", () => {
    const judge = (extra: Record<string, string>) =>
      judgeReply(
        msg(6, { from: "alice", replyTo: 5, status: "approved", extra }),
        request,
        "alice",
      );
    const elsewhere = {
      kind: "ignored",
      reason: "it answers another request than #5 as it stands",
    };
    expect(judge({ request_digest: "digest-of-another-5", requester: "bob" })).toMatchObject(
      elsewhere,
    );
    expect(judge({ request_digest: "digest-of-5", requester: "carol" })).toMatchObject(elsewhere);
    expect(judge({ request_digest: "digest-of-5", requester: "Bob" })).toMatchObject({
      kind: "verdict",
    });
  });

  it("a name that only shares the maintainer's cursor key is not the maintainer", () => {
    const judge = (fields: Partial<Message>) => judgeReply(msg(6, fields), request, "alice");
    // `alice.`, `Alice_` and (written by chat.py, which takes any sender) `-alice` all have the
    // cursor file .cursors/alice.txt; none of them is alice.
    for (const from of ["alice.", "Alice_", "-alice"]) {
      expect(judge({ from, replyTo: 5, status: "approved" })).toMatchObject({
        kind: "ignored",
        reason: `${from} is not the maintainer (alice)`,
      });
    }
    // Nor does `bob.` close bob's request.
    expect(judge({ from: "bob.", replyTo: 5, status: "withdrawn" })).toMatchObject({
      kind: "comment",
    });
    expect(judge({ from: "BOB", replyTo: 5, status: "withdrawn" })).toMatchObject({
      kind: "closed",
    });
  });

  it("open requests: undecided, not expired, inside their veto window", () => {
    const now = Date.parse("2026-07-17T14:10:00+07:00");
    const messages = [
      msg(1, { status: "needs-approval", extra: { action: "merge" } }),
      msg(2, { status: "needs-approval", extra: { action: "deploy" } }),
      msg(3, { from: "carol", replyTo: 2, status: "approved" }),
      msg(4, { from: "alice", replyTo: 1, status: "rejected" }),
      msg(5, {
        status: "notify",
        extra: { action: "refactor", veto_until: "2026-07-17T14:20:00+07:00" },
      }),
      msg(6, {
        status: "notify",
        extra: { action: "refactor", veto_until: "2026-07-17T14:05:00+07:00" },
      }),
      msg(7, { status: "needs-approval", extra: { action: "merge" } }),
      msg(8, { replyTo: 7, status: "expired" }),
    ];
    const digest = (m: Message) => `digest-of-${m.seq}`;
    expect(openRequests(messages, "alice", now, digest).map((r) => [r.seq, r.action])).toEqual([
      [2, "deploy"],
      [5, "refactor"],
    ]);
  });
});
