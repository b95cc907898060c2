"""Whose memory an array is: handing a result to the user without copying it.

A backward pass may give the user its arrays as they are, when nothing else holds their
memory: an array that owns its data, or a whole block of memory leased to one array
alone (``Lease``: ``compiler.buffers`` recycles the memory of large kernel outputs so).
``exclusive_owner`` names that owner; two results with one owner share memory, so one
of them is copied (``frontend.autograd.user_array``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["Lease", "exclusive_owner"]


class Lease:
    """The base of an array made over a block of memory leased to it alone: numpy keeps
    the lease as the array's ``base``, and every view of the array keeps it alive."""

    __slots__ = ("block",)

    def __init__(self, block: np.ndarray) -> None:
        self.block = block


def exclusive_owner(array: Any) -> object | None:
    """The object whose memory ``array`` covers exactly and alone, else None.

    That is ``array`` itself when it owns its data, and its lease when it is a whole
    leased block (possibly reshaped). Two arrays with the same owner share memory; an
    array with an owner that no other result has can be handed to the user without a
    copy. Read-only and non-C-contiguous arrays have none.
    """
    if type(array) is not np.ndarray:
        return None
    flags = array.flags
    if not (flags.writeable and flags.c_contiguous):
        return None
    if flags.owndata:
        return array
    base = array.base
    if type(base) is np.ndarray:  # a view of a leased array (numpy keeps that as its base)
        base = base.base
    if isinstance(base, Lease) and array.nbytes == base.block.nbytes:
        return base
    return None
