"""An MLP classifier, written as autograd's ``examples/neural_net.py`` (with
``import tidu_compile.numpy as np``), on a toy data set of integer labels.

The labels are integers and the log-likelihood picks each point's log-probability by
indexing (``log_probs[np.arange(points), labels]``, a gather) instead of multiplying
by one-hot targets; ``log_softmax`` subtracts the row maximum before ``exp`` (autograd's
``logsumexp``, written with numpy's names only). The parameters are drawn by the
example's ``make_inputs`` (autograd's ``init_random_params``: ``scale * randn``, with
``scale = 0.3``).
"""

import tidu_compile.numpy as np
import tidu_compile.numpy.random as npr


def log_softmax(x):
    m = np.max(x, axis=1, keepdims=True)
    return x - (m + np.log(np.sum(np.exp(x - m), axis=1, keepdims=True)))


def neural_net_predict(params, inputs):
    """Implements a deep neural network for classification.
    params is a list of (weights, bias) tuples.
    inputs is an (N x D) matrix.
    returns normalized class log-probabilities."""
    for W, b in params:
        outputs = np.dot(inputs, W) + b
        inputs = np.tanh(outputs)
    return log_softmax(outputs)


def l2_norm(params):
    """Computes l2 norm of params by flattening them into a vector."""
    return sum(np.sum(W**2) + np.sum(b**2) for W, b in params)


def log_posterior(params, inputs, labels, L2_reg):
    log_prior = -L2_reg * l2_norm(params)
    log_probs = neural_net_predict(params, inputs)
    log_lik = np.sum(log_probs[np.arange(len(labels)), labels])
    return log_prior + log_lik


# A toy data set: three classes of points around three centres in the plane.
classes, points = 3, 60
rs = npr.RandomState(1)
labels = rs.randint(0, classes, size=points)
centres = np.array([[1.0, 0.0], [-0.5, 0.9], [-0.5, -0.9]])
inputs = centres[labels] + 0.4 * rs.randn(points, 2)

layer_sizes = [2, 8, classes]
L2_reg = 0.01


def objective(params):
    return -log_posterior(params, inputs, labels, L2_reg) / points
