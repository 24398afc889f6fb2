"""A pytest plugin that runs the reference chat.py's own tests against our CLI.

Loaded with `-p ours_as_chat` before the reference's test files are collected, it replaces
`chat.main` and `chat.cmd_init` with calls of our CLI (`node dist/cli.cjs`) as a subprocess:
what ours prints goes to the test's sys.stdout and sys.stderr (so `redirect_stdout` captures it),
and its exit status is returned or raised the way the reference's `main` does (nothing on 0,
`SystemExit(status)` otherwise; `cmd_init` raises the reference's `AgentChatError`). Every other
name of the reference (`TaskStore`, `LeaseStore`, `PathLockStore`, `chat.message_files`) stays
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


def run_ours(argv):
    """Runs our CLI with `argv`; copies its output into the current sys.stdout and sys.stderr."""
    completed = subprocess.run(
        [NODE, CLI, *argv],
        stdin=subprocess.DEVNULL,
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


chat.main = main
chat.cmd_init = cmd_init

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
