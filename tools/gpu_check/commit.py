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


def _git(root, *args):
    return subprocess.run(["git", "-C", root, *args], capture_output=True, text=True, timeout=60)


def detect_commit(root, env):
    """(commit, how): the commit whose files the tree holds. Where both git's HEAD (no tracked file
    changed) and the commit tools/pack-gpu-deps packed (every file it listed as packed) fit, HEAD
    wins if the packed commit is its ancestor (the tree moved on, the pack is old) and the packed
    commit wins if git does not know it (the .git is older than the tree: a GPU machine's copy was,
    and the first H200 call 2 reported the commit before the one it ran; a later commit that only
    adds files passes git's own check there). Else $GIT_COMMIT, else "unknown"."""
    head, why_not_git = "", ""
    if os.path.exists(os.path.join(root, ".git")):  # a folder, or a file in a git worktree
        try:
            head = _git(root, "rev-parse", "HEAD").stdout.strip()
            if head:
                status = _git(root, "status", "--porcelain", "--untracked-files=no")
                changed = [line for line in status.stdout.splitlines() if line.strip()]
                if status.returncode != 0:
                    why_not_git, head = f"git status failed: {status.stderr.strip()[:200]}", ""
                elif changed:
                    why_not_git = f"git's HEAD {head[:12]} is not the tree ({len(changed)} tracked files differ)"
                    head = ""
        except (OSError, subprocess.SubprocessError):
            head = ""
    packed, packed_why = "", ""
    listing = os.path.join(root, ".gpudeps", "COMMIT")
    if os.path.exists(listing):
        with open(listing) as f:
            candidate = f.read().strip()
        same, why = tracked_files_match(root)
        if same:
            packed = candidate
        else:
            packed_why = f"the tree is not {candidate}: {why}"
    if head and packed and packed != head:
        try:
            older = _git(root, "merge-base", "--is-ancestor", packed, head).returncode == 0
        except (OSError, subprocess.SubprocessError):
            older = False
        if not older:
            return packed, (".gpudeps/COMMIT (every tracked file as packed; git's HEAD "
                            f"{head[:12]} does not have it as an ancestor)")
    if head:
        return head, "git"
    if env.get("GIT_COMMIT"):
        return env["GIT_COMMIT"], "GIT_COMMIT"
    if packed:
        return packed, ".gpudeps/COMMIT (every tracked file as packed)" + (f"; {why_not_git}" if why_not_git else "")
    if packed_why:
        return "unknown", packed_why + (f"; {why_not_git}" if why_not_git else "")
    return "unknown", why_not_git or "no .git, no GIT_COMMIT, no .gpudeps/COMMIT"
