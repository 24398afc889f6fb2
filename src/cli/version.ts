declare const __VERSION__: string | undefined;

/** This build's version (the bundles define it; run from source, it is a dev build's). */
export const VERSION = typeof __VERSION__ === "string" ? __VERSION__ : "0.0.0-dev";

/**
 * The line to warn with when a running daemon is another release than this CLI (say, one
 * started before an upgrade): the two then disagree on the wire (an error's chat.py code, new
 * operations), so the user is told to restart it. Nothing for a dev build on either side.
 */
export function otherDaemonVersion(daemon: string, socket: string): string | undefined {
  const release = /^\d+\.\d+\.\d+/;
  if (daemon === VERSION || !release.test(daemon) || !release.test(VERSION)) return undefined;
  return (
    `the daemon at ${socket} runs agent-chat ${daemon}, this is ${VERSION}: ` +
    "restart it (stop it, then agent-chat serve) so that both speak the same protocol"
  );
}
