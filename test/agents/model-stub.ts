import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A stand-in for the model APIs on 127.0.0.1, so the real agent tools run with no model
 * reachable. Each conversation goes the same way: the model makes the script's calls one after
 * the other (the next one once the request holds as many tool results as calls made so far, and
 * only if the request offers that tool), then answers with plain text. Every request is kept, so
 * a test can look for what hooks added to it and what the tools gave back.
 */
export interface StubRequest {
  path: string;
  body: string;
  /** When it arrived whole, on this process's `performance.now()` clock. */
  at: number;
}

export interface ModelStub {
  url: string;
  requests: StubRequest[];
  close(): Promise<void>;
}

export interface StubCall {
  /** The end of the tool's name as the host lists it (hosts prefix MCP tools with the server). */
  toolSuffix: string;
  args: Record<string, unknown>;
  /** Made only in a conversation whose request holds this text (e.g. a notice typed into it). */
  onlyIf?: string;
  /** How many times the request must hold `onlyIf` (default 1): e.g. the second wake's call. */
  times?: number;
}

/** Whether a request's body meets the call's condition. */
function meets(call: StubCall, body: string): boolean {
  if (call.onlyIf === undefined) return true;
  return body.split(call.onlyIf).length - 1 >= (call.times ?? 1);
}

export interface StubScript {
  /** The calls of each conversation, in order (none: each turn is one plain answer). */
  calls: StubCall[];
  /** The final answer. */
  text: string;
}

/** The script's next call, given how many tool results the conversation holds so far. */
function nextCall(script: StubScript, results: number): StubCall | undefined {
  return script.calls[results];
}

export async function startModelStub(script: StubScript): Promise<ModelStub> {
  const requests: StubRequest[] = [];
  const server: Server = createServer((req, res) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (d: string) => {
      body += d;
    });
    req.on("end", () => {
      requests.push({ path: req.url ?? "", body, at: performance.now() });
      try {
        const calls = script.calls.filter((c) => meets(c, body));
        route(req, res, body, { ...script, calls });
      } catch (err) {
        res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: String(err) } }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function route(req: IncomingMessage, res: ServerResponse, body: string, script: StubScript): void {
  const path = (req.url ?? "").split("?")[0]!;
  if (req.method === "POST" && path.endsWith("/v1/messages")) {
    anthropicMessages(res, JSON.parse(body), script);
    return;
  }
  if (req.method === "POST" && path.endsWith(":countTokens")) {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ totalTokens: 10 }));
    return;
  }
  if (req.method === "POST" && /:(stream)?generateContent$/i.test(path)) {
    geminiGenerate(res, JSON.parse(body), script, path.endsWith(":streamGenerateContent"));
    return;
  }
  if (req.method === "POST" && path.endsWith("/responses")) {
    openaiResponses(res, JSON.parse(body), script);
    return;
  }
  if (req.method === "POST" && path.endsWith("/chat/completions")) {
    chatCompletions(res, JSON.parse(body), script);
    return;
  }
  res.writeHead(404, { "content-type": "application/json" });
  res.end(JSON.stringify({ error: { type: "not_found", message: `no ${req.method} ${path}` } }));
}

type Json = Record<string, unknown>;

/** Server-sent events; `done` ends with OpenAI's `data: [DONE]`. */
function sse(res: ServerResponse, events: [string | undefined, Json][], done = false): void {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  for (const [event, data] of events) {
    res.write(`${event ? `event: ${event}\n` : ""}data: ${JSON.stringify(data)}\n\n`);
  }
  if (done) res.write("data: [DONE]\n\n");
  res.end();
}

/** Anthropic Messages API (Claude Code): streamed or not, a tool_use turn then a text turn. */
function anthropicMessages(res: ServerResponse, request: Json, script: StubScript): void {
  const messages = (request.messages as { content?: unknown }[] | undefined) ?? [];
  const results = messages
    .flatMap((m) => (Array.isArray(m.content) ? m.content : []))
    .filter((b: Json) => b?.type === "tool_result").length;
  const call = nextCall(script, results);
  // A deferred tool (`defer_loading`, behind Claude Code's ToolSearch) is not shown to the model.
  const tools = (request.tools as { name?: string; defer_loading?: boolean }[] | undefined) ?? [];
  const tool =
    call && tools.find((t) => t.defer_loading !== true && t.name?.endsWith(call.toolSuffix))?.name;
  const block: Json =
    call && tool
      ? { type: "tool_use", id: `toolu_stub_${results + 1}`, name: tool, input: call.args }
      : { type: "text", text: script.text };
  const stop = block.type === "tool_use" ? "tool_use" : "end_turn";
  const message = {
    id: `msg_stub_${Date.now()}`,
    type: "message",
    role: "assistant",
    model: String(request.model ?? "stub"),
    stop_reason: null,
    stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 1 },
  };
  if (request.stream !== true) {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ ...message, content: [block], stop_reason: stop }));
    return;
  }
  const start = block.type === "tool_use" ? { ...block, input: {} } : { type: "text", text: "" };
  const delta =
    block.type === "tool_use"
      ? { type: "input_json_delta", partial_json: JSON.stringify(block.input) }
      : { type: "text_delta", text: script.text };
  sse(res, [
    ["message_start", { type: "message_start", message: { ...message, content: [] } }],
    ["content_block_start", { type: "content_block_start", index: 0, content_block: start }],
    ["content_block_delta", { type: "content_block_delta", index: 0, delta }],
    ["content_block_stop", { type: "content_block_stop", index: 0 }],
    [
      "message_delta",
      {
        type: "message_delta",
        delta: { stop_reason: stop, stop_sequence: null },
        usage: { output_tokens: 5 },
      },
    ],
    ["message_stop", { type: "message_stop" }],
  ]);
}

/** OpenAI Responses API (Codex), streamed: a function_call turn then a message turn. */
function openaiResponses(res: ServerResponse, request: Json, script: StubScript): void {
  type Tool = { type?: string; name?: string; tools?: Tool[] };
  const input = (request.input as { type?: string }[] | undefined) ?? [];
  const results = input.filter((item) => item?.type === "function_call_output").length;
  const next = nextCall(script, results);
  // Codex lists each MCP server's tools in a namespace (mcp__agent_chat) of plain functions.
  let call: Json | undefined;
  for (const t of next ? ((request.tools as Tool[] | undefined) ?? []) : []) {
    if (t.name?.endsWith(next!.toolSuffix)) call = { name: t.name };
    const inner = t.tools?.find((f) => f.name?.endsWith(next!.toolSuffix));
    if (t.type === "namespace" && inner) call = { namespace: t.name, name: inner.name };
  }
  const id = `resp_stub_${Date.now()}`;
  const item: Json =
    call && next
      ? {
          type: "function_call",
          id: `fc_stub_${results + 1}`,
          call_id: `call_stub_${results + 1}`,
          ...call,
          arguments: JSON.stringify(next.args),
        }
      : {
          type: "message",
          id: "msg_stub_1",
          role: "assistant",
          status: "completed",
          content: [{ type: "output_text", text: script.text, annotations: [] }],
        };
  const usage = {
    input_tokens: 10,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: 5,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: 15,
  };
  sse(res, [
    ["response.created", { type: "response.created", response: { id, status: "in_progress" } }],
    ["response.output_item.done", { type: "response.output_item.done", output_index: 0, item }],
    [
      "response.completed",
      { type: "response.completed", response: { id, status: "completed", output: [item], usage } },
    ],
  ]);
}

/** OpenAI Chat Completions (Qwen Code and other OpenAI-compatible clients): streamed or not. */
function chatCompletions(res: ServerResponse, request: Json, script: StubScript): void {
  type Message = { role?: string };
  type Tool = { function?: { name?: string } };
  const messages = (request.messages as Message[] | undefined) ?? [];
  const results = messages.filter((m) => m?.role === "tool").length;
  const next = nextCall(script, results);
  const names = ((request.tools as Tool[] | undefined) ?? []).map((t) => t.function?.name ?? "");
  const tool = next && names.find((n) => n.endsWith(next.toolSuffix));
  const call = tool && {
    index: 0,
    id: `call_stub_${results + 1}`,
    type: "function",
    function: { name: tool, arguments: JSON.stringify(next.args) },
  };
  const finish = call ? "tool_calls" : "stop";
  const base = { id: `chatcmpl_stub_${Date.now()}`, created: 0, model: String(request.model) };
  const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
  if (request.stream !== true) {
    const message = call
      ? { role: "assistant", content: null, tool_calls: [call] }
      : { role: "assistant", content: script.text };
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        ...base,
        object: "chat.completion",
        choices: [{ index: 0, message, finish_reason: finish }],
        usage,
      }),
    );
    return;
  }
  const chunk = (delta: Json, finishReason: string | null, more: Json = {}): [undefined, Json] => [
    undefined,
    {
      ...base,
      object: "chat.completion.chunk",
      choices: [{ index: 0, delta, finish_reason: finishReason }],
      ...more,
    },
  ];
  const delta = call
    ? { role: "assistant", tool_calls: [call] }
    : { role: "assistant", content: script.text };
  sse(res, [chunk(delta, null), chunk({}, finish, { usage })], true);
}

/** Gemini API (Gemini CLI), streamed or not: a functionCall turn then a text turn. */
function geminiGenerate(
  res: ServerResponse,
  request: Json,
  script: StubScript,
  stream: boolean,
): void {
  type Declarations = { functionDeclarations?: { name?: string }[] };
  const names = ((request.tools as Declarations[] | undefined) ?? []).flatMap((t) =>
    (t.functionDeclarations ?? []).map((f) => f.name ?? ""),
  );
  const contents = (request.contents as { parts?: Json[] }[] | undefined) ?? [];
  const results = contents
    .flatMap((c) => c.parts ?? [])
    .filter((p) => p.functionResponse !== undefined).length;
  const call = nextCall(script, results);
  const tool = call && names.find((n) => n.endsWith(call.toolSuffix));
  const config = (request.generationConfig ?? {}) as { responseJsonSchema?: Schema };
  // Side requests (Gemini CLI's model router, its next-speaker check) ask for JSON of a schema.
  const part = config.responseJsonSchema
    ? { text: JSON.stringify(fromSchema(config.responseJsonSchema)) }
    : call && tool
      ? { functionCall: { name: tool, args: call.args } }
      : { text: script.text };
  const chunk = {
    candidates: [{ content: { role: "model", parts: [part] }, finishReason: "STOP", index: 0 }],
    usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 },
  };
  if (!stream) {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(chunk));
    return;
  }
  sse(res, [[undefined, chunk]]);
}

type Schema = { type?: string; enum?: unknown[]; properties?: Record<string, Schema> };

/** The smallest value of a response schema: first enum value, 1, "stand-in", every key. */
function fromSchema(schema: Schema): unknown {
  if (schema.enum) return schema.enum[0];
  switch (schema.type?.toLowerCase()) {
    case "object":
      return Object.fromEntries(
        Object.entries(schema.properties ?? {}).map(([key, value]) => [key, fromSchema(value)]),
      );
    case "array":
      return [];
    case "integer":
    case "number":
      return 1;
    case "boolean":
      return false;
    default:
      return "stand-in";
  }
}

/**
 * The tool results one request carries back to the model, in order, as text: Anthropic's
 * `tool_result` blocks, OpenAI's `function_call_output` items and `tool` messages, Gemini's
 * `functionResponse` parts.
 */
export function toolResults(body: string): string[] {
  let request: Json;
  try {
    request = JSON.parse(body);
  } catch {
    return [];
  }
  const text = (value: unknown) => (typeof value === "string" ? value : JSON.stringify(value));
  const messages = (request.messages as { content?: unknown }[] | undefined) ?? [];
  const anthropic = messages
    .flatMap((m) => (Array.isArray(m.content) ? (m.content as Json[]) : []))
    .filter((b) => b?.type === "tool_result")
    .map((b) => text(b.content));
  const input = Array.isArray(request.input) ? (request.input as Json[]) : [];
  const openai = input.filter((i) => i?.type === "function_call_output").map((i) => text(i.output));
  const chat = ((request.messages as Json[] | undefined) ?? [])
    .filter((m) => m?.role === "tool")
    .map((m) => text(m.content));
  const contents = (request.contents as { parts?: Json[] }[] | undefined) ?? [];
  const gemini = contents
    .flatMap((c) => c.parts ?? [])
    .filter((p) => p.functionResponse !== undefined)
    .map((p) => text(p.functionResponse));
  return [...anthropic, ...openai, ...chat, ...gemini];
}
