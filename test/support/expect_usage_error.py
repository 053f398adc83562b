"""Runs a command that must refuse its arguments as a usage error: exit 2, nothing on stdout, and
one line on stderr that begins with the program's name ("NAME: ..."). meson's should_fail would
pass any non-zero exit: a crash, an assertion or a missing device as well as the refusal.

usage: expect_usage_error.py PROGRAM [ARGUMENT...]"""
import os
import subprocess
import sys

command = sys.argv[1:]
if not command:
    sys.exit(__doc__.strip().splitlines()[-1])
p = subprocess.run(command, capture_output=True, text=True, timeout=60)
name = os.path.basename(command[0])
lines = p.stderr.splitlines()
problems = []
if p.returncode != 2:
    problems.append(f"exit {p.returncode}, not 2")
if p.stdout:
    problems.append(f"{len(p.stdout.splitlines())} line(s) on stdout")
if len(lines) != 1 or not lines[0].startswith(name + ": "):
    problems.append(f"stderr is {len(lines)} line(s), not one beginning '{name}: '")
if problems:
    print(f"FAIL: {' '.join(command)}: {'; '.join(problems)}\nstderr:\n{p.stderr}")
    sys.exit(1)
print("ok:", lines[0])
