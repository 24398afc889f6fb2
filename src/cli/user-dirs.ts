import { isAbsolute, join } from "node:path";

/**
 * The user's own folders, never in the root (which others write). A relative XDG variable is
 * ignored (XDG Base Directory spec): it would resolve in the working folder, which may be the root.
 */
function xdgBase(value: string | undefined, home: string, fallback: string[]): string {
  return value && isAbsolute(value) ? value : join(home, ...fallback);
}

/** Keys and pins: `$XDG_CONFIG_HOME/agent-chat`, else `~/.config/agent-chat`. */
export function userConfigDir(env: NodeJS.ProcessEnv, home: string): string {
  return join(xdgBase(env.XDG_CONFIG_HOME, home, [".config"]), "agent-chat");
}

/** `$XDG_STATE_HOME/agent-chat/hook-sessions`, default `~/.local/state/agent-chat/hook-sessions`. */
export function hookStateDir(env: NodeJS.ProcessEnv, home: string): string {
  return join(
    xdgBase(env.XDG_STATE_HOME, home, [".local", "state"]),
    "agent-chat",
    "hook-sessions",
  );
}

/**
 * The daemon's sockets when the shared socket folder is another user's:
 * `$XDG_STATE_HOME/agent-chat/sockets`, default `~/.local/state/agent-chat/sockets`.
 */
export function ownSocketDir(env: NodeJS.ProcessEnv, home: string): string {
  return join(xdgBase(env.XDG_STATE_HOME, home, [".local", "state"]), "agent-chat", "sockets");
}

/**
 * Node's compile cache for our files: `$XDG_CACHE_HOME/agent-chat/node`, else
 * `~/.cache/agent-chat/node`; none without an absolute home.
 */
export function compileCacheDir(env: NodeJS.ProcessEnv): string | undefined {
  const home = env.HOME;
  if (!(env.XDG_CACHE_HOME && isAbsolute(env.XDG_CACHE_HOME)) && !(home && isAbsolute(home))) {
    return undefined;
  }
  return join(xdgBase(env.XDG_CACHE_HOME, home ?? "", [".cache"]), "agent-chat", "node");
}
