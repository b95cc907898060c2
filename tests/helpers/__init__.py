"""Shared numeric utilities for the op and frontend tests.

Import as ``helpers`` (the ``conftest.py`` of each test folder puts ``tests/`` on
``sys.path``).
"""

from helpers.frontend import check_frontend_grad
from helpers.numeric import (
    FD_STEP,
    adjoint_tolerance,
    assert_grad_close,
    central_difference_grad,
    grad_tolerance,
    is_low_precision,
    random_array,
    real_inner,
    widen_dtype,
)

__all__ = [
    "FD_STEP",
    "adjoint_tolerance",
    "check_frontend_grad",
    "assert_grad_close",
    "central_difference_grad",
    "grad_tolerance",
    "is_low_precision",
    "random_array",
    "real_inner",
    "widen_dtype",
]
