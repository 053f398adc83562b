"""The commit gpu-check reports: git's HEAD, $GIT_COMMIT, or the one tools/pack-gpu-deps packed
while the tree is still that commit."""
import hashlib
import os
import subprocess


def tracked_files_match(root):
    """(True, "") where every file .gpudeps/sources.sha256 lists has the content it had when packed."""
    listing = os.path.join(root, ".gpudeps", "sources.sha256")
    if not os.path.exists(listing):
        return False, "no .gpudeps/sources.sha256"
    with open(listing, encoding="utf-8") as f:
        lines = f.read().splitlines()
    for line in lines:
        digest, _, rel = line.partition("  ")
        try:
            with open(os.path.join(root, rel), "rb") as f:
                if hashlib.sha256(f.read()).hexdigest() != digest:
                    return False, f"{rel} differs from the packed commit"
        except OSError:
            return False, f"{rel} is missing"
    return True, ""


def detect_commit(root, env):
    """(commit, how): git's HEAD where the tree is HEAD's, else $GIT_COMMIT, else the packed commit
    where the tree is its. A lent GPU machine can hold a .git older than the tree that travelled (the
    first H200 call 2 reported the commit before the one it ran), so HEAD counts only with no tracked
    file changed."""
    why_not_git = ""
    if os.path.exists(os.path.join(root, ".git")):  # a folder, or a file in a git worktree
        try:
            head = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True, text=True,
                                  timeout=20).stdout.strip()
            if head:
                status = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                                        capture_output=True, text=True, timeout=60)
                changed = [line for line in status.stdout.splitlines() if line.strip()]
                if status.returncode == 0 and not changed:
                    return head, "git"
                why_not_git = (f"git's HEAD {head[:12]} is not the tree ({len(changed)} tracked files differ)"
                               if status.returncode == 0 else f"git status failed: {status.stderr.strip()[:200]}")
        except (OSError, subprocess.SubprocessError):
            pass
    if env.get("GIT_COMMIT"):
        return env["GIT_COMMIT"], "GIT_COMMIT"
    packed = os.path.join(root, ".gpudeps", "COMMIT")
    if os.path.exists(packed):
        with open(packed) as f:
            commit = f.read().strip()
        same, why = tracked_files_match(root)
        if same:
            return commit, ".gpudeps/COMMIT (every tracked file as packed)" + (f"; {why_not_git}" if why_not_git else "")
        return "unknown", f"the tree is not {commit}: {why}" + (f"; {why_not_git}" if why_not_git else "")
    return "unknown", why_not_git or "no .git, no GIT_COMMIT, no .gpudeps/COMMIT"
