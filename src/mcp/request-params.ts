import { ClientRequestSchema, type JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

/** The SDK's schema of each request a client may send, by method. */
const SCHEMAS = new Map(
  ClientRequestSchema.options.map((schema) => [schema.shape.method.value, schema]),
);

/**
 * Why a request's params do not fit its method, in one line, or undefined when they do (or the
 * method is unknown: the SDK answers that with "method not found"). The SDK checks them too,
 * but answers a failure as an internal error (-32603) whose message is the raw schema report:
 * a client that forgot `params` deserves -32602 and a sentence.
 */
export function paramsProblem(message: JSONRPCMessage): string | undefined {
  if (!("method" in message) || !("id" in message)) return undefined;
  const schema = SCHEMAS.get(message.method as never);
  if (schema === undefined) return undefined;
  const parsed = schema.safeParse(message);
  if (parsed.success) return undefined;
  const issues = parsed.error.issues.map((issue) => {
    const where = issue.path.map(String).join(".") || "request";
    return `${where}: ${issue.message.replace(/^Invalid input: /, "")}`;
  });
  return `invalid params of ${message.method}: ${issues.join("; ")}`;
}
