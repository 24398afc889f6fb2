"""A pytest plugin that runs the reference chat.py's own tests against our CLI.

Loaded with `-p ours_as_chat` before the reference's test files are collected, it replaces
`chat.main` and the commands `chat.cmd_init`, `cmd_post`, `cmd_channels`, `cmd_read`,
`cmd_peek` and `cmd_claim` with calls of our CLI (`node dist/cli.cjs`) as a subprocess:
what ours prints goes to the test's sys.stdout and sys.stderr (so `redirect_stdout` captures it),
and its exit status is returned or raised the way the reference's `main` does (nothing on 0,
`SystemExit(status)` otherwise; a command raises the reference's `AgentChatError`). Every other
name of the reference (`TaskStore`, `LeaseStore`, `PathLockStore`, `chat.max_seq`) stays
its own, so those tests read and write a root that ours created and wrote.

Environment: AGENT_CHAT_OURS_CLI names dist/cli.cjs (AGENT_CHAT_OURS_NODE the node that runs
it, else `node`); AGENT_CHAT_OURS_REPORT, when set, names
a JSON file that receives each test's outcome ({"tests": {id: {"outcome", "message"}}}).
"""

import json
import os
import subprocess
import sys

import chat

CLI = os.environ["AGENT_CHAT_OURS_CLI"]
NODE = os.environ.get("AGENT_CHAT_OURS_NODE", "node")
# A bound on a hang (a command that parks), not on speed.
COMMAND_TIMEOUT_SECONDS = 120


def run_ours(argv, stdin_text=None):
    """Runs our CLI with `argv`; copies its output into the current sys.stdout and sys.stderr."""
    completed = subprocess.run(
        [NODE, CLI, *argv],
        input=stdin_text,
        stdin=subprocess.DEVNULL if stdin_text is None else None,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_SECONDS,
    )
    sys.stdout.write(completed.stdout)
    sys.stderr.write(completed.stderr)
    return completed


def main(argv=None):
    """The reference's `main`: returns on success, raises SystemExit with the exit status else."""
    completed = run_ours(list(sys.argv[1:] if argv is None else argv))
    if completed.returncode != 0:
        raise SystemExit(completed.returncode)


def cmd_init(root, a):
    """The reference's `cmd_init(root, namespace)` as our `init`; a failure is its AgentChatError."""
    argv = ["--root", str(root), "init", a.channel]
    if getattr(a, "members", None):
        argv += ["--members", a.members]
    if getattr(a, "topic", None):
        argv += ["--topic", a.topic]
    completed = run_ours(argv)
    if completed.returncode != 0:
        raise chat.AgentChatError(completed.stderr.strip() or f"init exited {completed.returncode}")


def _command(root, argv, stdin_text=None, exits=()):
    """One command of ours on `root`: an exit status in `exits` is raised as SystemExit, as the
    reference's command raises it; any other failure is the reference's AgentChatError."""
    completed = run_ours(["--root", str(root), *argv], stdin_text)
    if completed.returncode in exits:
        raise SystemExit(completed.returncode)
    if completed.returncode != 0:
        raise chat.AgentChatError(completed.stderr.strip() or f"exited {completed.returncode}")


def cmd_post(root, a):
    """The reference's `cmd_post`; a body of None is read from stdin, as the reference reads it."""
    argv = ["post", a.channel, "--from", a.sender, "--title", a.title]
    for flag, value in (("--to", a.to), ("--reply", a.reply), ("--status", a.status)):
        if value is not None:
            argv += [flag, str(value)]
    if a.body is not None:
        argv += ["--body", a.body]
    if a.body_file is not None:
        argv += ["--body-file", str(a.body_file)]
    stdin_text = sys.stdin.read() if a.body is None and a.body_file is None else None
    _command(root, argv, stdin_text)


def cmd_channels(root, a):
    _command(root, ["channels"])


def cmd_read(root, a):
    argv = ["read", a.channel, "--as", a.agent]
    argv += ["--all"] if getattr(a, "all", False) else []
    argv += ["--peek"] if getattr(a, "peek", False) else []
    _command(root, argv)


def cmd_peek(root, a):
    _command(root, ["peek", a.channel, "-n", str(a.n)])


def cmd_claim(root, a):
    """The reference's `cmd_claim`: a claim lost to another exits 3 (SystemExit)."""
    _command(root, ["claim", a.channel, a.task, "--as", a.agent], exits=(3,))


chat.main = main
chat.cmd_init = cmd_init
chat.cmd_post = cmd_post
chat.cmd_channels = cmd_channels
chat.cmd_read = cmd_read
chat.cmd_peek = cmd_peek
chat.cmd_claim = cmd_claim

_outcomes = {}


def pytest_runtest_logreport(report):
    """Keeps one outcome per test: the first failing phase, else the call's outcome."""
    entry = _outcomes.get(report.nodeid)
    if entry is not None and entry["outcome"] != "passed":
        return
    if report.when == "call" or report.outcome != "passed":
        message = ""
        if report.outcome != "passed":
            message = _failure_message(report.longrepr)
        _outcomes[report.nodeid] = {"outcome": report.outcome, "message": message[:400]}


def _failure_message(longrepr):
    """The assertion or exception of a failure (its crash line), or a skip's reason."""
    if isinstance(longrepr, tuple):
        return longrepr[2]
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None:
        return crash.message
    text = str(longrepr).strip()
    return text.splitlines()[-1] if text else ""


def pytest_sessionfinish(session):
    path = os.environ.get("AGENT_CHAT_OURS_REPORT")
    if path:
        with open(path, "w", encoding="utf-8") as report:
            json.dump({"tests": _outcomes}, report, indent=1, sort_keys=True)
