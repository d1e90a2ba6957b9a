#!/usr/bin/env python3
"""Rewrites the README's sample outputs: every code block that starts with
one `$ schedlab ...` line gets that command's output from the binary given
(default: target/debug/schedlab, the README's first command's). crates/schedlab-cli/tests/readme.rs
checks the same blocks.

    cargo build && python3 tools/readme-samples.py
"""
import shlex
import subprocess
import sys

binary = sys.argv[1] if len(sys.argv) > 1 else "target/debug/schedlab"
lines = open("README.md").read().split("\n")
out, i = [], 0
while i < len(lines):
    out.append(lines[i])
    if lines[i].startswith("```"):
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        block = lines[i + 1 : j]
        commands = [l for l in block if l.startswith("$ ")]
        if block and block[0].startswith("$ schedlab ") and len(commands) == 1:
            args = shlex.split(block[0][len("$ schedlab ") :])
            printed = subprocess.run([binary, *args], capture_output=True, text=True, check=True).stdout
            out.append(block[0])
            out.extend(l.rstrip() for l in printed.rstrip("\n").split("\n"))
        else:
            out.extend(block)
        if j < len(lines):
            out.append(lines[j])
        i = j + 1
        continue
    i += 1
open("README.md", "w").write("\n".join(out))
