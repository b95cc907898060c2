"""A small CNN classifier on MNIST-sized images (28 x 28, random data with a learnable
pattern per class), written with numpy's names only: its convolution is
``sliding_window_view`` and an ``einsum``, as a numpy or autograd user writes it.

    windows = sliding_window_view(images, (3, 3), axis=(1, 2))   # (N, 26, 26, 3, 3)
    conv    = einsum("nhwij,fij->nfhw", windows, filters)         # (N, F, 26, 26)

then ``tanh``, a 2 x 2 mean pool (a reshape and a mean), a dense layer and
``log_softmax`` cross-entropy of integer labels, plus an L2 penalty. The same program
runs with ``import numpy as np`` (no gradient); ``tc.conv(x, w)`` is the same layer in
one call (``tests/frontend/test_examples.py`` checks they agree).
"""

import tidu_compile.numpy as np
import tidu_compile.numpy.random as npr
from tidu_compile.numpy.lib.stride_tricks import sliding_window_view


def log_softmax(x):
    m = np.max(x, axis=1, keepdims=True)
    return x - (m + np.log(np.sum(np.exp(x - m), axis=1, keepdims=True)))


def conv2d(images, filters):
    """``out[n, f, h, w] = sum_ij images[n, h + i, w + j] * filters[f, i, j]`` (valid)."""
    windows = sliding_window_view(images, filters.shape[1:], axis=(1, 2))
    return np.einsum("nhwij,fij->nfhw", windows, filters)


def mean_pool(x):
    """2 x 2 mean pooling of ``(N, F, H, W)`` (``H`` and ``W`` even)."""
    n, f, h, w = x.shape
    return np.mean(np.reshape(x, (n, f, h // 2, 2, w // 2, 2)), axis=(3, 5))


def predict(filters, filter_bias, weights, bias, images):
    """Class log-probabilities of ``images`` ``(N, 28, 28)``."""
    hidden = np.tanh(conv2d(images, filters) + filter_bias[:, None, None])
    pooled = np.reshape(mean_pool(hidden), (images.shape[0], -1))
    return log_softmax(np.dot(pooled, weights) + bias)


# Random MNIST-sized data: each class a random template, each image its noisy copy.
classes, points, size, channels = 10, 16, 28, 4
rs = npr.RandomState(0)
labels = rs.randint(0, classes, size=points)
templates = rs.randn(classes, size, size)
images = templates[labels] + 0.5 * rs.randn(points, size, size)

features = channels * ((size - 2) // 2) ** 2
param_shapes = ((channels, 3, 3), (channels,), (features, classes), (classes,))
L2_reg = 0.001


def objective(filters, filter_bias, weights, bias):
    log_probs = predict(filters, filter_bias, weights, bias, images)
    log_lik = np.sum(log_probs[np.arange(points), labels]) / points
    penalty = L2_reg * (np.sum(filters**2) + np.sum(weights**2))
    return penalty - log_lik
