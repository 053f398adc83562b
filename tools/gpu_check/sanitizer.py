"""compute-sanitizer's logs judged: what each sanitize-* step found, and whether it fails the report."""
import os


def classify_sanitizer_log(text):
    """What compute-sanitizer reported, block by block: hazards (memory, race, initialisation), API
    errors inside cuBLASLt (its own probing, recorded) and API errors elsewhere, and any line about
    a limit (recorded). Each report starts at a '========= ' line that is not indented further."""
    blocks, current = [], None
    for line in text.splitlines():
        if not line.startswith("========="):
            continue
        body = line[len("========="):]
        if body.startswith(" ") and not body.startswith("  "):
            current = [body.strip()]
            blocks.append(current)
        elif current is not None:
            current.append(body.strip())
    out = {"hazards": 0, "api_errors_in_cublaslt": 0, "api_errors_elsewhere": 0, "limit_lines": [], "examples": []}
    for b in blocks:
        head = b[0]
        if "limit" in head.lower():
            out["limit_lines"].append(head)
            continue
        if head.startswith(("COMPUTE-SANITIZER", "ERROR SUMMARY", "RACECHECK SUMMARY", "LEAK SUMMARY")):
            continue
        if "Target application" in head or "terminate successfully" in head:
            continue  # the program's end (a limit's signal, an exit status): no finding of the tool's
        if head.startswith("Program hit"):
            key = "api_errors_in_cublaslt" if any("libcublasLt" in x for x in b) else "api_errors_elsewhere"
        elif head.startswith(("Invalid", "Misaligned", "Out of range", "Error", "Race", "Uninitialized", "Warning",
                              "Barrier", "Hazard", "Malloc", "Free", "Address", "Cuda", "CUDA", "Device")):
            key = "hazards"
        else:
            continue
        out[key] += 1
        if len(out["examples"]) < 5:
            out["examples"].append(head)
    return out


def sanitizer_verdicts(steps, artifacts):
    """Per sanitize-* step: its exit, what its log holds, and whether it fails the report."""
    verdicts = {}
    for name, st in steps.items():
        if not name.startswith("sanitize-"):
            continue
        v = dict(st)
        try:
            with open(os.path.join(artifacts, name + ".log"), errors="replace") as f:
                v.update(classify_sanitizer_log(f.read()))
            has_log = True
        except OSError:
            has_log = False
        rc = st.get("exit")
        # --error-exitcode 3 marks a finding; any other failing exit is the tool or the program not
        # running under it (e.g. "Device not supported" on some GPU machines): recorded only.
        if rc in ("not-found", "skipped", 127):
            v["verdict"] = "not run"
        elif rc in (124, 137):
            # What it logged before the limit stands: a race found in the first epochs of a run
            # that then ran out of time is a race (racecheck slows kernels 10-100x).
            found = has_log and (v["hazards"] or v["api_errors_elsewhere"])
            v["verdict"] = "found errors" if found else "ran out of time (recorded)"
            if found:
                v["ran_out_of_time"] = True
        elif rc == 3 or (rc == 0 and has_log and (v["hazards"] or v["api_errors_elsewhere"])):
            if has_log and not v["hazards"] and not v["api_errors_elsewhere"] and v["api_errors_in_cublaslt"]:
                v["verdict"] = "API errors inside cuBLASLt only (recorded)"
            else:
                v["verdict"] = "found errors"  # what the log says, or the exit status at its word
        elif rc == 0:
            v["verdict"] = "clean" + (" (API errors inside cuBLASLt recorded)" if has_log and v["api_errors_in_cublaslt"]
                                      else "")
        else:
            v["verdict"] = f"not run (exit {rc}: the tool could not run here)"
        verdicts[name] = v
    return verdicts
