"""Logistic regression, written as autograd's ``examples/logistic_regression.py``: the
only change is the import (``import tidu_compile.numpy as np``).

``training_loss(weights)`` is the negative log-likelihood of the toy labels.
"""

import tidu_compile.numpy as np


def sigmoid(x):
    return 0.5 * (np.tanh(x / 2.0) + 1)


def logistic_predictions(weights, inputs):
    # Outputs probability of a label being true according to logistic model.
    return sigmoid(np.dot(inputs, weights))


# Build a toy dataset.
inputs = np.array([[0.52, 1.12, 0.77],
                   [0.88, -1.08, 0.15],
                   [0.52, 0.06, -1.30],
                   [0.74, -2.49, 1.39]])  # fmt: skip
targets = np.array([True, True, False, True])


def training_loss(weights):
    # Training loss is the negative log-likelihood of the training labels.
    preds = logistic_predictions(weights, inputs)
    label_probabilities = preds * targets + (1 - preds) * (1 - targets)
    return -np.sum(np.log(label_probabilities))
