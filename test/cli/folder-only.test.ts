import { expect, it } from "vitest";
import { runCli } from "../helpers/cli.js";
import { describeNats } from "../helpers/describe-nats.js";

// `state`, `compact` and the recover-pendings read and mend chat.py 0.7's files in a channel
// folder; a NATS root has none: each says so (exit 1: not a usage error, the same command
// works on a folder root) and exits, touching nothing.
describeNats("chat.py 0.7's folder commands on a NATS root", (server) => {
  const refusals: [string[], string][] = [
    [
      ["state", "dev"],
      "state is chat.py 0.7's summary of a channel folder: it needs a folder root",
    ],
    [
      ["task", "recover-pending", "dev", "--as", "alice"],
      "recover-pending mends chat.py 0.7's journals in a channel folder: it needs a folder root",
    ],
    [
      ["recover-pending", "dev", "--as", "alice"],
      "recover-pending mends chat.py 0.7's journals in a channel folder: it needs a folder root",
    ],
  ];
  for (const [i, [args, refusal]] of refusals.entries()) {
    it(`${args.join(" ")} is refused, saying what it needs`, async () => {
      const root = server().url(`folderonly${i}`);
      expect((await runCli(["init", "dev"], { root })).code).toBe(0);
      const r = await runCli(args, { root });
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(refusal);
      expect(r.stdout).toBe("");
    }, 60_000);
  }

  it("govern is no folder command: it changes a channel on a NATS root too", async () => {
    const root = server().url("folderonlygovern");
    expect((await runCli(["init", "dev"], { root })).code).toBe(0);
    const flags = ["--as", "alice", "--maintainer", "alice", "--band", "merge=approval"];
    const r = await runCli(["govern", "dev", ...flags], { root });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const shown = await runCli(["--json", "govern", "dev"], { root });
    expect(JSON.parse(shown.stdout)).toMatchObject({ governed: true, maintainer: "alice" });
  }, 60_000);
});
