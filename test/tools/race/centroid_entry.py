#!POPCORN leaderboard mnist-medium-12pct
#!POPCORN gpu A100
"""The race tests' CPU entry: nearest class mean (test/tools/test_race.py). It passes the static
rules and returns valid outputs; it is far from any band (~80 % on MNIST-medium), which the tests
use to see the band fail."""
import torch

CLASSES = 10


def custom_kernel(data):
    train_x, train_y, test_x = data
    x = train_x.reshape(train_x.shape[0], -1)
    q = test_x.reshape(test_x.shape[0], -1)
    sums = torch.zeros((CLASSES, x.shape[1]), dtype=x.dtype, device=x.device).index_add_(0, train_y, x)
    counts = torch.bincount(train_y, minlength=CLASSES).to(x.dtype).clamp_min(1)
    means = sums / counts[:, None]
    distances = (q * q).sum(1, keepdim=True) - 2.0 * q @ means.T + (means * means).sum(1)[None, :]
    return distances.argmin(1)
