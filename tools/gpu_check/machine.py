"""What the GPU machine has: its GPU's architecture, the CUDA toolkit's runtime, and the tools
and libraries the log records."""
import glob
import os
import shutil
import subprocess
import sys


def toolkit_library_dir():
    """The CUDA toolkit's library folder holding libcudart, for binaries built on the device."""
    nvcc = shutil.which("nvcc")
    if not nvcc:
        return ""
    cuda = os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))
    for d in ("lib64", "lib", "targets/x86_64-linux/lib"):
        if glob.glob(os.path.join(cuda, d, "libcudart.so*")):
            return os.path.join(cuda, d)
    return ""


def gpu_arch():
    try:
        cap = subprocess.run(["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30).stdout.split("\n")[0].strip().replace(".", "")
        return cap if cap.isdigit() else "90"
    except (OSError, subprocess.SubprocessError):
        return "90"


def environment_log(runner, ctx):
    def cmd(*argv):
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError) as e:
            return f"({argv[0]}: {e})"

    runner.log_file.write("== nvidia-smi\n" + cmd("nvidia-smi") + "\n")
    runner.log_file.write("== nvcc\n" + cmd("nvcc", "--version") + "\n")
    runner.log_file.write(f"== python {sys.executable} {sys.version.split()[0]}\n")
    for tool in ("compute-sanitizer", "ncu", "nsys", "meson", "ninja"):
        runner.log_file.write(f"== {tool}: {shutil.which(tool) or 'not on the PATH'}\n")
    # Where cuBLASLt could come from (the loader's order: engine/cuda/cublaslt_loader.hpp); the file
    # the `cuda` products ran on is gpu_validation's cublaslt_library, in the report.
    found = sorted(set(glob.glob("/usr/local/cuda*/lib*/libcublasLt.so.*") +
                       glob.glob("/usr/local/cuda*/targets/*/lib/libcublasLt.so.*") +
                       glob.glob(os.path.join(sys.prefix, "lib", "python3*", "*-packages", "nvidia", "*", "lib",
                                              "libcublasLt.so.*"))))
    runner.log_file.write("== libcublasLt candidates: " + (", ".join(found) or "none found") + "\n")
