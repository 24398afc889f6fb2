import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/*
 * Every test worker, and every CLI, daemon and MCP server a test starts (they inherit the
 * environment), keeps its keys, pins and trust in a folder of its own unless the test names
 * another: never in the user's `~/.config/agent-chat`, where a key or a pin a test left behind
 * would change what the next run verifies, and where every root a test made would pile up.
 */
process.env.XDG_CONFIG_HOME ??= mkdtempSync(join(tmpdir(), "agent-chat-test-config-"));
