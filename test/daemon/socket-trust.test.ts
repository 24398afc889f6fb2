import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, chownSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { basename, dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { untrustedSocket } from "../../src/daemon/socket-trust.js";
import {
  HAS_PYTHON,
  IS_ROOT,
  otherUserSkipReason,
  requirePresent,
  skipName,
} from "../helpers/tools.js";
import { daemonFixture, type World } from "./harness.js";

const { world, serve } = daemonFixture();

/** A listener of this process at `path`, as a daemon of ours would be. */
function listen(path: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer((s) => s.destroy());
    server.once("error", reject);
    server.listen(path, () => resolve(server));
  });
}

const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) await new Promise((r) => s.close(r));
});

describe("whose socket a client uses (the folder and the socket must be the user's)", () => {
  it("trusts its own socket in its own private folder, and nothing that others could have put there", async () => {
    const w = world();
    const own = join(w.dir, "own");
    mkdirSync(own, { mode: 0o700 });
    servers.push(await listen(join(own, "d.sock")));
    expect(untrustedSocket(join(own, "d.sock"))).toBeUndefined();
    // Nothing there is no reason: connecting says so on its own.
    expect(untrustedSocket(join(own, "none.sock"))).toBeUndefined();

    const open = join(w.dir, "open");
    mkdirSync(open);
    chmodSync(open, 0o777);
    servers.push(await listen(join(open, "d.sock")));
    expect(untrustedSocket(join(open, "d.sock"))).toMatch(/may be written by others \(mode 0777\)/);

    // A sticky folder (/tmp): others cannot remove or replace a socket of ours there.
    const sticky = join(w.dir, "sticky");
    mkdirSync(sticky);
    chmodSync(sticky, 0o1777);
    servers.push(await listen(join(sticky, "d.sock")));
    expect(untrustedSocket(join(sticky, "d.sock"))).toBeUndefined();

    const linked = join(w.dir, "linked");
    symlinkSync(own, linked);
    expect(untrustedSocket(join(linked, "d.sock"))).toMatch(/is a symbolic link/);

    writeFileSync(join(own, "file.sock"), "");
    expect(untrustedSocket(join(own, "file.sock"))).toMatch(/is not a socket/);
  });

  it("a client does not talk to a socket in a folder others may write: it warns and works on the root", async () => {
    const w = world();
    const d = await serve(w);
    expect((await w.cli(["init", "general"])).code).toBe(0);
    chmodSync(dirname(d.socket), 0o777);
    const posted = await w.cli(["post", "general", "--from", "alice", "--body", "hi"]);
    expect(posted.code, posted.stderr).toBe(0);
    // A one-off post works on the folder without looking for a daemon; a listing asks for it.
    const listed = await w.cli(["channels"]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stderr).toContain(`not using the daemon socket ${d.socket}`);
    expect(listed.stderr).toContain("may be written by others (mode 0777)");
    const direct = await w.cli(["--json", "peek", "general"], { AGENT_CHAT_DAEMON: "off" });
    expect(JSON.parse(direct.stdout).messages.map((m: { body: string }) => m.body)).toEqual(["hi"]);
    const info = await w.cli(["info"]);
    expect(info.stdout).toMatch(/daemon: +not used: its folder .* may be written by others/);
    chmodSync(dirname(d.socket), 0o700);
    await d.stop();
  });
});

// The squatter's listener is python3 run as user nobody (otherUserSkipReason: needs root).

/** A listener of user nobody at `path` that logs every byte it receives and answers as a daemon. */
const SQUATTER = `
import os, socket, sys, json
path, log = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX)
s.bind(path)
os.chmod(path, 0o777)
s.listen(8)
print("listening", flush=True)
while True:
    c, _ = s.accept()
    data = c.recv(65536)
    with open(log, "ab") as f:
        f.write(data)
    c.sendall(b'{"id":0,"ok":true,"result":{"seq":1}}\\n')
    c.close()
`;

describe.skipIf(otherUserSkipReason !== undefined)(
  skipName(
    "another local user who makes the shared socket folder first (needs root to act as user nobody)",
    otherUserSkipReason,
  ),
  () => {
    let squatter: ChildProcess | undefined;
    afterEach(() => {
      squatter?.kill();
    });

    /** The world without $XDG_RUNTIME_DIR, its shared tmp folder squatted by user nobody. */
    async function squatted(w: World) {
      requirePresent("root", IS_ROOT);
      requirePresent("python3", HAS_PYTHON);
      const shared = join(w.dir, "tmp");
      mkdirSync(shared, { mode: 0o1777 });
      chmodSync(shared, 0o1777);
      chmodSync(w.dir, 0o755);
      Object.assign(w.env, {
        XDG_RUNTIME_DIR: "",
        TMPDIR: shared,
        XDG_STATE_HOME: join(w.dir, "state"),
      });
      const victim = JSON.parse((await w.cli(["--json", "info"])).stdout).socket as string;
      expect(victim.startsWith(join(shared, "agent-chat-"))).toBe(true);
      mkdirSync(dirname(victim), { mode: 0o700 });
      chownSync(dirname(victim), 65534, 65534);
      const log = join(shared, "squatter.log");
      writeFileSync(log, "");
      chownSync(log, 65534, 65534);
      squatter = spawn("python3", ["-c", SQUATTER, victim, log], { uid: 65534, gid: 65534 });
      await new Promise<void>((resolve, reject) => {
        squatter!.stdout!.once("data", () => resolve());
        squatter!.once("exit", (code) => reject(new Error(`the squatter exited ${code}`)));
      });
      return { victim, heard: () => readFileSync(log, "utf8") };
    }

    it("posts, reads and sends never reach the squatter, nor does a socket named outright", async () => {
      const w = world();
      const { victim, heard } = await squatted(w);
      const ownDir = join(w.dir, "state", "agent-chat", "sockets");
      expect((await w.cli(["init", "deploy"])).code).toBe(0);
      const post = await w.cli(["post", "deploy", "--from", "alice", "--body", "secret plan"]);
      expect(post.code, post.stderr).toBe(0);
      // The squatted folder is not looked into at all: the socket would be in the user's own.
      expect(post.stderr).toBe("");
      const taken = await w.cli(["info"]);
      expect(taken.stdout).toContain(`socket:     ${join(ownDir, basename(victim))}\n`);
      expect(taken.stdout).toContain(`(${dirname(victim)} is another user's, or a link: not used)`);
      const read = await w.cli(["--json", "read", "deploy", "--as", "bob"]);
      expect(JSON.parse(read.stdout).messages.map((m: { body: string }) => m.body)).toEqual([
        "secret plan",
      ]);
      // Named outright, the squatter's socket is still not used.
      const namedPost = await w.cli(["post", "deploy", "--from", "alice", "--body", "again"], {
        AGENT_CHAT_SOCKET: victim,
      });
      expect(namedPost.code, namedPost.stderr).toBe(0);
      const named = await w.cli(["channels"], { AGENT_CHAT_SOCKET: victim });
      expect(named.code, named.stderr).toBe(0);
      expect(named.stderr).toContain(`not using the daemon socket ${victim}`);
      expect(named.stderr).toContain("belongs to user 65534, not to you (0)");
      const info = await w.cli(["info"], { AGENT_CHAT_SOCKET: victim });
      expect(info.stdout).toMatch(/daemon: +not used: .*belongs to user 65534/);
      const send = await w.cli([
        "send",
        "--channel",
        "deploy",
        "--message",
        "x",
        "--socket",
        victim,
      ]);
      expect(send.code).not.toBe(0);
      expect(send.stderr).toContain(`not sending to ${victim}`);
      expect(heard()).toBe("");
    });

    it("serve takes the user's own folder instead, and clients find it there", async () => {
      const w = world();
      const { heard } = await squatted(w);
      const d = await serve(w);
      expect(d.socket.startsWith(join(w.dir, "state", "agent-chat", "sockets"))).toBe(true);
      expect((await w.cli(["init", "deploy"])).stderr).toBe("");
      const post = await w.cli(["--json", "post", "deploy", "--from", "alice", "--body", "via"]);
      expect(post.code, post.stderr).toBe(0);
      expect(post.stderr).toBe("");
      const info = await w.cli(["info"]);
      expect(info.stdout).toContain(`socket:     ${d.socket}`);
      expect(info.stdout).toMatch(/daemon: +live \(pid \d+/);
      expect(heard()).toBe("");
      expect((await d.stop()).stderr).toContain(`serving at ${d.socket} instead`);
    });
  },
);
