import { AgentChatError } from "../../core/errors.js";
import type { Message } from "../../core/message.js";
import { type ChannelMeta, META_MAINTAINER } from "../../core/meta.js";
import { sameAgent, validateName } from "../../core/names.js";

/**
 * The optional governance profile (SPEC §9), layered on the core without changing it: a channel's
 * `_meta.json` may name a maintainer and give each action an approval band. Requests and verdicts
 * are ordinary messages (a status, a `reply_to`, two extra frontmatter keys), so the reference
 * `chat.py` reads a governed channel like any other.
 */
export type Band = "auto" | "notify" | "approval";
export const BANDS: readonly Band[] = ["auto", "notify", "approval"];

/** The band key that applies to every action without a band of its own. */
export const ANY_ACTION = "*";
export const DEFAULT_VETO_WINDOW_SECONDS = 300;
const MAX_ACTION_LENGTH = 40;
const ACTION_PATTERN = /^[a-z0-9][a-z0-9._-]*$/;

/** Our keys in `_meta.json`, written after the reference's four (the maintainer's: core/meta.ts). */
export { META_MAINTAINER };
export const META_BANDS = "bands";
export const META_VETO_WINDOW = "veto_window_seconds";

/** Statuses of the messages the profile exchanges. */
export const STATUS = {
  needsApproval: "needs-approval",
  notify: "notify",
  approved: "approved",
  rejected: "rejected",
  vetoed: "vetoed",
  /** Posted by the requester when it stopped waiting without a verdict (timeout). */
  expired: "expired",
  /** Posted by the requester when it was interrupted while waiting. */
  withdrawn: "withdrawn",
} as const;

/** Frontmatter keys of a request message (beyond the SPEC's). */
export const REQUEST_ACTION_KEY = "action";
export const REQUEST_VETO_UNTIL_KEY = "veto_until";
/**
 * Frontmatter keys of a verdict of ours: the digest of the request it answers and who asked.
 * Signed with the verdict, they bind it to that request: a verdict copied onto another request
 * of the same number (planted, or in another root) answers nothing there.
 */
export const VERDICT_DIGEST_KEY = "request_digest";
export const VERDICT_REQUESTER_KEY = "requester";

/** A request message's digest (src/features/governance/governance.ts makes one, lazily). */
export type RequestDigest = (request: Message) => string;

export type Verdict = "approved" | "rejected" | "vetoed";
const VERDICTS: readonly string[] = [STATUS.approved, STATUS.rejected, STATUS.vetoed];
const CLOSINGS: readonly string[] = [STATUS.expired, STATUS.withdrawn];

export interface GovernanceProfile {
  /** The one identity whose verdicts count. */
  maintainer?: string;
  /** Action → band; `*` is the default for unlisted actions. */
  bands: Record<string, Band>;
  vetoWindowSeconds: number;
}

/** A change to a profile; a band of `null` removes that action's band. */
export interface GovernanceChange {
  maintainer?: string;
  bands?: Record<string, Band | null>;
  vetoWindowSeconds?: number;
}

/** An action name as written in `_meta.json`: lower-case, or `*`. */
export function validateAction(value: string): string {
  const action = value.trim().toLowerCase();
  if (action === ANY_ACTION) return action;
  if (action === "") {
    throw new AgentChatError("INVALID_ARGUMENT", "action name is empty");
  }
  if (action.length > MAX_ACTION_LENGTH || !ACTION_PATTERN.test(action)) {
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      `invalid action name ${JSON.stringify(value)}: use letters, digits, '.', '_' and '-' ` +
        `(at most ${MAX_ACTION_LENGTH}), or '*' for every other action`,
    );
  }
  return action;
}

export function validateBand(action: string, value: unknown): Band {
  const band = typeof value === "string" ? value.trim().toLowerCase() : value;
  if (typeof band === "string" && (BANDS as readonly string[]).includes(band)) return band as Band;
  throw new AgentChatError(
    "INVALID_ARGUMENT",
    `invalid band ${JSON.stringify(value)} for action ${action}: use ${BANDS.join(", ")}`,
  );
}

/** Parses `merge=approval` (the CLI's `--band`). */
export function parseBandAssignment(text: string): [string, Band] {
  const eq = text.indexOf("=");
  if (eq < 0) {
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      `--band wants ACTION=BAND (e.g. merge=approval), not ${JSON.stringify(text)}`,
    );
  }
  const action = validateAction(text.slice(0, eq));
  return [action, validateBand(action, text.slice(eq + 1))];
}

export function validateVetoWindow(seconds: unknown): number {
  if (typeof seconds !== "number" || !Number.isFinite(seconds) || seconds <= 0) {
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      `veto window must be a positive number of seconds, not ${JSON.stringify(seconds)}`,
    );
  }
  return seconds;
}

/** The profile a channel's meta carries, or undefined when it carries none. */
export function governanceOf(meta: ChannelMeta): GovernanceProfile | undefined {
  const rawMaintainer = meta[META_MAINTAINER];
  const rawBands = meta[META_BANDS];
  const rawWindow = meta[META_VETO_WINDOW];
  if (rawMaintainer === undefined && rawBands === undefined && rawWindow === undefined) {
    return undefined;
  }
  const where = `channel ${meta.channel}: _meta.json`;
  try {
    const profile: GovernanceProfile = {
      bands: {},
      vetoWindowSeconds:
        rawWindow === undefined ? DEFAULT_VETO_WINDOW_SECONDS : validateVetoWindow(rawWindow),
    };
    if (rawMaintainer !== undefined) {
      profile.maintainer = validateName("agent", rawMaintainer);
    }
    if (rawBands !== undefined) {
      if (typeof rawBands !== "object" || rawBands === null || Array.isArray(rawBands)) {
        throw new AgentChatError("INVALID_ARGUMENT", `"${META_BANDS}" must be an object`);
      }
      for (const [key, value] of Object.entries(rawBands)) {
        const action = validateAction(key);
        profile.bands[action] = validateBand(action, value);
      }
    }
    return profile;
  } catch (err) {
    throw new AgentChatError("CORRUPT_META", `${where}: ${(err as Error).message}`, {
      cause: err,
    });
  }
}

/** A profile whose notify or approval bands have nobody to decide them is refused. */
export function checkProfile(profile: GovernanceProfile, channel: string): void {
  const needing = Object.entries(profile.bands)
    .filter(([, band]) => band !== "auto")
    .map(([action, band]) => `${action}=${band}`);
  if (needing.length > 0 && profile.maintainer === undefined) {
    throw new AgentChatError(
      "INVALID_ARGUMENT",
      `channel ${channel}: ${needing.join(", ")} need a maintainer to decide them ` +
        `(add --maintainer NAME)`,
    );
  }
}

/** Applies a change and returns the new profile, checked. */
export function changeProfile(
  current: GovernanceProfile | undefined,
  change: GovernanceChange,
  channel: string,
): GovernanceProfile {
  const next: GovernanceProfile = {
    bands: { ...(current?.bands ?? {}) },
    vetoWindowSeconds: current?.vetoWindowSeconds ?? DEFAULT_VETO_WINDOW_SECONDS,
  };
  const maintainer = change.maintainer ?? current?.maintainer;
  if (maintainer !== undefined) next.maintainer = validateName("agent", maintainer);
  for (const [key, band] of Object.entries(change.bands ?? {})) {
    const action = validateAction(key);
    if (band === null) delete next.bands[action];
    else next.bands[action] = validateBand(action, band);
  }
  if (change.vetoWindowSeconds !== undefined) {
    next.vetoWindowSeconds = validateVetoWindow(change.vetoWindowSeconds);
  }
  checkProfile(next, channel);
  return next;
}

/**
 * The meta keys that carry a profile, in a fixed order. `serializeMeta` writes them after the
 * reference's keys, so `chat.py` (which reads only its own keys) is unaffected.
 */
export function profileMetaKeys(profile: GovernanceProfile): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (profile.maintainer !== undefined) out[META_MAINTAINER] = profile.maintainer;
  out[META_BANDS] = sortBands(profile.bands);
  out[META_VETO_WINDOW] = profile.vetoWindowSeconds;
  return out;
}

/** Replaces the profile keys of a meta, keeping every other key and its place. */
export function withProfile(meta: ChannelMeta, profile: GovernanceProfile): ChannelMeta {
  const { [META_MAINTAINER]: _m, [META_BANDS]: _b, [META_VETO_WINDOW]: _w, ...rest } = meta;
  return { ...rest, ...profileMetaKeys(profile) } as ChannelMeta;
}

/** Listed actions first in name order, the `*` default last: the order people read them in. */
function sortBands(bands: Record<string, Band>): Record<string, Band> {
  const keys = Object.keys(bands)
    .filter((k) => k !== ANY_ACTION)
    .sort();
  if (ANY_ACTION in bands) keys.push(ANY_ACTION);
  return Object.fromEntries(keys.map((k) => [k, bands[k]!]));
}

export interface BandLookup {
  action: string;
  band: Band;
  /** The band key that matched: the action itself or `*`. */
  matched: string;
}

/** The band of an action: its own, else the `*` default, else an UNKNOWN_ACTION error. */
export function lookupBand(
  profile: GovernanceProfile,
  action: string,
  channel: string,
): BandLookup {
  const name = validateAction(action);
  if (name === ANY_ACTION) {
    throw new AgentChatError("INVALID_ARGUMENT", "request a named action, not '*'");
  }
  const own = profile.bands[name];
  if (own) return { action: name, band: own, matched: name };
  const fallback = profile.bands[ANY_ACTION];
  if (fallback) return { action: name, band: fallback, matched: ANY_ACTION };
  const known = Object.keys(profile.bands);
  throw new AgentChatError(
    "UNKNOWN_ACTION",
    `action ${name} has no band in channel ${channel} (known: ${known.length > 0 ? known.join(", ") : "none"}); ` +
      `add one with: agent-chat govern ${channel} --band ${name}=approval ` +
      `(or a default for every action: --band '*'=auto)`,
  );
}

/** A message that asks the maintainer for a verdict. */
export interface GovernanceRequest {
  seq: number;
  from: string;
  action: string;
  band: "notify" | "approval";
  title: string;
  ts: string;
  /** End of the veto window (notify requests only), as written in the message. */
  vetoUntil?: string;
  /** What a verdict on it names ({@link VERDICT_DIGEST_KEY}). */
  digest: string;
}

export function requestOf(message: Message, digest: RequestDigest): GovernanceRequest | undefined {
  const status = normalStatus(message.status);
  let band: GovernanceRequest["band"];
  if (status === STATUS.needsApproval) band = "approval";
  else if (status === STATUS.notify) band = "notify";
  else return undefined;
  const request: GovernanceRequest = {
    seq: message.seq,
    from: message.from,
    action: message.extra[REQUEST_ACTION_KEY] ?? "",
    band,
    title: message.title,
    ts: message.ts,
    digest: digest(message),
  };
  const until = message.extra[REQUEST_VETO_UNTIL_KEY];
  if (band === "notify" && until) request.vetoUntil = until;
  return request;
}

/** What a reply means for a request. */
export type ReplyJudgement =
  | { kind: "verdict"; verdict: Verdict; by: string; seq: number; note: string }
  /**
   * A verdict-looking reply whose sender is not the maintainer's name: it never counts. (Names
   * are not authenticated: see docs/governance.md, "Trust model".)
   */
  | { kind: "ignored"; status: string; by: string; seq: number; reason: string }
  /** The requester stopped waiting (expired or withdrawn). */
  | { kind: "closed"; status: string; by: string; seq: number }
  /** Any other reply, such as a question from the maintainer. */
  | { kind: "comment"; status: string; by: string; seq: number; title: string };

/** Judges a message against a request; undefined when it is not a reply to that request. */
export function judgeReply(
  reply: Message,
  request: GovernanceRequest,
  maintainer: string,
): ReplyJudgement | undefined {
  if (reply.replyTo !== request.seq || reply.seq <= request.seq) return undefined;
  const status = normalStatus(reply.status);
  const by = reply.from;
  if (VERDICTS.includes(status)) {
    const elsewhere = answersAnother(reply, request);
    if (elsewhere !== undefined)
      return { kind: "ignored", status, by, seq: reply.seq, reason: elsewhere };
    // The name itself, case aside: `alice.` shares alice's cursor key but is not alice.
    if (sameAgent(by, maintainer)) {
      return { kind: "verdict", verdict: status as Verdict, by, seq: reply.seq, note: reply.body };
    }
    return {
      kind: "ignored",
      status,
      by,
      seq: reply.seq,
      reason: `${by} is not the maintainer (${maintainer})`,
    };
  }
  if (CLOSINGS.includes(status) && sameAgent(by, request.from)) {
    return { kind: "closed", status, by, seq: reply.seq };
  }
  return { kind: "comment", status, by, seq: reply.seq, title: reply.title };
}

/** The fields that bind a verdict to `request` (see {@link VERDICT_DIGEST_KEY}). */
export function verdictBinding(request: GovernanceRequest): Record<string, string> {
  return { [VERDICT_DIGEST_KEY]: request.digest, [VERDICT_REQUESTER_KEY]: request.from };
}

/**
 * Why a verdict bound to a request is not bound to this one, or undefined when it is (or names
 * none: chat.py's verdicts and ours from before carry no binding).
 */
function answersAnother(reply: Message, request: GovernanceRequest): string | undefined {
  const digest = reply.extra[VERDICT_DIGEST_KEY];
  const requester = reply.extra[VERDICT_REQUESTER_KEY];
  const same =
    (digest === undefined || digest === request.digest) &&
    (requester === undefined || sameAgent(requester, request.from));
  return same ? undefined : `it answers another request than #${request.seq} as it stands`;
}

/** Approved lets the action go ahead; rejected and vetoed stop it, in either band. */
export function verdictAllows(verdict: Verdict): boolean {
  return verdict === "approved";
}

export interface RequestState {
  request: GovernanceRequest;
  /** The first judgement that decided or closed it, if any. */
  decision?: Extract<ReplyJudgement, { kind: "verdict" | "closed" }>;
  /** True for a notify request whose veto window has passed without a verdict. */
  windowClosed: boolean;
}

/** The state of every request in a channel's messages (in seq order). */
export function requestStates(
  messages: readonly Message[],
  maintainer: string,
  now: number,
  digest: RequestDigest,
): RequestState[] {
  const states = new Map<number, RequestState>();
  for (const message of messages) {
    const request = requestOf(message, digest);
    if (request) {
      const until = request.vetoUntil ? Date.parse(request.vetoUntil) : Number.NaN;
      states.set(message.seq, {
        request,
        windowClosed: request.band === "notify" && Number.isFinite(until) && until <= now,
      });
      continue;
    }
    if (message.replyTo === undefined) continue;
    const state = states.get(message.replyTo);
    if (!state || state.decision) continue;
    const judgement = judgeReply(message, state.request, maintainer);
    if (judgement?.kind === "verdict" || judgement?.kind === "closed") state.decision = judgement;
  }
  return [...states.values()];
}

/** Requests still waiting for a verdict: undecided, not closed, and inside any veto window. */
export function openRequests(
  messages: readonly Message[],
  maintainer: string,
  now: number,
  digest: RequestDigest,
): GovernanceRequest[] {
  return requestStates(messages, maintainer, now, digest)
    .filter((s) => !s.decision && !s.windowClosed)
    .map((s) => s.request);
}

function normalStatus(status: string): string {
  return status.trim().toLowerCase();
}
