import { lstatSync, type Stats } from "node:fs";
import { dirname } from "node:path";

/**
 * Whether a daemon socket may be trusted (docs/daemon.md, "Whose socket"). A client hands the
 * daemon every post and takes its answers as the root's own, so the socket must be this user's
 * own daemon's; Node offers no peer credentials, so that is known from the file system alone:
 * the socket's folder is a real folder of this user that no one else may write in (so no one
 * else could have bound a socket there, nor can swap it), and the socket itself is this user's.
 * Undefined when it may be trusted, else why not, in words for a warning. Nothing there (no
 * folder, no socket) is no reason: connecting then fails on its own. `uid` undefined (a system
 * without users) trusts.
 */
export function untrustedSocket(
  path: string,
  uid: number | undefined = process.getuid?.(),
): string | undefined {
  if (uid === undefined) return undefined;
  const folder = dirname(path);
  const dir = lstatOrUndefined(folder);
  if (dir === undefined) return undefined;
  const folderProblem = notOwnFolder(dir, folder, uid);
  if (folderProblem) return folderProblem;
  // In a sticky folder (/tmp) others may add names but not remove or replace ours, so only
  // the socket's owner below decides.
  if ((dir.mode & 0o022) !== 0 && (dir.mode & 0o1000) === 0) {
    return `its folder ${folder} may be written by others (mode ${octal(dir.mode)})`;
  }
  const socket = lstatOrUndefined(path);
  if (socket === undefined) return undefined;
  if (!socket.isSocket()) return `${path} is not a socket`;
  if (socket.uid !== uid) return `${path} belongs to user ${socket.uid}, not to you (${uid})`;
  return undefined;
}

/**
 * Whether a folder where our sockets would go exists and is not a real folder of this user:
 * another user made it first (in a shared /tmp), or it is a link. Then neither `serve` nor a
 * client uses it, and both take the user's own fallback folder instead.
 */
export function takenByOthers(
  folder: string,
  uid: number | undefined = process.getuid?.(),
): boolean {
  if (uid === undefined) return false;
  const dir = lstatOrUndefined(folder);
  return dir !== undefined && notOwnFolder(dir, folder, uid) !== undefined;
}

function notOwnFolder(dir: Stats, folder: string, uid: number): string | undefined {
  if (dir.isSymbolicLink()) return `its folder ${folder} is a symbolic link`;
  if (!dir.isDirectory()) return `${folder} is not a folder`;
  if (dir.uid !== uid)
    return `its folder ${folder} belongs to user ${dir.uid}, not to you (${uid})`;
  return undefined;
}

function lstatOrUndefined(path: string): Stats | undefined {
  try {
    return lstatSync(path, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}

const octal = (mode: number) => (mode & 0o7777).toString(8).padStart(4, "0");
