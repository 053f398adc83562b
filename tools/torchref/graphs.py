"""A task's reset, epoch and predict captured as CUDA graphs (or, on CPU, their sequencing emulated)."""
import time

import torch

class GraphRunner:
    """reset, one epoch (reading perm_buf) and predict, each captured once as a CUDA graph.
    run(): replay reset; per epoch copy the resident permutation into perm_buf (device to
    device) and replay the epoch graph; replay predict. Warm-up runs on a side stream first.
    With emulate=True (CPU only, for checking the sequencing), "capture" records the Python
    callable and "replay" calls it."""

    def __init__(self, task, warmups=2, emulate=False):
        """warmups: eager runs of the whole task on a side stream before capture."""
        self.task, self.emulate = task, emulate
        t0 = time.perf_counter()
        if emulate:
            self.graphs = {"reset": task.reset, "epoch": task.epoch, "predict": task.predict}
            self.capture_seconds = 0.0
            return
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(warmups):
                task.run()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        self.warmup_seconds = time.perf_counter() - t0
        t0 = time.perf_counter()
        self.graphs = {}  # each graph keeps its own private memory pool
        task.set_epoch(0)  # perm_buf holds a valid permutation while capturing
        for name, fn in (("reset", task.reset), ("epoch", task.epoch), ("predict", task.predict)):
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                fn()
            self.graphs[name] = g
        torch.cuda.synchronize()
        self.capture_seconds = time.perf_counter() - t0

    def _replay(self, name):
        g = self.graphs[name]
        g() if self.emulate else g.replay()

    def run(self):
        self._replay("reset")
        for e in range(self.task.cfg["epochs"]):
            self.task.set_epoch(e)
            self._replay("epoch")
        self._replay("predict")
