import { pyStrip } from "./messages.js";
import { byText, type StateSummary } from "./summary.js";

/** chat.py's `#0042`. */
const seq4 = (n: number) => String(n).padStart(4, "0");
const NONE = "*(none)*";

/** The lines of a section, or chat.py's placeholder when it has none. */
function section(title: string, lines: string[]): string[] {
  return [`## ${title}`, ...(lines.length > 0 ? lines : [NONE]), ""];
}

/** Text split into lines as Python's `splitlines` does for text read with universal newlines. */
function splitLines(text: string): string[] {
  return text.split(/\r\n|[\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029]/);
}

function decisions(s: StateSummary): string[] {
  return [...s.decisions]
    .sort((a, b) => a.seq - b.seq)
    .flatMap((d) => {
      const details = pyStrip(d.details);
      return [
        `- \`[#${seq4(d.seq)}]\` **${d.title}** (by \`${d.author}\` at \`${d.time}\`):`,
        ...(details ? splitLines(details).map((l) => `  ${l}`) : ["  *(no additional details)*"]),
      ];
    });
}

function openTasks(s: StateSummary): string[] {
  const joined = (items: string[], sort = true) =>
    items.length > 0 ? (sort ? [...items].sort(byText) : items).join(", ") : "none";
  return [...s.open_tasks]
    .sort((a, b) => byText(a.id, b.id))
    .flatMap((t) => [
      `- \`[${t.id}]\` **${t.title}** (\`${t.status}\`)`,
      `  - **Owner**: \`${t.owner || "unassigned"}\``,
      `  - **Lease**: \`${t.lease_expires_at || "none"}\``,
      `  - **Depends on**: \`${joined(t.depends_on)}\``,
      `  - **Files hint**: \`${joined(t.files_hint)}\``,
      `  - **Acceptance**: \`${joined(t.acceptance, false)}\``,
    ]);
}

function blockers(s: StateSummary): string[] {
  return [...s.blockers]
    .sort((a, b) => byText(a.kind, b.kind) || byText(a.source_id, b.source_id))
    .map((b) => {
      const by = b.author ? ` (by \`${b.author}\`)` : "";
      return `- \`[${b.source_id}]\` **${b.title}**${by}: ${b.details}`;
    });
}

function owners(s: StateSummary): string[] {
  return Object.keys(s.owners)
    .sort(byText)
    .flatMap((owner) => {
      const a = s.owners[owner]!;
      const tasks = [...a.tasks]
        .sort((x, y) => byText(x.id, y.id))
        .map((t) => {
          const lease = t.lease_expires_at ? `, lease expires: \`${t.lease_expires_at}\`` : "";
          return `  - Task \`${t.id}\` (**${t.title}**, status: \`${t.status}\`${lease})`;
        });
      const locks = [...a.path_locks]
        .sort((x, y) => byText(x.lock_id, y.lock_id))
        .map((l) => {
          const paths = [...l.paths].sort(byText).join(", ");
          return `  - Path Lock \`${l.lock_id}\` (\`${paths}\`, expires: \`${l.expires_at}\`)`;
        });
      return [`- **${owner}**:`, ...tasks, ...locks];
    });
}

function pathLocks(s: StateSummary): string[] {
  return [...s.path_locks]
    .sort((a, b) => byText(a.lock_id, b.lock_id))
    .map((lock) => {
      const paths = lock.paths
        .map((p) => p.normalized_path.replaceAll("\\", "/"))
        .sort(byText)
        .join(", ");
      return `- \`[${lock.lock_id}]\` \`${paths}\` (owner: \`${lock.owner}\`, expires: \`${lock.expires_at}\`)`;
    });
}

function verification(s: StateSummary): string[] {
  return [...s.verification]
    .sort((a, b) => byText(a.time, b.time) || byText(a.source_id, b.source_id))
    .flatMap((v) => {
      const quoted = (text: string) =>
        text ? splitLines(pyStrip(text)).map((l) => `  > ${l}`) : [];
      if (v.source_type === "message") {
        const head = `- \`[#${seq4(Number(v.source_id))}]\` **${v.title}** (by \`${v.author}\` at \`${v.time}\`):`;
        return [head, ...(pyStrip(v.evidence) ? quoted(v.evidence) : [])];
      }
      return [
        `- \`[${v.source_id}]\` **${v.title}** (verified by \`${v.author}\` at \`${v.time}\`):`,
        ...(v.acceptance.length > 0 ? [`  - Acceptance criteria: ${v.acceptance.join(", ")}`] : []),
        ...quoted(v.evidence),
      ];
    });
}

/** chat.py's `state.md`, byte for byte: seven sections, `\n` line ends, a final newline. */
export function renderState(s: StateSummary): string {
  const members = s.members.length > 0 ? [...s.members].sort(byText).join(", ") : "(none)";
  const lines = [
    `# State: ${s.channel}`,
    "",
    "## Goal & Topic",
    `- **Channel**: ${s.channel}`,
    `- **Topic**: ${s.topic ? pyStrip(s.topic) : "(none)"}`,
    `- **Members**: ${members}`,
    `- **Last Message Sequence**: #${seq4(s.last_seq)}`,
    "",
    ...section("Decisions", decisions(s)),
    ...section("Open Tasks", openTasks(s)),
    ...section("Blockers", blockers(s)),
    ...section("Owners & Leases", owners(s)),
    ...section("Path Locks", pathLocks(s)),
    ...section("Verification Evidence", verification(s)),
  ];
  return lines.join("\n");
}
