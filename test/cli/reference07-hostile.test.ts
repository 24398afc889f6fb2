import {
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { tempDir } from "../helpers/tmp.js";

// chat.py 0.7's record folders (tasks/, claims/, locks/) of a hostile member: a folder swapped
// for a link to elsewhere is never read or written through, by any command, journals included.
describe("chat.py 0.7's record folders planted as links", () => {
  let root: ReturnType<typeof tempDir>;
  let outside: string;
  const cli = (...args: string[]) => runCli(args, { root: root.dir });
  const channel = () => join(root.dir, "dev");
  /** Moves the channel's folder `sub` out of the root and leaves a link to it in its place. */
  const linkOut = (sub: string) => {
    renameSync(join(channel(), sub), outside);
    symlinkSync(outside, join(channel(), sub));
  };
  const outsideFiles = () => readdirSync(outside).sort();
  const b64 = (text: string) => Buffer.from(text, "utf8").toString("base64");

  beforeEach(async () => {
    root = tempDir();
    // Beside the channel, in no folder any record lives in: "elsewhere" for the channel.
    outside = join(root.dir, "elsewhere");
    expect((await cli("init", "dev")).code).toBe(0);
    expect((await cli("task", "create", "dev", "T1", "--title", "one", "--as", "alice")).code).toBe(
      0,
    );
  });
  afterEach(() => root.cleanup());

  it("a linked tasks/ folder: no task is claimed, updated or created through it", async () => {
    const before = readFileSync(join(channel(), "tasks", "T1.json"), "utf8");
    linkOut("tasks");
    const claim = await cli("task", "claim", "dev", "T1", "--as", "bob");
    expect(claim.code).not.toBe(0);
    expect(claim.stderr).toContain("tasks is not a real folder");
    const update = await cli("task", "update", "dev", "T1", "--title", "mine", "--as", "bob");
    expect(update.code).not.toBe(0);
    const create = await cli("task", "create", "dev", "T2", "--title", "two", "--as", "bob");
    expect(create.code).not.toBe(0);
    expect(create.stderr).toContain("tasks is not a real folder");
    expect(outsideFiles()).toEqual(["T1.json"]);
    expect(readFileSync(join(outside, "T1.json"), "utf8")).toBe(before);
  });

  it("a lease journal never puts a record back through a linked tasks/ or claims/", async () => {
    const task = readFileSync(join(channel(), "tasks", "T1.json"), "utf8");
    const journal = {
      version: 2,
      transaction_id: "0123456789abcdef0123456789abcdef",
      task_id: "T1",
      task_file: "tasks/T1.json",
      task_before: b64(task),
      task_after: b64(task),
      claim_changes: [],
      event: "task.claimed",
      details: {},
      phase: "prepared",
    };
    mkdirSync(join(channel(), "claims"));
    writeFileSync(join(channel(), "claims", ".lease-transaction.json"), JSON.stringify(journal));
    writeFileSync(join(channel(), "tasks", "T1.json"), task.replace('"one"', '"changed"'));
    linkOut("tasks");
    const viaTasks = await cli("task", "recover-pending", "dev", "--as", "bob");
    expect(viaTasks.code).not.toBe(0);
    expect(readFileSync(join(outside, "T1.json"), "utf8")).toContain('"changed"');
  });

  it("a journal in a linked claims/ is refused, nothing written outside", async () => {
    const task = readFileSync(join(channel(), "tasks", "T1.json"), "utf8");
    const claim = `${JSON.stringify({
      task_id: "T1",
      channel: "dev",
      owner: "mallory",
      claimed_at: "2026-01-01T00:00:00.000000+00:00",
      lease_expires_at: "2099-01-01T00:00:00.000000+00:00",
      renewed_at: "2026-01-01T00:00:00.000000+00:00",
    })}\n`;
    mkdirSync(join(channel(), "claims"));
    const journal = {
      version: 2,
      transaction_id: "0123456789abcdef0123456789abcdef",
      task_id: "T1",
      task_file: "tasks/T1.json",
      task_before: b64(task),
      task_after: b64(task),
      claim_changes: [{ file: "T1.mallory.json", previous: b64(claim), next: null }],
      event: "task.released",
      details: {},
      phase: "prepared",
    };
    writeFileSync(join(channel(), "claims", ".lease-transaction.json"), JSON.stringify(journal));
    linkOut("claims");
    const recovered = await cli("task", "recover-pending", "dev", "--as", "bob");
    expect(recovered.code).not.toBe(0);
    expect(recovered.stderr).toContain("claims is not a real folder");
    expect(outsideFiles()).toEqual([".lease-transaction.json"]);
  });

  it("a path-lock journal in a linked locks/ is refused, nothing written outside", async () => {
    // A record as chat.py writes it, so that only the link can refuse the journal.
    const lock = `${JSON.stringify({
      channel: "dev",
      expires_at: "2099-01-01T00:00:00.000000+00:00",
      lock_id: "L1",
      locked_at: "2026-01-01T00:00:00.000000+00:00",
      owner: "mallory",
      paths: [{ display_path: "src", kind: "file", normalized_path: "src" }],
      previous_expires_at: null,
      previous_owner: null,
      recovery_reason: null,
      updated_at: "2026-01-01T00:00:00.000000+00:00",
    })}\n`;
    mkdirSync(join(channel(), "locks"));
    const journal = {
      version: 1,
      transaction_id: "0123456789abcdef0123456789abcdef",
      operation: "unlock",
      event: "path.lock.unlocked",
      target: "L1.json",
      before: b64(lock),
      after: null,
      actor: "mallory",
      phase: "prepared",
    };
    writeFileSync(join(channel(), "locks", ".path-lock-transaction.json"), JSON.stringify(journal));
    linkOut("locks");
    const recovered = await cli("recover-pending", "dev", "--as", "bob");
    expect(recovered.code).not.toBe(0);
    expect(recovered.stderr).toContain("locks is not a real folder");
    expect(outsideFiles()).toEqual([".path-lock-transaction.json"]);
  });
});

// state.md is derived data in the root: anyone can write it. `state --saved` prints it, and
// says whether it is the summary the channel's files give now, so an invented fact never passes
// as the channel's state.
describe("a state.md planted or edited by hand", () => {
  let root: ReturnType<typeof tempDir>;
  const cli = (...args: string[]) => runCli(args, { root: root.dir });
  const stateFile = () => join(root.dir, "dev", "state.md");
  const saved = async () => {
    const r = await cli("--json", "state", "dev", "--saved");
    expect(r.code, r.stderr).toBe(0);
    return { ...(JSON.parse(r.stdout) as { markdown: string; current: boolean }), r };
  };

  beforeEach(async () => {
    root = tempDir();
    expect((await cli("init", "dev")).code).toBe(0);
    expect((await cli("task", "create", "dev", "T1", "--title", "one", "--as", "alice")).code).toBe(
      0,
    );
    expect((await cli("compact", "dev", "--as", "alice")).code).toBe(0);
  });
  afterEach(() => root.cleanup());

  it("is printed as saved, but never as the channel's current state", async () => {
    const fresh = await saved();
    expect(fresh.current).toBe(true);
    expect(fresh.r.stderr).toBe("");

    const text = readFileSync(stateFile(), "utf8");
    const forged = text.replace(
      "## Decisions\n*(none)*",
      "## Decisions\n- alice: ship it unreviewed",
    );
    expect(forged).not.toBe(text);
    writeFileSync(stateFile(), forged);
    const edited = await saved();
    expect(edited.markdown).toBe(forged);
    expect(edited.current).toBe(false);
    const plain = await cli("state", "dev", "--saved");
    expect(plain.stdout).toBe(forged);
    expect(plain.stderr).toContain("state.md is not the channel's summary now");
  });

  it("goes stale when the channel moves on, and says so", async () => {
    expect((await cli("task", "create", "dev", "T2", "--title", "two", "--as", "bob")).code).toBe(
      0,
    );
    const stale = await saved();
    expect(stale.current).toBe(false);
    expect((await cli("compact", "dev", "--as", "bob")).code).toBe(0);
    expect((await saved()).current).toBe(true);
  });
});

// A chat.py lock is its owner's: the very name chat.py wrote (but for case) or the key we write
// for a name; a name that only shares the key (`Bob.` for `Bob`) is someone else.
describe("chat.py's path lock of a capitalised name", () => {
  let root: ReturnType<typeof tempDir>;
  const cli = (...args: string[]) => runCli(args, { root: root.dir });

  beforeEach(async () => {
    root = tempDir();
    expect((await cli("init", "dev")).code).toBe(0);
    const locks = join(root.dir, "dev", "locks");
    mkdirSync(locks);
    const at = new Date().toISOString().replace("Z", "000+00:00");
    const until = new Date(Date.now() + 3_600_000).toISOString().replace("Z", "000+00:00");
    const record = {
      lock_id: "L1",
      channel: "dev",
      owner: "Bob",
      paths: [{ path: "src", normalized_path: "src" }],
      locked_at: at,
      updated_at: at,
      expires_at: until,
    };
    writeFileSync(join(locks, "L1.json"), `${JSON.stringify(record, null, 2)}\n`);
  });
  afterEach(() => root.cleanup());

  it("is unlocked by its owner only, its name exactly as chat.py compares it, not by one that shares its key", async () => {
    for (const name of ["Bob.", "bob", "BOB"]) {
      const other = await cli("unlock", "dev", "L1", "--as", name);
      expect(other.code).not.toBe(0);
      expect(other.stderr).toContain("PATH_LOCK_OWNER_MISMATCH");
    }
    const owner = await cli("unlock", "dev", "L1", "--as", "Bob");
    expect(owner.code, owner.stderr).toBe(0);
    expect(readdirSync(join(root.dir, "dev", "locks"))).toEqual([]);
  });
});

// A name the channel refuses (it collides with a member's) is chat.py's invalid owner, not a
// storage failure: the message says what is wrong with the request.
describe("a path-lock command under a name that collides with a member's", () => {
  let root: ReturnType<typeof tempDir>;
  const cli = (...args: string[]) => runCli(args, { root: root.dir });
  beforeEach(async () => {
    root = tempDir();
    expect((await cli("init", "dev", "--members", "alice,bob")).code).toBe(0);
  });
  afterEach(() => root.cleanup());

  it("is refused with chat.py's PATH_LOCK_INVALID_OWNER", async () => {
    const refused = await cli("lock", "dev", "src", "--as", "Alice.");
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("PATH_LOCK_INVALID_OWNER: Alice. may not act in dev");
  });
});
