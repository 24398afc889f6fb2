import type { Command } from "commander";
import type { CliContext } from "../context.js";
import { oneOf } from "../usage.js";

const SHELLS = ["bash", "zsh", "fish"] as const;
type Shell = (typeof SHELLS)[number];

/**
 * `agent-chat completion bash|zsh|fish`: a completion script made from the program's own
 * command tree, so that it names every command and option there is and no other. Each script
 * holds the tree as three tables, keyed by a command's path (`""`, `task`, `task add`): its
 * subcommands, its options, and those of its options that take a value (whose next word is
 * that value, not a command).
 */
export function registerCompletionCommand(program: Command, ctx: CliContext): void {
  program
    .command("completion")
    .description("print a shell completion script for bash, zsh or fish")
    .argument("<shell>", SHELLS.join(" | "))
    .addHelpText(
      "after",
      "\nExamples:\n" +
        "  source <(agent-chat completion bash)          # in ~/.bashrc\n" +
        "  source <(agent-chat completion zsh)           # in ~/.zshrc, after compinit\n" +
        "  agent-chat completion fish > ~/.config/fish/completions/agent-chat.fish",
    )
    .action((shell: string) => {
      const tree = commandTree(program);
      ctx.out(SCRIPTS[oneOf(shell, SHELLS, "shell")](tree));
    });
}

/** One command's words: subcommands, options, and the options that take a value. */
interface Node {
  commands: string[];
  options: string[];
  values: string[];
}

/**
 * Every command of the tree by its path. The program's options count at every level, as
 * commander takes them anywhere on the line; -v and --version only alone.
 */
function commandTree(program: Command): Map<string, Node> {
  const tree = new Map<string, Node>();
  const visit = (command: Command, path: string) => {
    const global = optionsOf(program, path === "" ? [] : ["-v", "--version"]);
    const own = path === "" ? { options: [], values: [] } : optionsOf(command);
    const subcommands = command.commands.flatMap((c) => [c.name(), ...c.aliases()]);
    tree.set(path, {
      commands: subcommands.length > 0 ? [...subcommands, "help"] : [],
      options: [...own.options, ...global.options, "--help"],
      values: [...own.values, ...global.values],
    });
    for (const sub of command.commands)
      visit(sub, path === "" ? sub.name() : `${path} ${sub.name()}`);
  };
  visit(program, "");
  return tree;
}

function optionsOf(command: Command, left: string[] = []): { options: string[]; values: string[] } {
  const shown = command.options.filter((o) => !o.hidden && !left.includes(o.long ?? ""));
  const flags = (o: (typeof shown)[number]) => [o.short, o.long].filter((f) => f !== undefined);
  return {
    options: shown.flatMap(flags),
    values: shown.filter((o) => o.required || o.optional).flatMap(flags),
  };
}

/** A `case` over the paths (bash and zsh alike) printing one table's words. */
function shCase(tree: Map<string, Node>, table: keyof Node): string {
  const arms = [...tree]
    .filter(([, node]) => node[table].length > 0)
    .map(([path, node]) => `    "${path}") printf '%s\\n' ${node[table].join(" ")} ;;`);
  return `  case "$1" in\n${arms.join("\n")}\n  esac`;
}

/** The three tables as shell functions `_agent_chat_commands PATH` and so on. */
function shTables(tree: Map<string, Node>): string {
  return (["commands", "options", "values"] as const)
    .map((table) => `_agent_chat_${table}() {\n${shCase(tree, table)}\n}`)
    .join("\n");
}

/**
 * The walk both bash and zsh make over the words before the cursor (`$words`, from index
 * `$first`): the command path they name, and whether the word at the cursor is an option's value.
 */
const SH_WALK = `  local cmdpath="" word skip=0 operand=0 i
  for ((i = first; i < cword; i++)); do
    word=\${words[i]}
    if ((skip)); then skip=0; continue; fi
    if [[ $word == -* ]]; then
      [[ $word != *=* ]] && _agent_chat_values "$cmdpath" | grep -qxF -- "$word" && skip=1
    elif ((!operand)) && _agent_chat_commands "$cmdpath" | grep -qxF -- "$word"; then
      cmdpath=\${cmdpath:+$cmdpath }$word
    else
      operand=1
    fi
  done`;

function bash(tree: Map<string, Node>): string {
  return `# agent-chat completion for bash: source <(agent-chat completion bash)
${shTables(tree)}
_agent_chat() {
  local words=("\${COMP_WORDS[@]}") first=1 cword=$COMP_CWORD cur=\${COMP_WORDS[COMP_CWORD]}
${SH_WALK}
  COMPREPLY=()
  ((skip)) && return
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$(_agent_chat_options "$cmdpath")" -- "$cur"))
  elif ((!operand)); then
    COMPREPLY=($(compgen -W "$(_agent_chat_commands "$cmdpath")" -- "$cur"))
  fi
}
complete -o default -F _agent_chat agent-chat
`;
}

function zsh(tree: Map<string, Node>): string {
  return `#compdef agent-chat
# agent-chat completion for zsh: source <(agent-chat completion zsh) after compinit, or save it
# as _agent_chat in a folder of $fpath.
${shTables(tree)}
_agent_chat() {
  local first=2 cword=$CURRENT cur=\${words[CURRENT]}
${SH_WALK}
  if ((skip)); then _files; return; fi
  if [[ $cur == -* ]]; then
    compadd -- \${(f)"$(_agent_chat_options "$cmdpath")"}
  elif ((!operand)) && [[ -n "$(_agent_chat_commands "$cmdpath")" ]]; then
    compadd -- \${(f)"$(_agent_chat_commands "$cmdpath")"}
  else
    _files
  fi
}
if [[ "$funcstack[1]" == "_agent_chat" ]]; then _agent_chat "$@"; else compdef _agent_chat agent-chat; fi
`;
}

/** fish asks one function for the candidates at the cursor; it walks the line as bash does. */
function fish(tree: Map<string, Node>): string {
  const arms = (table: keyof Node) =>
    [...tree]
      .filter(([, node]) => node[table].length > 0)
      .map(
        ([path, node]) =>
          `        case "${path}"\n            printf '%s\\n' ${node[table].join(" ")}`,
      )
      .join("\n");
  const table = (name: keyof Node) =>
    `function __agent_chat_${name}\n    switch "$argv[1]"\n${arms(name)}\n    end\nend`;
  return `# agent-chat completion for fish: agent-chat completion fish > ~/.config/fish/completions/agent-chat.fish
${table("commands")}
${table("options")}
${table("values")}
function __agent_chat_complete
    set -l cmdpath ""
    set -l skip 0
    set -l operand 0
    for word in (commandline -opc)[2..-1]
        if test $skip = 1
            set skip 0
        else if string match -q -- '-*' $word
            if not string match -q -- '*=*' $word; and contains -- $word (__agent_chat_values "$cmdpath")
                set skip 1
            end
        else if test $operand = 0; and contains -- $word (__agent_chat_commands "$cmdpath")
            set cmdpath (string trim -- "$cmdpath $word")
        else
            set operand 1
        end
    end
    set -l cur (commandline -ct)
    if test $skip = 1
        __fish_complete_path $cur
    else if string match -q -- '-*' $cur
        __agent_chat_options "$cmdpath"
    else if test $operand = 0; and count (__agent_chat_commands "$cmdpath") >/dev/null
        __agent_chat_commands "$cmdpath"
    else
        __fish_complete_path $cur
    end
end
complete -c agent-chat -f -a '(__agent_chat_complete)'
`;
}

const SCRIPTS: Record<Shell, (tree: Map<string, Node>) => string> = { bash, zsh, fish };
