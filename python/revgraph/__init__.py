"""revgraph: train the reversible MLP of docs/spec.md on 9x9 digits and predict, from Python.

    import revgraph
    result = revgraph.fit_predict(train_images, train_labels, test_images, epochs=2)
    result.predictions  # int64 (Q,)

The same engine as the `revgraph` command, with the same bytes for the same inputs and config.
`python3 -m revgraph learn|score` is the MNIST-medium harness's way in.
"""
from . import _core
from ._api import (LEADERBOARD_BANDS, Result, Task, backends, band_rule, band_verdict, configure_gpu, data_embedded,
                   data_mnist, export, fit_predict, qualify, run_together, verify)

__version__ = _core.version()
__all__ = ["LEADERBOARD_BANDS", "Result", "Task", "backends", "band_rule", "band_verdict", "configure_gpu",
           "data_embedded", "data_mnist", "export", "fit_predict", "qualify", "run_together", "verify", "__version__"]
