import { join, resolve } from "node:path";
import { afterAll } from "vitest";
import { openStore } from "../../src/client/open.js";
import { createIdentity } from "../../src/features/trust/identity.js";
import { FsStore } from "../../src/store/fs/index.js";
import { NatsStore } from "../../src/store/nats/index.js";
import type { Store } from "../../src/store/types.js";
import { NatsServer, natsSkipReason } from "../helpers/nats-server.js";
import { tempDir } from "../helpers/tmp.js";

/**
 * One root on a backend, as the trust tests see it: the stores of users who hold their own keys
 * (each with its own config folder, as agents kept apart should be), and the raw backend a
 * member who writes the root directly uses (no signature, no policy, no checks of ours).
 */
export interface TrustRoot {
  root: string;
  /** The store of a user whose config folder is `user` (keys and pins made on first use). */
  as(user: string): Promise<Store>;
  /** Makes `name`'s key in `user`'s config folder. */
  key(user: string, name: string): Promise<void>;
  /** The backend itself, as a member who writes files by hand reaches it. */
  raw(): Promise<Store>;
  configDir(user: string): string;
}

export interface TrustBackend {
  name: string;
  skip: string | undefined;
  /** A fresh root; everything it opened is closed by the suite's afterEach. */
  make(): Promise<TrustRoot>;
  close(): Promise<void>;
}

/** The folder store and, when a nats-server is here, NATS JetStream. */
export function trustBackends(): TrustBackend[] {
  const tmp = tempDir("agent-chat-trust-");
  let server: NatsServer | undefined;
  let n = 0;
  const opened: Store[] = [];
  const track = <S extends Store>(s: S): S => {
    opened.push(s);
    return s;
  };
  const rootOf = (root: string, raw: () => Promise<Store>, isFolder: boolean): TrustRoot => {
    const configDir = (user: string) => join(tmp.dir, `config-${n}-${user}`);
    const as = async (user: string) =>
      track(await openStore(root, { signatures: { configDir: configDir(user) } }));
    return {
      root,
      configDir,
      as,
      raw: async () => track(await raw()),
      key: async (user, name) => {
        const s = await as(user);
        await createIdentity(
          {
            configDir: configDir(user),
            root: isFolder ? root : undefined,
            ...(s.publishedKeys ? { directory: s.publishedKeys } : {}),
            rootId: isFolder ? resolve(root) : s.location,
          },
          name,
        );
      },
    };
  };
  const closeAll = async () => {
    for (const s of opened.splice(0)) await s.close().catch(() => {});
  };
  const folder: TrustBackend = {
    name: "folder",
    skip: undefined,
    make: async () => {
      n++;
      const root = join(tmp.dir, `root-${n}`);
      return rootOf(root, async () => new FsStore(root), true);
    },
    close: closeAll,
  };
  const nats: TrustBackend = {
    name: "nats",
    skip: natsSkipReason,
    make: async () => {
      n++;
      server ??= await NatsServer.start();
      const root = server.url(`trust${n}`);
      return rootOf(root, () => NatsStore.open(root), false);
    },
    close: closeAll,
  };
  afterAll(async () => {
    await closeAll();
    await server?.dispose();
    tmp.cleanup();
  });
  return [folder, nats];
}
