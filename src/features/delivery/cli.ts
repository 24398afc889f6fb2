import type { Command } from "commander";
import { type CliContext, formatDuration, messageCommand } from "../../cli/context.js";
import type { PresenceInfo, Receipt, Receipts } from "../../store/types.js";

/** `receipts`, `explain` and `who`: what became of a message, and where everyone is. */
export function registerDeliveryCommands(program: Command, ctx: CliContext): void {
  messageCommand(program, ctx, {
    name: "receipts",
    description: "each addressee of a message: stored, notified, read or answered, with times",
    seq: "the message number",
    examples: ["agent-chat receipts review 3", "agent-chat --json receipts review 3"],
    run: async (store, channel, seq) => {
      const receipts = await store.receipts(channel, seq, { onWarning: (w) => ctx.warn(w) });
      if (ctx.json) return ctx.printJson(receipts);
      ctx.out(heading(receipts));
      for (const r of receipts.addressees) {
        const times = steps(r);
        ctx.out(`  ${r.agent}\t${r.state}${times ? `\t${times}` : ""}\n`);
      }
    },
  });

  messageCommand<{ for?: string }>(program, ctx, {
    name: "explain",
    description: "why a message is not read or answered: what is known, per addressee",
    seq: "the message number",
    options: (command) => command.option("--for <agent>", "only this addressee"),
    examples: ["agent-chat explain review 3", "agent-chat explain review 3 --for bob"],
    run: async (store, channel, seq, opts) => {
      const receipts = await store.explain(channel, seq, { onWarning: (w) => ctx.warn(w) });
      if (opts.for !== undefined) {
        const wanted = opts.for.trim().toLowerCase();
        receipts.addressees = receipts.addressees.filter((r) => r.agent.toLowerCase() === wanted);
        if (receipts.addressees.length === 0) {
          ctx.warn(`${opts.for} is not an addressee of #${receipts.seq} in ${channel}`);
        }
      }
      if (ctx.json) return ctx.printJson(receipts);
      ctx.out(heading(receipts));
      for (const r of receipts.addressees) ctx.out(`  ${r.agent}: ${r.why}\n`);
    },
  });

  program
    .command("who")
    .description("who is waiting, active, idle or gone; unread and owed answers per member")
    .argument("[channel]", "a channel: its members (or everyone seen in an open one)")
    .addHelpText("after", "\nExamples:\n  agent-chat who review\n  agent-chat --json who")
    .action(async (channel: string | undefined) => {
      const store = await ctx.open();
      const who = await store.who(channel, { onWarning: (w) => ctx.warn(w) });
      if (ctx.json) return ctx.printJson({ channel: channel ?? null, agents: who });
      if (who.length === 0) ctx.err(channel ? `nobody in ${channel}\n` : "nobody seen yet\n");
      const now = Date.now();
      for (const p of who) ctx.out(`${p.agent}\t${presenceText(p, now)}${owedText(p, now)}\n`);
    });
}

function heading(r: Receipts): string {
  return `#${r.seq} in ${r.channel} from ${r.from}: ${r.title}\n`;
}

function steps(r: Receipt): string {
  const parts: string[] = [];
  if (r.notifiedAt) parts.push(`notified ${r.notifiedAt}`);
  if (r.readAt) parts.push(`read ${r.readAt}`);
  else if (r.state === "read" || r.state === "answered") parts.push("read (no time kept)");
  if (r.answer !== undefined) parts.push(`answered ${r.answeredAt ?? ""} (#${r.answer})`.trim());
  return parts.join(", ");
}

/** `waiting on review, ops (claude-code, pid 42)`, `active 3s ago`, `idle since …`, `gone: …`. */
export function presenceText(p: PresenceInfo, now: number): string {
  const where = p.harness ? ` (${p.harness} on ${p.host}, pid ${p.pid})` : "";
  const ago = p.lastActive ? formatDuration(Math.max(0, now - Date.parse(p.lastActive))) : "";
  switch (p.state) {
    case "waiting":
      return `waiting on ${p.parkedOn?.join(", ")}${where}`;
    case "active":
      return `active ${ago} ago${where}`;
    case "idle":
      return `idle since ${p.lastActive}${where}`;
    case "gone":
      return `gone: ${p.why}${where}`;
    default:
      return "never seen";
  }
}

function owedText(p: PresenceInfo, now: number): string {
  const parts: string[] = [];
  if (p.unread) {
    const oldest = p.oldestUnread
      ? `, oldest ${formatDuration(Math.max(0, now - Date.parse(p.oldestUnread)))} ago`
      : "";
    parts.push(`${p.unread} unread${oldest}`);
  }
  if (p.owes && p.owes.length > 0) {
    parts.push(`owes an answer to ${p.owes.map((seq) => `#${seq}`).join(", ")}`);
  }
  return parts.length > 0 ? `\t${parts.join("; ")}` : "";
}
