import type {
  Transport,
  TransportSendOptions,
} from "@modelcontextprotocol/sdk/shared/transport.js";
import type {
  JSONRPCMessage,
  MessageExtraInfo,
  RequestId,
} from "@modelcontextprotocol/sdk/types.js";

import { defuseFooters, normaliseSdkError } from "./format.js";

/**
 * Wraps the stdio transport so that EVERY `tools/call` result leaves with the unread footer as
 * its last content block: our own results, and also the error results the SDK builds itself
 * (unknown tool, arguments that fail the input schema), which never pass through our handlers
 * and are reworded here into our error form. Every text before the footer is defused first
 * (defuseFooters), so that the footer is the only one an agent can find.
 */
export class FooterTransport implements Transport {
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?:
    | (<T extends JSONRPCMessage>(message: T, extra?: MessageExtraInfo) => void)
    | undefined;
  private readonly toolCalls = new Set<RequestId>();

  constructor(
    private readonly inner: Transport,
    private readonly footer: () => Promise<string>,
  ) {
    inner.onclose = () => this.onclose?.();
    inner.onerror = (error) => this.onerror?.(error);
    inner.onmessage = (message, extra) => {
      this.track(message);
      this.onmessage?.(message, extra);
    };
  }

  start(): Promise<void> {
    return this.inner.start();
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  async send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    if ("id" in message && "result" in message && this.toolCalls.delete(message.id)) {
      const result = message.result as { content?: unknown; isError?: boolean };
      if (Array.isArray(result.content)) {
        if (result.isError) normaliseSdkError(result.content[0]);
        for (const block of result.content as Array<{ type?: unknown; text?: unknown }>) {
          if (block?.type === "text" && typeof block.text === "string") {
            block.text = defuseFooters(block.text);
          }
        }
        result.content.push({ type: "text", text: await this.footerOrNote() });
      }
    }
    return this.inner.send(message, options);
  }

  private track(message: JSONRPCMessage): void {
    if (!("method" in message)) return;
    if (message.method === "tools/call" && "id" in message) this.toolCalls.add(message.id);
    // A cancelled call gets no response: forget it.
    if (message.method === "notifications/cancelled") {
      const id = (message.params as { requestId?: RequestId } | undefined)?.requestId;
      if (id !== undefined) this.toolCalls.delete(id);
    }
  }

  /** Counting must never cost the result itself: a failed count becomes a note. */
  private async footerOrNote(): Promise<string> {
    try {
      return await this.footer();
    } catch (err) {
      return `(agent-chat: unread count unavailable: ${(err as Error).message})`;
    }
  }
}
