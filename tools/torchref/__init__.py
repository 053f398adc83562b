"""The same-spec PyTorch learner (docs/spec.md §2-§8) as a package, for the tools that use it:

  spec     sizes, config, parameter names, permutations, hashes (numpy alone)
  inputs   a task's inputs, checked
  model    initial parameters, the reversible core and its inverse, scores (torch)
  task     one task on static buffers (reset, epochs of SGD, predict)
  graphs   the task's pieces captured as CUDA graphs
  checks   --check-gradients
  cli      the command, tools/torch_reference.py (usage there and in cli's header)

Import it with tools/ on sys.path: a script in tools/ has it there already; bench/ scripts add it
once; meson's tests get it from PYTHONPATH (test/meson.build).
"""
import os

# The published learner configured cuBLAS's workspace before CUDA initialisation (seed report,
# "workspace": ":16:8"); it must be in the environment before torch touches the GPU, so it is set
# here, before any module of the package imports torch.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":16:8")
