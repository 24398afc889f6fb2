import { afterAll, beforeAll, describe, it } from "vitest";
import { openStore } from "../../src/client/open.js";
import { NatsServer, natsSkipReason } from "../helpers/nats-server.js";
import { storeConformance } from "./suite.js";

// One server for the file; every test gets a fresh namespace (its own stream and bucket).
let server: NatsServer | undefined;
let counter = 0;

const skipReason = natsSkipReason;
if (skipReason) {
  describe("Store conformance: nats", () => {
    it.skip(skipReason, () => {});
  });
} else {
  beforeAll(async () => {
    server = await NatsServer.start();
  });
  afterAll(async () => {
    await server?.dispose();
  });

  storeConformance("nats", async (now) => {
    const url = server!.url(`conf${process.pid}-${++counter}`);
    return {
      open: () => openStore(url, { now }),
      // The server and its store directory go at the end of the file.
      cleanup: async () => {},
    };
  });
}
