import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";

/**
 * The agent-wake figures the docs' per-harness tables show (scripts/harness-tables.ts), one
 * entry per measured harness, kept from run to run: a run measuring some harnesses
 * (`AGENT_WAKE_ONLY`) replaces only theirs, and a harness that failed keeps its last figures.
 */
export interface WakeRecord {
  /** The host it is (`setup TOOL`). */
  tool: string;
  /** How it was woken and driven. */
  path: string;
  n: number;
  /** Milliseconds from the start of the post to the woken turn's first model request. */
  p50: number;
  max: number;
  /** When, with which Node, and how busy the machine was (1-minute load average at the start). */
  date: string;
  node: string;
  load: number;
  quick: boolean;
}

export type WakeRecords = Record<string, WakeRecord>;

export const WAKE_RECORDS_FILE = new URL("./results/agent-wake.json", import.meta.url);

export function readWakeRecords(): WakeRecords {
  if (!existsSync(WAKE_RECORDS_FILE)) return {};
  return JSON.parse(readFileSync(WAKE_RECORDS_FILE, "utf8")) as WakeRecords;
}

/** Keeps this run's figures beside the harnesses it did not measure, sorted by name. */
export function recordWakes(measured: WakeRecords): void {
  const all = { ...readWakeRecords(), ...measured };
  const sorted = Object.fromEntries(Object.entries(all).sort(([a], [b]) => a.localeCompare(b)));
  writeFileSync(WAKE_RECORDS_FILE, `${JSON.stringify(sorted, null, 2)}\n`);
}

/** The 1-minute load average, rounded, for the record. */
export const loadNow = (): number => Math.round(loadavg()[0]! * 10) / 10;
