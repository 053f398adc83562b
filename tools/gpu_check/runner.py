"""Runs steps under their limits within one budget, logs them and records steps.tsv; packs the
artifacts the device call brings back."""
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time

from .steps import ROOT


class Runner:
    """Runs steps under their limits within one budget; logs; records steps.tsv for the report."""

    def __init__(self, ctx, budget, log_path):
        self.ctx, self.budget, self.start = ctx, budget, time.time()
        self.log_file = open(log_path, "a", buffering=1)
        self.steps_tsv = ctx.s("steps.tsv")
        open(self.steps_tsv, "a").close()

    def log(self, text):
        line = f"[gpu-check +{int(time.time() - self.start)}s] {text}"
        print(line, file=sys.stderr, flush=True)
        self.log_file.write(line + "\n")

    def record(self, name, rc, seconds):
        with open(self.steps_tsv, "a") as f:
            f.write(f"{name}\t{rc}\t{seconds:.2f}\n")

    def run(self, step):
        left = self.budget - (time.time() - self.start)
        if left < 15:
            self.log(f"{step.name}: skipped, time budget spent")
            self.record(step.name, "skipped", 0)
            return None
        limit = int(min(step.limit, left))
        exe = step.cmd[0]
        if not (os.path.isabs(exe) and os.access(exe, os.X_OK)) and shutil.which(exe) is None:
            self.log(f"{step.name}: not run, {exe} not found")
            self.record(step.name, "not-found", 0)
            return None
        env = dict(os.environ, **(step.env or {}))
        if step.ours and self.ctx.ld_path:
            env["LD_LIBRARY_PATH"] = self.ctx.ld_path + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        elif self.ctx.ld_path:  # not ours (torch's process): only for the binaries of ours it starts
            env["REVGRAPH_LD_PATH"] = self.ctx.ld_path
        self.log(f"{step.name}: start (limit {limit}s)")
        self.log_file.write("$ " + " ".join(step.cmd) + "\n")
        t0 = time.time()
        p = subprocess.Popen(step.cmd, stdin=subprocess.DEVNULL, stdout=self.log_file, stderr=subprocess.STDOUT,
                             env=env, cwd=ROOT, start_new_session=True)
        try:
            rc = p.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
                try:
                    os.killpg(p.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    p.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
            rc = 124
        dt = time.time() - t0
        self.record(step.name, rc, dt)
        self.log(f"{step.name}: exit {rc} after {dt:.2f}s")
        return rc


def pack_artifacts(ctx):
    tmp = os.path.join(ctx.out, ".artifacts.tar.gz")
    with tarfile.open(tmp, "w:gz") as tar:
        tar.add(ctx.art, arcname="artifacts")
    os.replace(tmp, os.path.join(ctx.out, "artifacts.tar.gz"))
