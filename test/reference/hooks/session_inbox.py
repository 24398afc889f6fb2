"""chat.py's hooks/session_inbox.py (its Claude Code SessionStart hook) for its own tests/test_hooks.py: runs
our `agent-chat hook session-start --format claude` (AGENT_CHAT_OURS_CLI, run by AGENT_CHAT_OURS_NODE) with
this process's environment, stdin, stdout and stderr, and exits with its status."""

import os
import subprocess
import sys

command = [os.environ.get("AGENT_CHAT_OURS_NODE", "node"), os.environ["AGENT_CHAT_OURS_CLI"]]
sys.exit(subprocess.run([*command, "hook", "session-start", "--format", "claude"]).returncode)
