"""Black-box stochastic variational inference, written as autograd's
``examples/black_box_svi.py`` (with ``import tidu_compile.numpy as np``): a diagonal
Gaussian fitted to the posterior of a Bayesian logistic regression.

The variational parameters are one vector, ``mean, log_std = params[:D], params[D:]``
(slices), as in autograd; the target's log density is written out (no ``scipy.stats``).
The objective draws its samples from ``npr.RandomState(t)``, so one iteration ``t`` is
a deterministic function of the parameters (which central differences need).
"""

import tidu_compile.numpy as np
import tidu_compile.numpy.random as npr


def black_box_variational_inference(logprob, D, num_samples):
    """Implements http://arxiv.org/abs/1401.0118, and uses the
    local reparameterization trick from http://arxiv.org/abs/1506.02557"""

    def gaussian_entropy(log_std):
        return 0.5 * D * (1.0 + np.log(2 * np.pi)) + np.sum(log_std)

    def unpack_params(params):
        # Variational dist is a diagonal Gaussian.
        mean, log_std = params[:D], params[D:]
        return mean, log_std

    def variational_objective(params, t):
        """Provides a stochastic estimate of the variational lower bound."""
        mean, log_std = unpack_params(params)
        rs = npr.RandomState(t)
        samples = rs.randn(num_samples, D) * np.exp(log_std) + mean
        lower_bound = gaussian_entropy(log_std) + np.mean(logprob(samples, t))
        return -lower_bound

    return variational_objective


# The target: the posterior of a Bayesian logistic regression on a toy data set.
D, N = 3, 40
data_rs = npr.RandomState(2)
X = data_rs.randn(N, D)
signs = np.where(np.dot(X, np.array([1.5, -2.0, 0.5])) + 0.3 * data_rs.randn(N) > 0, 1.0, -1.0)


def log_density(w, t):
    """log p(w) + sum log sigmoid(sign * (x . w)) for every sample w (rows of ``w``)."""
    margins = np.dot(w, X.T) * signs
    log_likelihood = -np.sum(np.log(1 + np.exp(-margins)), axis=1)
    log_prior = -0.5 * np.sum(w**2, axis=1)
    return log_likelihood + log_prior


objective = black_box_variational_inference(log_density, D, num_samples=50)
