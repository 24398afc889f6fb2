import { realpathSync } from "node:fs";
import { join, resolve } from "node:path";
import { shortHash } from "../core/hash.js";

/** A Unix socket path must fit `sockaddr_un.sun_path` (108 bytes with the NUL on Linux). */
export const MAX_SOCKET_PATH_BYTES = 107;

export interface SocketPlace {
  /** `$XDG_RUNTIME_DIR` when set (a per-user, 0700, tmpfs folder on systemd machines). */
  runtimeDir?: string | undefined;
  /** The fallback parent (os.tmpdir()). */
  tmpDir: string;
  /** The user id, so that users sharing /tmp never share a folder. */
  uid: number;
}

/**
 * The folder that holds our sockets: `$XDG_RUNTIME_DIR/agent-chat` or `<tmp>/agent-chat-<uid>`.
 * It is created 0700 by {@link ensurePrivateDir} before any socket is bound in it.
 */
export function socketDir(place: SocketPlace): string {
  if (place.runtimeDir?.startsWith("/")) return join(place.runtimeDir, "agent-chat");
  return join(place.tmpDir, `agent-chat-${place.uid}`);
}

/**
 * The root's absolute path with symlinks resolved where it exists, so that `./chat`,
 * `/home/me/chat/` and a symlink to it all name one daemon.
 */
export function canonicalRoot(root: string): string {
  const abs = resolve(root);
  try {
    return realpathSync(abs);
  } catch {
    return abs;
  }
}

/**
 * The socket of the daemon that owns `root`: a short hash of the canonical root, so the path
 * stays far below the 108-byte limit however long the root is. When even that is too long
 * (a deep `$XDG_RUNTIME_DIR`), `/tmp` is used instead.
 */
export function socketPathFor(root: string, place: SocketPlace): string {
  const hash = shortHash(canonicalRoot(root));
  const path = join(socketDir(place), `${hash}.sock`);
  if (Buffer.byteLength(path) <= MAX_SOCKET_PATH_BYTES) return path;
  return join(socketDir({ tmpDir: "/tmp", uid: place.uid }), `${hash}.sock`);
}

/** Where unmodified b00t clients write (seed 002). */
export function b00tSocketPath(home: string): string {
  return join(home, ".b00t", "chat.channel.socket");
}
