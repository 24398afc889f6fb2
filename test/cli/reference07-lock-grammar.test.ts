import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { runCli, until } from "../helpers/cli.js";
import { referenceSkipReason, runReference } from "../helpers/reference.js";
import { tempDir } from "../helpers/tmp.js";

// chat.py 0.7.5's path-lock grammar (`lock|check|unlock|recover`) spoken by ours, against the
// real reference on one root: each side's locks refuse the other's, in both directions.
const skip = referenceSkipReason("0.7");

describe.skipIf(skip !== undefined)(`chat.py's lock grammar${skip ? ` (${skip})` : ""}`, () => {
  let root: ReturnType<typeof tempDir>;
  const cli = (...args: string[]) => runCli(args, { root: root.dir });
  const ref = (...args: string[]) => runReference("0.7", root.dir, args);
  const locks = () =>
    readdirSync(join(root.dir, "dev", "locks")).filter((n) => n.endsWith(".json"));
  /** The path-lock audit messages of the channel: sender, status and JSON body, oldest first. */
  const audits = () =>
    readdirSync(join(root.dir, "dev"))
      .filter((f) => /^\d+-/.test(f))
      .sort()
      .map((f) => readFileSync(join(root.dir, "dev", f), "utf8"))
      .filter((text) => /\nstatus: path\./.test(text))
      .map((text) => ({
        from: /\nfrom: (.*)\n/.exec(text)?.[1],
        status: /\nstatus: (.*)\n/.exec(text)?.[1],
        body: JSON.parse(text.slice(text.indexOf("\n---\n") + 5)) as Record<string, unknown>,
      }));

  beforeEach(async () => {
    root = tempDir();
    expect((await cli("init", "dev")).code).toBe(0);
  });
  afterEach(() => root.cleanup());

  it("our lock is chat.py's: its check lists it and its lock refuses, until we unlock", async () => {
    const locked = await cli("lock", "dev", "./src/a.ts", "docs/", "--from", "bob");
    expect(locked.code, locked.stderr).toBe(0);
    expect(locked.stdout).toBe("locked agent-chat-1 -> dev/src/a.ts, docs\n");

    const check = ref("check", "dev", "src", "--as", "carol");
    expect(check.status).toBe(0);
    expect(check.stdout).toMatch(/^locked agent-chat-1 owner=bob expires=\S+\+00:00\n$/);
    const refused = ref("lock", "dev", "docs/x.md", "--as", "carol");
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain("PATH_LOCK_CONFLICT");

    const notYours = await cli("unlock", "dev", "src/a.ts", "--as", "carol");
    expect(notYours.code).toBe(1);
    expect(notYours.stderr).toMatch(/^agent-chat: PATH_LOCK_OWNER_MISMATCH: /);
    const unlocked = await cli("unlock", "dev", "agent-chat-1", "--owner", "bob");
    expect(unlocked.code, unlocked.stderr).toBe(0);
    expect(unlocked.stdout).toBe("unlocked agent-chat-1 from dev\n");
    expect(ref("check", "dev", "src").stdout).toBe("available\n");
    expect(ref("lock", "dev", "src/a.ts", "--as", "carol").status).toBe(0);
  });

  it("`lock CH a b` is one lock, as chat.py's: one record, one line, and unlock by its id frees all", async () => {
    const theirs = ref("lock", "dev", "lib/x.ts", "./tools//", "--as", "alice");
    expect(theirs.status, theirs.stderr).toBe(0);
    const ours = await cli("lock", "dev", "src/a.ts", "./docs//", "--as", "bob");
    expect(ours.code, ours.stderr).toBe(0);
    const shape = (line: string, id: string) => line.replace(id, "ID").replace(/dev\/.*/, "");
    const theirId = /locked (\w+)/.exec(theirs.stdout)?.[1] as string;
    expect(shape(ours.stdout, "agent-chat-1")).toBe(shape(theirs.stdout, theirId));
    expect(theirs.stdout).toBe(`locked ${theirId} -> dev/lib/x.ts, tools\n`);
    expect(ours.stdout).toBe("locked agent-chat-1 -> dev/src/a.ts, docs\n");
    expect(locks().sort()).toEqual([`${theirId}.json`, "agent-chat-1.json"].sort());
    const record = JSON.parse(
      readFileSync(join(root.dir, "dev", "locks", "agent-chat-1.json"), "utf8"),
    );
    expect(Object.keys(record)).toEqual(
      Object.keys(
        JSON.parse(readFileSync(join(root.dir, "dev", "locks", `${theirId}.json`), "utf8")),
      ).sort(),
    );
    expect(record.owner).toBe("bob");
    expect(record.paths.map((p: { normalized_path: string }) => p.normalized_path)).toEqual([
      "src/a.ts",
      "docs",
    ]);
    // chat.py's check names the one lock for either path; its unlock by the id frees both.
    expect(ref("check", "dev", "docs/y").stdout).toMatch(/^locked agent-chat-1 owner=bob /);
    const freed = ref("unlock", "dev", "agent-chat-1", "--as", "bob");
    expect(freed.status, freed.stderr).toBe(0);
    expect(ref("check", "dev", "src/a.ts", "docs").stdout).toBe("available\n");
    expect((await cli("check", "dev", "src/a.ts", "docs")).stdout).toBe("available\n");

    // Ours unlocks its own by id, every path at once, as chat.py unlocks its own.
    expect((await cli("lock", "dev", "src/a.ts", "docs", "--as", "bob")).code).toBe(0);
    const id = /locked (\S+)/.exec((await cli("check", "dev", "docs")).stdout)?.[1] as string;
    expect((await cli("unlock", "dev", id, "--as", "bob")).stdout).toBe(
      `unlocked ${id} from dev\n`,
    );
    expect(ref("check", "dev", "src/a.ts", "docs").stdout).toBe("available\n");
    expect(locks()).toEqual([`${theirId}.json`]);

    // Paths that overlap one another are one request chat.py refuses; ours too, exit 1.
    const within = ref("lock", "dev", "zz", "zz/x", "--as", "bob");
    const oursWithin = await cli("lock", "dev", "zz", "zz/x", "--as", "bob");
    expect(within.stderr).toContain("requested paths overlap within one lock request");
    expect(oursWithin.stderr).toMatch(/^agent-chat: PATH_LOCK_CONFLICT: requested paths overlap/);
    expect(oursWithin.code).toBe(within.status);
  });

  it("a lock over its owner's own live lock is refused, as chat.py's: never two records of one path", async () => {
    expect(ref("lock", "dev", "lib", "--as", "alice").status).toBe(0);
    const theirs = ref("lock", "dev", "lib/x", "--as", "alice");
    expect(theirs.stderr).toContain("PATH_LOCK_CONFLICT");
    expect((await cli("lock", "dev", "src", "--as", "alice")).code).toBe(0);
    for (const path of ["src/a", "src", "lib/y"]) {
      const ours = await cli("lock", "dev", path, "--as", "alice");
      expect(ours.stderr, path).toMatch(/^agent-chat: PATH_LOCK_CONFLICT: /);
      expect(ours.code).toBe(theirs.status);
    }
    expect(locks()).toHaveLength(2);
  });

  it("chat.py's lock: our check lists it as chat.py's does, our lock refuses it (all or none)", async () => {
    const theirs = ref("lock", "dev", "lib", "--as", "alice");
    expect(theirs.status, theirs.stderr).toBe(0);
    const id = /locked (\w+)/.exec(theirs.stdout)?.[1] as string;

    const check = await cli("check", "dev", "lib/x.ts", "src");
    expect(check.code).toBe(0);
    expect(check.stdout).toMatch(new RegExp(`^locked ${id} owner=alice expires=\\S+\\+00:00\\n$`));
    expect((await cli("check", "dev", "src")).stdout).toBe("available\n");
    const outside = await cli("check", "dev", "../etc");
    expect(outside.code).toBe(1);
    expect(outside.stderr).toMatch(/^agent-chat: PATH_LOCK_INVALID_PATH: /);
    const json = JSON.parse((await cli("--json", "check", "dev", "lib")).stdout);
    expect(json).toMatchObject({ available: false, locks: [{ lock: id, holder: "alice" }] });

    const refused = await cli("lock", "dev", "src/a.ts", "lib/deep/b.ts", "--as", "bob");
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^agent-chat: PATH_LOCK_CONFLICT: .*alice holds lib/);
    // The path granted before the refusal was given back: nothing of bob's is left.
    expect(locks()).toEqual([`${id}.json`]);
    expect(ref("lock", "dev", "src/a.ts", "--as", "carol").status).toBe(0);

    const stranger = await cli("unlock", "dev", id, "--as", "bob");
    expect(stranger.code).toBe(1);
    expect(stranger.stderr).toMatch(
      /^agent-chat: PATH_LOCK_OWNER_MISMATCH: lock \w+ belongs to alice/,
    );
    expect(ref("check", "dev", "lib").stdout).toMatch(new RegExp(`^locked ${id} owner=alice`));
  });

  it("our lock and unlock post the audit messages chat.py posts, with its JSON keys", async () => {
    expect(ref("lock", "dev", "lib", "--as", "alice").status).toBe(0);
    const theirs = audits()[0]?.body as Record<string, unknown>;
    expect((await cli("lock", "dev", "src/a.ts", "docs/**", "--as", "bob")).code).toBe(0);
    expect((await cli("unlock", "dev", "agent-chat-1", "--as", "bob")).code).toBe(0);
    const ours = audits().slice(1);
    expect(ours.map((a) => [a.status, a.from, a.body.lock_id])).toEqual([
      ["path.locked", "bob", "agent-chat-1"],
      ["path.lock.unlocked", "bob", "agent-chat-1"],
    ]);
    // The store journals ours as chat.py journals its own: the same keys, transaction_id too.
    const keys = Object.keys(theirs);
    for (const a of ours) expect(Object.keys(a.body)).toEqual(keys);
    for (const a of ours) {
      expect(a.body.paths).toEqual([
        { display_path: "src/a.ts", kind: "file", normalized_path: "src/a.ts" },
        { display_path: "docs/**", kind: "directory", normalized_path: "docs" },
      ]);
    }
  });

  it("chat.py's own lock: its owner unlocks it with ours, journaled and audited as chat.py does", async () => {
    const id = /locked (\w+)/.exec(ref("lock", "dev", "lib", "src", "--as", "alice").stdout)?.[1];
    const unlocked = await cli("unlock", "dev", "src", "--as", "alice");
    expect([unlocked.code, unlocked.stdout, unlocked.stderr]).toEqual([
      0,
      `unlocked ${id} from dev\n`,
      "",
    ]);
    expect(readdirSync(join(root.dir, "dev", "locks"))).toEqual([]); // record and journal gone
    expect(ref("check", "dev", "lib", "src").stdout).toBe("available\n");
    const audit = audits().at(-1);
    expect(audit?.status).toBe("path.lock.unlocked");
    expect(audit?.from).toBe("alice");
    expect(audit?.body).toMatchObject({
      event: "path.lock.unlocked",
      lock_id: id,
      owner: "alice",
      paths: [{ normalized_path: "lib" }, { normalized_path: "src" }],
      transaction_id: expect.stringMatching(/^[0-9a-f]{32}$/),
    });
  });

  it("chat.py's own lock, ended: ours recovers it as chat.py does, and chat.py sees the new owner", async () => {
    // Long enough that our first recover comes before it ends, even on a busy machine.
    const locked = ref("lock", "dev", "lib", "--as", "alice", "--lease-seconds", "3");
    const id = /locked (\w+)/.exec(locked.stdout)?.[1] as string;
    const early = await cli("recover", "dev", id, "--as", "bob", "--reason", "alice left");
    expect(early.code).toBe(1);
    expect(early.stderr).toMatch(/^agent-chat: PATH_LOCK_NOT_STALE: /);
    let taken = early;
    await until(async () => {
      taken = await cli("recover", "dev", "lib", "--as", "bob", "--reason", "alice left");
      return taken.code === 0;
    });
    expect(taken.stdout).toBe(`recovered ${id} for bob previous_owner=alice reason=alice left\n`);
    expect(ref("check", "dev", "lib/x.ts").stdout).toMatch(new RegExp(`^locked ${id} owner=bob `));
    expect(ref("lock", "dev", "lib/x.ts", "--as", "carol").stderr).toContain("PATH_LOCK_CONFLICT");
    expect(audits().at(-1)?.body).toMatchObject({
      event: "path.lock.recovered",
      owner: "bob",
      previous_owner: "alice",
      recovery_reason: "alice left",
    });
    // The lock is still chat.py's kind: its new owner gives it back with either CLI.
    expect(ref("unlock", "dev", id, "--as", "bob").status).toBe(0);
  });

  it("a path-lock change that died half-way (chat.py's journal) refuses our changes until settled", async () => {
    expect(ref("lock", "dev", "lib", "--as", "alice").status).toBe(0);
    writeFileSync(join(root.dir, "dev", "locks", ".path-lock-transaction.json"), "{}\n");
    for (const args of [
      ["lock", "dev", "src", "--as", "bob"],
      ["lease", "add", "dev", "docs/**", "--as", "bob"],
      ["unlock", "dev", "lib", "--as", "alice"],
    ]) {
      const refused = await cli(...args);
      expect(refused.code, args.join(" ")).toBe(1);
      expect(refused.stderr).toContain("PATH_LOCK_TRANSACTION_PENDING");
    }
    expect(locks().filter((n) => !n.startsWith("."))).toHaveLength(1);
  });

  it("recover takes over only an expired lock, with its reason; chat.py sees the new owner", async () => {
    expect((await cli("lock", "dev", "src", "--as", "bob", "--lease-seconds", "0.2")).code).toBe(0);
    const early = await cli("recover", "dev", "src", "--as", "carol", "--reason", "bob left");
    expect(early.code).toBe(1);
    expect(early.stderr).toMatch(/^agent-chat: PATH_LOCK_NOT_STALE: lock agent-chat-1 of bob/);
    expect((await cli("recover", "dev", "src", "--as", "carol")).code).toBe(2);

    let taken = early;
    await until(async () => {
      taken = await cli("recover", "dev", "src", "--as", "carol", "--reason", "bob left");
      return taken.code === 0;
    });
    expect(taken.stdout).toBe(
      "recovered agent-chat-1 for carol previous_owner=bob reason=bob left\n",
    );
    expect(ref("check", "dev", "src/a.ts").stdout).toMatch(/^locked agent-chat-1 owner=carol /);
    // One message per change of the record, each naming its journal's transaction.
    expect(
      audits().map((a) => [a.status, a.from, a.body.lock_id, typeof a.body.transaction_id]),
    ).toEqual([
      ["path.locked", "bob", "agent-chat-1", "string"],
      ["path.lock.recovered", "carol", "agent-chat-1", "string"],
    ]);
    expect(ref("lock", "dev", "src/a.ts", "--as", "bob").stderr).toContain("PATH_LOCK_CONFLICT");
    const leases = JSON.parse((await cli("--json", "leases", "dev")).stdout).leases;
    expect(leases).toContainEqual(
      expect.objectContaining({ holder: "carol", reason: expect.stringContaining("bob left") }),
    );
  });

  it("chat.py recovers our expired lock, and from then on ours honours it as chat.py's", async () => {
    expect((await cli("lock", "dev", "src", "--as", "bob", "--lease-seconds", "0.2")).code).toBe(0);
    // Tried until the 0.2 s lease has ended; on a busy machine the first try already succeeds.
    let recovered = ref("recover", "dev", "agent-chat-1", "--as", "carol", "--reason", "gone");
    await until(async () => {
      if (recovered.status !== 0) {
        recovered = ref("recover", "dev", "agent-chat-1", "--as", "carol", "--reason", "gone");
      }
      return recovered.status === 0;
    });
    expect(recovered.stdout).toContain("previous_owner=bob reason=gone");
    const record = JSON.parse(
      readFileSync(join(root.dir, "dev", "locks", "agent-chat-1.json"), "utf8"),
    );
    expect(record).toMatchObject({ owner: "carol", previous_owner: "bob" });

    expect((await cli("check", "dev", "src/a.ts")).stdout).toMatch(
      /^locked agent-chat-1 owner=carol /,
    );
    const refused = await cli("lock", "dev", "src/a.ts", "--as", "bob");
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("PATH_LOCK_CONFLICT");
  });
});
