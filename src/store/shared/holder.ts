import { AgentChatError } from "../../core/errors.js";

/**
 * The holder checks of task leases and path leases: `NOT_HOLDER` naming the subject ("task 12",
 * "path lease 3 on src/**") and the first reason that applies, in the order given; nothing when
 * none does. A reason that does not apply is `false`.
 */
export function refuseNotHolder(subject: string, reasons: ReadonlyArray<string | false>): void {
  const why = reasons.find((reason): reason is string => reason !== false);
  if (why !== undefined) throw new AgentChatError("NOT_HOLDER", `${subject} ${why}`);
}
