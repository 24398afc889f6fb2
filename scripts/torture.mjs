// Runs the torture suite; `--full` selects the full sizes (AGENT_CHAT_TORTURE=full), every other
// argument goes to vitest (CI passes its reporters through).
import { spawnSync } from "node:child_process";

const args = process.argv.slice(2);
const full = args.includes("--full");
const rest = args.filter((a) => a !== "--full");
const r = spawnSync(
  process.execPath,
  ["node_modules/vitest/vitest.mjs", "run", "--config", "vitest.torture.config.ts", ...rest],
  { stdio: "inherit", env: { ...process.env, AGENT_CHAT_TORTURE: full ? "full" : "bounded" } },
);
process.exit(r.status ?? 1);
