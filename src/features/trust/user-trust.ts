import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { identity } from "../../core/names.js";
import { isKeyText } from "../../core/signature.js";
import { replaceFileSync } from "../../fsutil/root-files.js";
import type { ChannelPin, PinBook } from "../governance/index.js";

/**
 * What the user trusts in a root beyond the pinned keys (docs/signatures.md, "Threat model"):
 * kept in `<config>/trust.json`, per root, never in the root (which every poster writes).
 *
 * - `authorities`: names the user chose to vouch for other names' keys (`agent-chat id
 *   authority add`), each with the keys the user accepted for it. A key approval in a published
 *   key file counts only when an authority signed it.
 * - `channels`: the strictest policy this user has seen per channel and the last seq at which it
 *   was pinned; a `_meta.json` that states a weaker one is reported, not obeyed.
 */
export interface UserTrust extends PinBook {
  authorityKeys(name: string): string[] | undefined;
  authorities(): Record<string, string[]>;
  setAuthority(name: string, keys: string[] | undefined): void;
}

interface RootTrust {
  authorities?: Record<string, string[]>;
  channels?: Record<string, ChannelPin>;
}

/** Trust that lasts as long as the process: a library user who gave no config folder. */
export function memoryTrust(): UserTrust {
  let state: RootTrust = {};
  return trustOver({
    load: () => state,
    save: (next) => {
      state = next;
    },
  });
}

/**
 * Trust kept in `<config>/trust.json`, `{ "<root>": { authorities, channels } }`, re-read on each
 * look-up (another process may have pinned meanwhile) and replaced atomically on each change.
 * `alias`: another name of the root, read when the root has no entry under `rootId` yet (as
 * {@link filePins} does).
 */
export function fileTrust(configDir: string, rootId: string, alias?: string): UserTrust {
  const load = (): Record<string, RootTrust> => {
    try {
      const data = JSON.parse(readFileSync(join(configDir, "trust.json"), "utf8")) as unknown;
      return typeof data === "object" && data !== null && !Array.isArray(data)
        ? (data as never)
        : {};
    } catch {
      return {};
    }
  };
  return trustOver({
    load: () => {
      const all = load();
      return all[rootId] ?? (alias === undefined ? undefined : all[alias]) ?? {};
    },
    save: (next) => {
      const all = load();
      all[rootId] = next;
      mkdirSync(configDir, { recursive: true, mode: 0o700 });
      replaceFileSync(configDir, "trust.json", `${JSON.stringify(all, null, 2)}\n`, 0o600);
    },
  });
}

function trustOver(io: { load(): RootTrust; save(next: RootTrust): void }): UserTrust {
  const authorities = (): Record<string, string[]> => {
    const all = io.load().authorities ?? {};
    return Object.fromEntries(
      Object.entries(all).filter(([, keys]) => Array.isArray(keys) && keys.every(isKeyText)),
    );
  };
  return {
    authorities,
    authorityKeys: (name) => authorities()[identity(name)],
    setAuthority(name, keys) {
      const state = io.load();
      const next = { ...state.authorities };
      if (keys === undefined) delete next[identity(name)];
      else next[identity(name)] = keys;
      io.save({ ...state, authorities: next });
    },
    channelPin(channel) {
      const pin = io.load().channels?.[channel];
      const valid =
        typeof pin === "object" &&
        pin !== null &&
        typeof pin.policy === "object" &&
        pin.policy !== null &&
        Number.isSafeInteger(pin.asOf);
      return valid ? pin : undefined;
    },
    setChannelPin(channel, pin) {
      const state = io.load();
      io.save({ ...state, channels: { ...state.channels, [channel]: pin } });
    },
  };
}
