import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    exclude: ["test/torture/**"],
    // A bound on a hang, not on speed: on a loaded 2-core machine a test that starts many
    // processes (or posts a thousand messages) can take several times what it takes alone.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Integration tests spawn real processes; two workers suit the 2-core machines we run on.
    maxWorkers: 2,
    // The user's own config folder is never the tests' (test/setup-env.ts).
    setupFiles: ["test/setup-env.ts"],
  },
});
