import { afterAll, beforeAll, describe } from "vitest";
import { NatsServer, natsSkipReason } from "./nats-server.js";
import { skipName } from "./tools.js";

/**
 * A describe block whose tests share one real nats-server, started before them and disposed
 * after; skipped outside CI (the reason in its name) where the server is missing, failing in CI.
 * `server()` is the running server, for the tests' bodies.
 */
export function describeNats(name: string, tests: (server: () => NatsServer) => void): void {
  describe.skipIf(natsSkipReason !== undefined)(skipName(name, natsSkipReason), () => {
    let running: NatsServer | undefined;
    beforeAll(async () => {
      running = await NatsServer.start();
    });
    afterAll(async () => {
      await running?.dispose();
    });
    tests(() => {
      if (running === undefined) throw new Error("the nats-server of this block did not start");
      return running;
    });
  });
}
