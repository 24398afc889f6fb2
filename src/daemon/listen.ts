import { promises as fsp } from "node:fs";
import { connect, type Server } from "node:net";
import { dirname } from "node:path";
import { AgentChatError, wrapIoError } from "../core/errors.js";
import { acquireDirLock } from "../fsutil/dir-lock.js";

export type SocketState = "live" | "dead" | "absent";

/**
 * What is at a socket path: a daemon that accepts connections (`live`), a socket file nobody
 * listens on any more, left by a killed daemon (`dead`), or nothing (`absent`). A listener that
 * does not answer within the timeout, or one we may not connect to, counts as live: a socket is
 * never removed unless it provably has no listener.
 */
export async function probeSocket(path: string, timeoutMs = 500): Promise<SocketState> {
  try {
    const st = await fsp.lstat(path);
    if (!st.isSocket()) {
      throw new AgentChatError(
        "IO_ERROR",
        `${path} exists and is not a socket; refusing to replace it (move it away first)`,
      );
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return "absent";
    throw wrapIoError(err, `cannot inspect ${path}`);
  }
  return new Promise((resolve) => {
    const socket = connect(path);
    const done = (state: SocketState) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(state);
    };
    const timer = setTimeout(() => done("live"), timeoutMs);
    socket.once("connect", () => done("live"));
    socket.once("error", (err: NodeJS.ErrnoException) => {
      if (err.code === "ECONNREFUSED") done("dead");
      else if (err.code === "ENOENT") done("absent");
      else done("live");
    });
  });
}

/**
 * Makes `dir` (and its parents) with mode 0700 and checks that it is ours: a real folder, owned
 * by this user, with no access for group or others. A folder of ours that has become more open
 * is closed again; one owned by someone else is refused, since they could swap our socket.
 */
export async function ensurePrivateDir(dir: string): Promise<void> {
  try {
    await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
    const st = await fsp.lstat(dir);
    if (!st.isDirectory()) {
      throw new AgentChatError("IO_ERROR", `${dir} is not a plain folder; refusing to use it`);
    }
    const uid = process.getuid?.();
    if (uid !== undefined && st.uid !== uid) {
      throw new AgentChatError(
        "IO_ERROR",
        `${dir} belongs to user ${st.uid}, not to you (${uid}); refusing to put a socket there`,
      );
    }
    if ((st.mode & 0o077) !== 0) await fsp.chmod(dir, 0o700);
  } catch (err) {
    throw wrapIoError(err, `cannot prepare the socket folder ${dir}`);
  }
}

export interface Bound {
  path: string;
  /** The inode we bound, so that we only ever remove our own socket file. */
  ino: number;
}

/**
 * Binds `server` at `path` after probing it: a live daemon there is refused with
 * `DAEMON_RUNNING`, a dead socket file is removed first. Probe, removal and bind happen under
 * a lock in `lockDir` (our private socket folder) so that two daemons starting at once cannot
 * both judge the same file dead and unlink each other's fresh socket.
 */
export async function bindSocket(server: Server, path: string, lockDir: string): Promise<Bound> {
  await fsp.mkdir(dirname(path), { recursive: true, mode: 0o700 }).catch((err) => {
    throw wrapIoError(err, `cannot create ${dirname(path)}`);
  });
  const release = await acquireDirLock(lockDir);
  try {
    const state = await probeSocket(path);
    if (state === "live") {
      throw new AgentChatError(
        "DAEMON_RUNNING",
        `a daemon is already listening on ${path}; stop it first (or use agent-chat info)`,
      );
    }
    if (state === "dead") await fsp.rm(path, { force: true });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(path, () => {
        server.off("error", reject);
        resolve();
      });
    }).catch((err) => {
      throw wrapIoError(err, `cannot listen on ${path}`);
    });
    // The folder is already 0700; 0600 on the socket keeps it private wherever it lives.
    await fsp.chmod(path, 0o600);
    return { path, ino: (await fsp.stat(path)).ino };
  } finally {
    await release();
  }
}

/** Removes a socket file we bound, unless it has since been replaced by someone else's. */
export async function unlinkOwnSocket(bound: Bound): Promise<void> {
  try {
    if ((await fsp.lstat(bound.path)).ino === bound.ino) await fsp.rm(bound.path, { force: true });
  } catch {
    // Already gone (Node removes it when the server closes).
  }
}
