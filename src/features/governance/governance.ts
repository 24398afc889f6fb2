import { AgentChatError } from "../../core/errors.js";
import { formatTimestamp, type Message } from "../../core/message.js";
import type { ChannelMeta } from "../../core/meta.js";
import { assertDistinctAgents, sameAgent, validateName } from "../../core/names.js";
import { canonicalText } from "../../core/signature.js";
import { cannotUpdateMeta } from "../../store/operations.js";
import { wholeChannel } from "../../store/paging.js";
import { DEFAULT_WAIT_TIMEOUT_MS, type Store } from "../../store/types.js";
import { signaturesRequired } from "./policy.js";
import {
  type BandLookup,
  changeProfile,
  type GovernanceChange,
  type GovernanceProfile,
  type GovernanceRequest,
  governanceOf,
  judgeReply,
  lookupBand,
  openRequests,
  REQUEST_ACTION_KEY,
  REQUEST_VETO_UNTIL_KEY,
  type ReplyJudgement,
  type RequestDigest,
  requestOf,
  requestStates,
  STATUS,
  type Verdict,
  verdictAllows,
  verdictBinding,
  withProfile,
} from "./rules.js";

/**
 * The digest a verdict names its request by: SHA-256 of the request as signed (its canonical
 * text). `node:crypto` is loaded here, by governance commands only, never at every start.
 */
export async function requestDigest(): Promise<RequestDigest> {
  const { createHash } = await import("node:crypto");
  return (request) => createHash("sha256").update(canonicalText(request)).digest("base64url");
}

/**
 * The governance profile (SPEC §9) on top of any Store: read and change a channel's profile,
 * request an action and wait for the maintainer's verdict, decide a request, list open ones.
 *
 * Waiting uses `store.watch` from the request's own seq, never `store.wait`: a wait would
 * advance the requester's read cursor past every message it scanned, so messages that arrived
 * meanwhile for the agent (and the verdict itself) would never show in its next `read`. The
 * watch moves no cursor; it wakes on the store's file watch within milliseconds, spends no
 * tokens, and also sees replies posted before it started (it scans from the request's seq).
 */

export async function profileOf(store: Store, channel: string): Promise<GovernanceProfile> {
  const meta = await store.roster(channel);
  const profile = governanceOf(meta);
  if (!profile) {
    throw new AgentChatError(
      "NOT_GOVERNED",
      `channel ${channel} has no governance profile; set one with: ` +
        `agent-chat govern ${channel} --maintainer NAME --band ACTION=approval`,
    );
  }
  return profile;
}

/**
 * Changes a channel's profile atomically (needs a store with `updateMeta`). Once a maintainer is
 * set, only a caller acting `as` that maintainer may change it (any of it: making an action
 * `auto` bypasses the maintainer as surely as replacing them). The check runs inside the atomic
 * update, against the profile being replaced. Names are not authenticated, so this refuses a
 * mistake or a casual takeover, not a determined one (docs/governance.md, "Trust model").
 */
export async function govern(
  store: Store,
  channel: string,
  change: GovernanceChange,
  as?: string,
): Promise<ChannelMeta> {
  if (!store.updateMeta) {
    throw cannotUpdateMeta(store.location);
  }
  return store.updateMeta(channel, (meta) => {
    const current = governanceOf(meta);
    const maintainer = current?.maintainer;
    if (maintainer !== undefined && (as === undefined || !sameAgent(as, maintainer))) {
      throw new AgentChatError(
        "NOT_MAINTAINER",
        as === undefined
          ? `${channel} has a maintainer (${maintainer}); give --as ${maintainer} to change its governance profile`
          : `${as} is not the maintainer of ${channel} (${maintainer} is); only ${maintainer} changes its governance profile`,
      );
    }
    const next = changeProfile(current, change, channel);
    if (next.maintainer !== undefined) {
      assertDistinctAgents([...meta.members, next.maintainer], "member and maintainer");
    }
    return withProfile(meta, next);
  });
}

export type GovernanceEvent =
  /** The action fell to the `*` default band. */
  | { type: "fallback"; lookup: BandLookup }
  | { type: "posted"; seq: number; band: "notify" | "approval"; maintainer: string }
  | { type: "ignored"; judgement: Extract<ReplyJudgement, { kind: "ignored" }> }
  | { type: "comment"; judgement: Extract<ReplyJudgement, { kind: "comment" }> };

export interface RequestInput {
  as: string;
  action: string;
  title: string;
  /** Default: one line naming the action and the title. */
  body?: string;
  /** How long an approval request waits for a verdict (default {@link DEFAULT_WAIT_TIMEOUT_MS}); notify waits its window. */
  timeoutMs?: number;
  /** The watch's safety-net poll behind the file watch. */
  intervalMs?: number;
  signal?: AbortSignal;
  onEvent?: (event: GovernanceEvent) => void;
}

export type RequestOutcome =
  | { band: "auto"; action: string; proceed: true; matched: string }
  | {
      band: "notify" | "approval";
      action: string;
      matched: string;
      seq: number;
      /** "no-veto": a notify request whose window passed without a verdict. */
      result: Verdict | "no-veto";
      proceed: boolean;
      by?: string;
      decisionSeq?: number;
      note?: string;
      ignored: Array<Extract<ReplyJudgement, { kind: "ignored" }>>;
    };

/**
 * Looks the action's band up and acts on it. Resolves with the outcome (`proceed` false when the
 * maintainer rejected or vetoed it); throws TIMEOUT when no verdict came in time (an `expired`
 * reply is posted so the request leaves `pending`) and ABORTED when the signal fired (a
 * `withdrawn` reply is posted).
 */
export async function requestAction(
  store: Store,
  channel: string,
  input: RequestInput,
): Promise<RequestOutcome> {
  validateName("agent", input.as);
  const profile = await profileOf(store, channel);
  const lookup = lookupBand(profile, input.action, channel);
  if (lookup.matched !== lookup.action) input.onEvent?.({ type: "fallback", lookup });
  if (lookup.band === "auto") {
    return { band: "auto", action: lookup.action, proceed: true, matched: lookup.matched };
  }
  const maintainer = profile.maintainer!;
  const band = lookup.band;
  const windowMs = profile.vetoWindowSeconds * 1000;
  const waitMs = band === "notify" ? windowMs : (input.timeoutMs ?? DEFAULT_WAIT_TIMEOUT_MS);
  const extra: Record<string, string> = { [REQUEST_ACTION_KEY]: lookup.action };
  if (band === "notify") {
    // Whole seconds, as `ts` is written: round up so the window is never shorter than promised.
    extra[REQUEST_VETO_UNTIL_KEY] = formatTimestamp(
      new Date(Math.ceil((Date.now() + windowMs) / 1000) * 1000),
    );
  }
  const posted = await store.post(channel, {
    from: input.as,
    to: band === "approval" ? maintainer : "all",
    title: input.title,
    body: input.body ?? `${input.as} asks to ${lookup.action}: ${input.title}`,
    status: band === "approval" ? STATUS.needsApproval : STATUS.notify,
    extra,
  });
  input.onEvent?.({ type: "posted", seq: posted.seq, band, maintainer });
  // As stored: a verdict names the request by the digest of what the maintainer reads.
  const stored = (await store.thread(channel, posted.seq)).message;
  const request = requestOf(stored, await requestDigest()) as GovernanceRequest;

  const base = { band, action: lookup.action, matched: lookup.matched, seq: posted.seq };
  const ignored: Array<Extract<ReplyJudgement, { kind: "ignored" }>> = [];
  const ending = await watchReplies(store, channel, request, maintainer, {
    verifiedOnly: signaturesRequired(await store.roster(channel)),
    waitMs,
    intervalMs: input.intervalMs,
    signal: input.signal,
    onJudgement: (j) => {
      if (j.kind === "ignored") {
        ignored.push(j);
        input.onEvent?.({ type: "ignored", judgement: j });
      } else if (j.kind === "comment") input.onEvent?.({ type: "comment", judgement: j });
    },
  });

  if (ending.kind === "verdict") {
    const { verdict } = ending.judgement;
    const outcome: RequestOutcome = {
      ...base,
      result: verdict,
      proceed: verdictAllows(verdict),
      by: ending.judgement.by,
      decisionSeq: ending.judgement.seq,
      note: ending.judgement.note,
      ignored,
    };
    return outcome;
  }
  if (ending.kind === "elapsed" && band === "notify") {
    return { ...base, result: "no-veto", proceed: true, ignored };
  }
  const closing = ending.kind === "aborted" ? STATUS.withdrawn : STATUS.expired;
  await store
    .post(channel, {
      from: input.as,
      to: maintainer,
      replyTo: posted.seq,
      status: closing,
      title: `${closing}: ${input.title}`,
      body: `${input.as} stopped waiting for a verdict on #${posted.seq} (${closing}).`,
    })
    .catch(() => {
      // The verdict is what matters; a closing note that cannot be written leaves the request
      // listed in `pending`, where the maintainer can still reject it.
    });
  if (ending.kind === "aborted") {
    throw new AgentChatError("ABORTED", `request #${posted.seq} was withdrawn while waiting`);
  }
  throw new AgentChatError(
    "TIMEOUT",
    `no verdict from ${maintainer} on request #${posted.seq} within ${waitMs / 1000} s ` +
      `(marked ${closing})`,
  );
}

type WatchEnding =
  | { kind: "verdict"; judgement: Extract<ReplyJudgement, { kind: "verdict" }> }
  | { kind: "elapsed" }
  | { kind: "aborted" };

/** Watches the channel from the request's seq until a maintainer verdict, the deadline or abort. */
async function watchReplies(
  store: Store,
  channel: string,
  request: GovernanceRequest,
  maintainer: string,
  options: {
    waitMs: number;
    intervalMs: number | undefined;
    signal: AbortSignal | undefined;
    onJudgement: (j: ReplyJudgement) => void;
    /** Only verified replies count (the channel requires signatures). */
    verifiedOnly: boolean;
  },
): Promise<WatchEnding> {
  const stop = new AbortController();
  let why: "elapsed" | "aborted" | undefined;
  const timer = setTimeout(() => {
    why ??= "elapsed";
    stop.abort();
  }, options.waitMs);
  const onAbort = () => {
    why ??= "aborted";
    stop.abort();
  };
  if (options.signal?.aborted) onAbort();
  options.signal?.addEventListener("abort", onAbort, { once: true });
  try {
    const watchOptions: Parameters<Store["watch"]>[1] = { after: request.seq, signal: stop.signal };
    if (options.intervalMs !== undefined) watchOptions.intervalMs = options.intervalMs;
    for await (const message of store.watch([channel], watchOptions)) {
      const judgement = judgeReply(message, request, maintainer);
      if (!judgement) continue;
      if (!counts(message, options.verifiedOnly)) {
        // Not obeyed, but said: a verdict that does not count is worth the requester's notice.
        if (judgement.kind !== "comment") options.onJudgement(uncounted(message));
        continue;
      }
      if (judgement.kind === "verdict") return { kind: "verdict", judgement };
      options.onJudgement(judgement);
    }
    return { kind: why ?? "aborted" };
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener("abort", onAbort);
  }
}

export interface DecideInput {
  as: string;
  verdict: Verdict;
  note?: string;
  /** For tests and tools that judge windows against another clock. */
  now?: number;
}

export interface DecideResult {
  channel: string;
  request: GovernanceRequest;
  verdict: Verdict;
  seq: number;
  file: string;
}

/** The maintainer's verdict on request `seq`, posted as a reply to it. */
export async function decide(
  store: Store,
  channel: string,
  seq: number,
  input: DecideInput,
): Promise<DecideResult> {
  validateName("agent", input.as);
  const profile = await profileOf(store, channel);
  const maintainer = profile.maintainer;
  // The name itself, case aside: `alice.` shares alice's cursor key but is not alice.
  if (!maintainer || !sameAgent(maintainer, input.as)) {
    throw new AgentChatError(
      "NOT_MAINTAINER",
      maintainer
        ? `${input.as} is not the maintainer of ${channel} (${maintainer} is); only their verdict counts`
        : `channel ${channel} has no maintainer; set one with: agent-chat govern ${channel} --maintainer NAME`,
    );
  }
  const messages = await allMessages(store, channel);
  const target = messages.find((m) => m.seq === seq);
  if (!target) throw new AgentChatError("NOT_FOUND", `no message #${seq} in ${channel}`);
  const digest = await requestDigest();
  const request = requestOf(target, digest);
  if (!request) {
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      `#${seq} in ${channel} is not a request (its status is ${target.status}, not ` +
        `${STATUS.needsApproval} or ${STATUS.notify})`,
    );
  }
  const state = requestStates(messages, maintainer, input.now ?? Date.now(), digest).find(
    (s) => s.request.seq === seq,
  )!;
  if (state.decision?.kind === "verdict") {
    throw new AgentChatError(
      "ALREADY_DECIDED",
      `request #${seq} was already ${state.decision.verdict} by ${state.decision.by} in #${state.decision.seq}`,
    );
  }
  if (state.decision?.kind === "closed") {
    throw new AgentChatError(
      "ALREADY_DECIDED",
      `request #${seq} is ${state.decision.status} (#${state.decision.seq}); ${request.from} no longer waits for it`,
    );
  }
  if (state.windowClosed) {
    throw new AgentChatError(
      "ALREADY_DECIDED",
      `the veto window of request #${seq} closed at ${request.vetoUntil}; the action may already have happened`,
    );
  }
  const note = input.note?.trim();
  const posted = await store.post(channel, {
    from: input.as,
    to: request.from,
    replyTo: seq,
    status: input.verdict,
    title: `${input.verdict}: ${request.title}`.slice(0, 200),
    body: note || `${input.verdict} by ${input.as}.`,
    extra: verdictBinding(request),
  });
  return { channel, request, verdict: input.verdict, seq: posted.seq, file: posted.file };
}

/** Requests that still wait for a verdict. */
export async function pendingRequests(
  store: Store,
  channel: string,
  now = Date.now(),
): Promise<{ profile: GovernanceProfile; requests: GovernanceRequest[] }> {
  const profile = await profileOf(store, channel);
  if (!profile.maintainer) return { profile, requests: [] };
  const messages = await allMessages(store, channel);
  const digest = await requestDigest();
  return { profile, requests: openRequests(messages, profile.maintainer, now, digest) };
}

/**
 * Every message of a channel that counts, in seq order; moves no cursor. The channel's policy
 * is the one this reader pinned (a `_meta.json` edited down to `off` changes nothing).
 */
async function allMessages(store: Store, channel: string): Promise<Message[]> {
  const all = await wholeChannel(store, channel);
  const verifiedOnly = signaturesRequired(await store.roster(channel));
  return all.filter((m) => counts(m, verifiedOnly));
}

/** A reply that does not count (see {@link counts}), as the requester is told of it. */
function uncounted(m: Message): Extract<ReplyJudgement, { kind: "ignored" }> {
  const reason =
    m.trust === "forged"
      ? `it is forged (${m.trustNote ?? "bad signature"})`
      : "it is unsigned, and signatures are required";
  return { kind: "ignored", status: m.status, by: m.from, seq: m.seq, reason };
}

/**
 * Whether a request or verdict counts: a forged one never (a bad signature, or a key that is not
 * the sender's pinned one, is nobody's word); an unsigned one only where signatures are not
 * required (names are not authenticated there, docs/governance.md).
 */
function counts(m: Message, verifiedOnly: boolean): boolean {
  return verifiedOnly ? m.trust === "verified" : m.trust !== "forged";
}
