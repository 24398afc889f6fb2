import { formatDuration } from "../../core/duration.js";
import { AgentChatError } from "../../core/errors.js";
import type { PathLeaseInfo, Store, TaskInfo } from "../../store/types.js";

/** chat_tasks' lease actions: renew a task, lease paths, list and release path leases. */
export type LeaseAction = "renew" | "lease" | "leases" | "unlease";

export interface LeaseArgs {
  action: LeaseAction;
  channel: string;
  task?: string | undefined;
  paths?: string | undefined;
  body?: string | undefined;
}

export async function leaseAction(store: Store, agent: string, args: LeaseArgs): Promise<string> {
  const { channel } = args;
  switch (args.action) {
    case "renew": {
      if (!args.task) throw new AgentChatError("INVALID_ARGUMENT", "action renew needs task");
      const info = await store.renew(channel, args.task, agent);
      return `Renewed task ${info.id} in ${channel} (${taskLeft(info)}).`;
    }
    case "lease": {
      const options = args.body?.trim() ? { reason: args.body } : {};
      const info = await store.addPathLease(channel, needPaths(args), agent, options);
      return (
        `Leased ${info.pattern} in ${channel} (${pathLeft(info)}): other agents' commits there ` +
        "are refused while you stay active in the channel; unlease it when done."
      );
    }
    case "leases": {
      const leases = await store.pathLeases(channel);
      if (leases.length === 0) return `No path leases in ${channel}.`;
      return leases
        .map((l) => [l.pattern, l.holder, pathLeft(l), l.reason].filter(Boolean).join(" · "))
        .join("\n");
    }
    case "unlease": {
      const info = await store.releasePathLease(channel, needPaths(args), agent);
      return `Released ${info.pattern} in ${channel} (token ${info.token}).`;
    }
  }
}

function needPaths(args: LeaseArgs): string {
  if (!args.paths) {
    throw new AgentChatError("INVALID_ARGUMENT", `action ${args.action} needs paths (a glob)`);
  }
  return args.paths;
}

function left(expiresAt: string): string {
  const ms = Date.parse(expiresAt) - Date.now();
  return ms >= 0 ? `${formatDuration(ms)} left` : "expired";
}

function taskLeft(t: TaskInfo): string {
  return `token ${t.token}, ${t.expiresAt === undefined ? "no expiry" : left(t.expiresAt)}`;
}

function pathLeft(l: PathLeaseInfo): string {
  const kind = `${l.exclusive ? "exclusive" : "shared"}, token ${l.token}`;
  return l.state === "live" ? `${kind}, ${left(l.expiresAt)}` : `${kind}, ${l.state}`;
}
