import { renameSync, writeFileSync } from "node:fs";

/**
 * How an agent's own hooks tell `agent-chat run` where its turns start and end: run names a
 * file of its private folder in this variable of the agent's environment, and the hooks that
 * setup writes (the prompt and stop events) mark "busy" or "idle" in it. Idleness is then the
 * tool's own word, not a guess from a quiet screen.
 */
export const TURN_MARK_ENV = "AGENT_CHAT_RUN_TURN";

export type TurnState = "busy" | "idle";

/** Marks the turn, whole or not at all (run reads the file when its folder changes). */
export function markTurn(path: string, state: TurnState): void {
  const next = `${path}.${process.pid}`;
  writeFileSync(next, state);
  renameSync(next, path);
}
