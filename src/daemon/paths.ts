import { dirname, join } from "node:path";
import { shortHash } from "../core/hash.js";
import { canonicalRoot, type ParsedRoot } from "../store/roots.js";

/** A Unix socket path must fit `sockaddr_un.sun_path` (108 bytes with the NUL on Linux). */
export const MAX_SOCKET_PATH_BYTES = 107;

export interface SocketPlace {
  /** `$XDG_RUNTIME_DIR` when set (a per-user, 0700, tmpfs folder on systemd machines). */
  runtimeDir?: string | undefined;
  /** The fallback parent (os.tmpdir()). */
  tmpDir: string;
  /** The user id, so that users sharing /tmp never share a folder. */
  uid: number;
  /**
   * A folder of the user's own (`$XDG_STATE_HOME/agent-chat/sockets`), used when the shared one
   * is taken by another user: who makes `<tmp>/agent-chat-<uid>` first owns it.
   */
  ownDir?: string | undefined;
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
 * The socket of the daemon that owns `root`: a short hash of the canonical root (a folder's real
 * path, a NATS root's servers and namespace), so every working folder and spelling of one root
 * finds one daemon, and the path stays far below the 108-byte limit however long the root is.
 * When even that is too long (a deep `$XDG_RUNTIME_DIR`), `/tmp` is used instead; when the folder
 * chosen is another user's (made first in a shared /tmp), the user's own `ownDir`.
 */
export function socketPathFor(
  root: string | ParsedRoot,
  place: SocketPlace,
  /** Whether a folder exists and is not the user's (socket-trust.ts): then `ownDir` is used. */
  taken: (folder: string) => boolean = () => false,
): string {
  const name = `${shortHash(canonicalRoot(root))}.sock`;
  let path = join(socketDir(place), name);
  if (Buffer.byteLength(path) > MAX_SOCKET_PATH_BYTES) {
    path = join(socketDir({ tmpDir: "/tmp", uid: place.uid }), name);
  }
  return place.ownDir !== undefined && taken(dirname(path)) ? join(place.ownDir, name) : path;
}

/** Where unmodified b00t clients write (seed 002). */
export function b00tSocketPath(home: string): string {
  return join(home, ".b00t", "chat.channel.socket");
}
