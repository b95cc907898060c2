"""``tidu_compile.optim``: torch.optim's optimizers, each step ONE compiled program for
all parameters.

>>> opt = tc.optim.Adam([w, b], lr=1e-3)
>>> for x, y in batches:
...     opt.zero_grad()
...     loss = tc.mean((model(x) - y) ** 2)
...     loss.backward()
...     opt.step()

``SGD`` (momentum, dampening, Nesterov, weight decay), ``Adam`` (amsgrad, coupled or
decoupled weight decay) and ``AdamW`` follow torch's update formulas operation for
operation (``sgd``, ``adam``); ``Optimizer`` is the base (parameter groups,
``zero_grad``, the fused ``step``).
"""

from tidu_compile.optim.adam import Adam, AdamW
from tidu_compile.optim.optimizer import Optimizer
from tidu_compile.optim.sgd import SGD

__all__ = ["SGD", "Adam", "AdamW", "Optimizer"]
