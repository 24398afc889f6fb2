#!/usr/bin/env python3
"""A stand-in for the reference chat.py, for the bench's baseline rows when the real one is not
on the machine (pass it with --chat-py=PATH): post, read and wait as the SPEC describes the
reference (Python stdlib, argparse, the _seq.lock mkdir lock, the next number from the folder's
file names, .cursors/<agent>.txt, wait by sleep-poll). It starts what the reference starts (the
interpreter, argparse, the folder calls); it is no second implementation to use.
"""
import argparse
import datetime
import os
import re
import sys
import time

SEQ = re.compile(r"^(\d+)-.*\.md$")


def root():
    return os.environ.get("AGENT_CHAT_ROOT") or os.path.expanduser("~/agent-chat")


def seqs(ch):
    out = []
    for name in os.listdir(ch):
        m = SEQ.match(name)
        if m:
            out.append((int(m.group(1)), name))
    return sorted(out)


def parse(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    head, _, body = text[4:].partition("\n---\n")
    meta = dict(line.split(": ", 1) for line in head.splitlines() if ": " in line)
    return meta, body, text


def relevant(meta, me):
    to = meta.get("to", "all").strip("[]")
    return to == "all" or me in [t.strip() for t in to.split(",")] or meta.get("from") == me


def post(a):
    ch = os.path.join(root(), a.channel)
    lock = os.path.join(ch, "_seq.lock")
    while True:
        try:
            os.mkdir(lock)
            break
        except FileExistsError:
            if time.time() - os.stat(lock).st_mtime > 30:
                os.rmdir(lock)
            time.sleep(0.05)
    try:
        n = (seqs(ch) or [(0, "")])[-1][0] + 1
        title = a.title or a.body.splitlines()[0][:60]
        slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:40] or "msg"
        ts = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        path = os.path.join(ch, f"{n:04d}-{a.sender}-{slug}.md")
        with open(path, "w", encoding="utf-8") as f:
            f.write(f"---\nseq: {n}\nfrom: {a.sender}\nto: {a.to}\nchannel: {a.channel}\n"
                    f"ts: {ts}\nstatus: {a.status}\ntitle: {title}\n---\n{a.body}\n")
    finally:
        os.rmdir(lock)
    print(f"posted #{n} {path}")


def cursor_path(ch, me):
    return os.path.join(ch, ".cursors", f"{me}.txt")


def unread(ch, me):
    try:
        with open(cursor_path(ch, me)) as f:
            cur = int(f.read().strip() or 0)
    except FileNotFoundError:
        cur = 0
    items = [(n, name) for n, name in seqs(ch) if n > cur]
    return cur, items


def deliver(ch, me, items):
    for _, name in items:
        meta, _, text = parse(os.path.join(ch, name))
        if relevant(meta, me):
            print("=" * 70)
            print(text)
    if items:
        os.makedirs(os.path.join(ch, ".cursors"), exist_ok=True)
        with open(cursor_path(ch, me), "w") as f:
            f.write(str(items[-1][0]))


def read(a):
    ch = os.path.join(root(), a.channel)
    _, items = unread(ch, a.as_)
    deliver(ch, a.as_, items)


def wait(a):
    ch = os.path.join(root(), a.channel)
    deadline = time.time() + a.timeout
    while time.time() < deadline:
        _, items = unread(ch, a.as_)
        mine = [i for i in items if relevant(parse(os.path.join(ch, i[1]))[0], a.as_)]
        if mine:
            deliver(ch, a.as_, items)
            return 0
        time.sleep(a.interval)
    return 2


def main():
    p = argparse.ArgumentParser(prog="chat.py")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("post")
    s.add_argument("channel")
    s.add_argument("--from", dest="sender", required=True)
    s.add_argument("--to", default="all")
    s.add_argument("--title", default="")
    s.add_argument("--status", default="discussion")
    s.add_argument("--body", required=True)
    for name in ("read", "wait"):
        s = sub.add_parser(name)
        s.add_argument("channel")
        s.add_argument("--as", dest="as_", required=True)
        s.add_argument("--timeout", type=float, default=900)
        s.add_argument("--interval", type=float, default=5)
    a = p.parse_args()
    sys.exit({"post": post, "read": read, "wait": wait}[a.cmd](a) or 0)


if __name__ == "__main__":
    main()
