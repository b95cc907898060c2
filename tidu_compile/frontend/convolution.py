"""Convolutions as im2col: a window ``Gather`` and one ``DotGeneral`` (BLAS calls).

``conv`` is ``jax.lax.conv_general_dilated`` (and ``torch.nn.functional.conv2d``'s
cross-correlation, no kernel flip) over 1, 2 or 3 spatial dimensions::

    y[n, o, p] = sum_{c, j} x[n, g(o) * C/G + c, p * stride + j * dilation - pad_lo] * w[o, c, j]

for ``layout="NCHW"`` (``x`` of shape ``(N, C, *S)``, ``w`` ``(O, C/G, *K)``, ``y`` ``(N,
O, *S')``) and ``"NHWC"`` (``x`` ``(N, *S, C)``, ``w`` ``(*K, C/G, O)``, jax's
``HWIO``, ``y`` ``(N, *S', O)``). Recorded as::

    Pad (zeros) -> Gather (windows, frontend.windows) -> DotGeneral (taps and channels)

NHWC: ``patches (N, *S', *K, C)`` contracted with ``w`` over ``(*K, C)``, one matrix
product. NCHW: ``x`` is moved channels last first (the gather is faster so), and the
contraction is batched over ``N`` with ``w`` broadcast (one product per image, as
im2col's), which gives ``(N, O, *S')`` with no transpose of the output. Groups are a
batch dimension of the ``DotGeneral``. The gradient of ``x`` is the scatter-add of the
windows' cotangents (the transposed convolution), that of ``w`` a contraction of the
windows with the output's cotangent, both from the existing rules. ``convolve`` and
``correlate`` are numpy's 1-D functions, the same formula with one channel.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from tidu_compile import ops
from tidu_compile.frontend.arrays import pad as pad_array
from tidu_compile.frontend.elementwise import conj
from tidu_compile.frontend.products import contract, promoted
from tidu_compile.frontend.promotion import broadcast_to
from tidu_compile.frontend.shapes import reshape, transpose
from tidu_compile.frontend.tensor import Tensor, apply1
from tidu_compile.frontend.windows import output_size, windows

__all__ = ["conv", "convolve", "correlate"]

#: Layout names -> (channels last, spatial rank or None for any).
LAYOUTS: dict[str, tuple[bool, int | None]] = {
    "NCHW": (False, None), "NHWC": (True, None),
    "NCW": (False, 1), "NCDHW": (False, 3), "NWC": (True, 1), "NDHWC": (True, 3),
}  # fmt: skip


def _per_dim(value: Any, rank: int, what: str) -> tuple[int, ...]:
    """An int or ``rank`` ints, each at least 1."""
    values = [value] * rank if isinstance(value, int | np.integer) else list(value)
    if len(values) != rank or any(operator.index(v) < 1 for v in values):
        raise ValueError(f"conv: {what} must be a positive int or {rank} of them, got {value!r}")
    return tuple(operator.index(v) for v in values)


def _padding(
    padding: Any, sizes: Sequence[int], kernel: Sequence[int], stride: Sequence[int],
    dilation: Sequence[int],
) -> list[tuple[int, int]]:  # fmt: skip
    """``(low, high)`` zeros per spatial dimension: ``"VALID"`` none, ``"SAME"`` jax's
    (``ceil(n / stride)`` outputs, the odd element high), ints or pairs as given."""
    rank = len(sizes)
    if isinstance(padding, str):
        mode = padding.upper()
        if mode == "VALID":
            return [(0, 0)] * rank
        if mode != "SAME":
            raise ValueError(f"conv: padding {padding!r} is not 'VALID', 'SAME', ints or pairs")
        pairs = []
        for n, k, s, d in zip(sizes, kernel, stride, dilation, strict=True):
            total = max((-(-n // s) - 1) * s + (k - 1) * d + 1 - n, 0)
            pairs.append((total // 2, total - total // 2))
        return pairs
    items = [padding] * rank if isinstance(padding, int | np.integer) else list(padding)
    if len(items) != rank:
        raise ValueError(f"conv: padding {padding!r} does not give {rank} spatial dimensions")
    pairs = []
    for item in items:
        pair = [item, item] if isinstance(item, int | np.integer) else list(item)
        if len(pair) != 2 or min(operator.index(p) for p in pair) < 0:
            raise ValueError(f"conv: padding {padding!r}: each entry is an int >= 0 or a pair")
        pairs.append((operator.index(pair[0]), operator.index(pair[1])))
    return pairs


def _check_channels(x_shape: tuple[int, ...], w_shape: tuple[int, ...], channels: int,
                    in_per_group: int, out_channels: int, groups: int) -> None:  # fmt: skip
    if not isinstance(groups, int | np.integer) or groups < 1:
        raise ValueError(f"conv: groups must be a positive int, got {groups!r}")
    if channels % groups or out_channels % groups:
        raise ValueError(
            f"conv: groups={groups} must divide the input channels ({channels}) and the "
            f"output channels ({out_channels}); x {x_shape}, w {w_shape}"
        )
    if in_per_group * groups != channels:
        raise ValueError(
            f"conv: w {w_shape} takes {in_per_group} input channels per group, x {x_shape} "
            f"has {channels} in {groups} group(s) ({channels // groups} per group)"
        )


def conv(x: Any, w: Any, stride: Any = 1, padding: Any = 0, dilation: Any = 1,
         groups: int = 1, layout: str = "NCHW") -> Tensor:  # fmt: skip
    """An N-d convolution (cross-correlation) of a batch ``x`` with filters ``w``.

    ``stride``, ``dilation``: an int or one per spatial dimension; ``padding``:
    ``"VALID"``, ``"SAME"``, an int, one int per dimension or one ``(low, high)`` pair
    per dimension (zeros); ``groups``: input and output channels split into that many
    independent groups (``groups == C`` is a depthwise convolution); ``layout``:
    ``"NCHW"`` (weights ``OIHW``, torch's) or ``"NHWC"`` (weights ``HWIO``, jax's and
    TensorFlow's), for 1, 2 or 3 spatial dimensions (``"NCW"``, ``"NCDHW"``, ``"NWC"``,
    ``"NDHWC"`` also, checked against the rank).
    """
    if layout not in LAYOUTS:
        raise ValueError(f"conv: layout {layout!r} is not one of {sorted(LAYOUTS)}")
    channels_last, layout_rank = LAYOUTS[layout]
    xt, wt = promoted(x, w)
    rank = xt.ndim - 2
    if rank not in (1, 2, 3) or (layout_rank is not None and rank != layout_rank):
        raise ValueError(
            f"conv: x {xt.shape} must be (batch, channels, 1-3 spatial dims) in layout {layout}"
        )
    if wt.ndim != xt.ndim:
        raise ValueError(f"conv: w {wt.shape} must have the rank of x {xt.shape} ({xt.ndim})")
    if channels_last:  # x (N, *S, C), w (*K, C/G, O)
        sizes, channels = xt.shape[1:-1], xt.shape[-1]
        kernel, (in_per_group, out_channels) = wt.shape[:rank], wt.shape[rank:]
    else:  # x (N, C, *S), w (O, C/G, *K)
        sizes, channels = xt.shape[2:], xt.shape[1]
        (out_channels, in_per_group), kernel = wt.shape[:2], wt.shape[2:]
    _check_channels(xt.shape, wt.shape, channels, in_per_group, out_channels, groups)
    strides, dilations = _per_dim(stride, rank, "stride"), _per_dim(dilation, rank, "dilation")
    pads = _padding(padding, sizes, kernel, strides, dilations)
    first = 1 if channels_last else 2  # the first spatial dimension
    if any(lo or hi for lo, hi in pads):
        xt = pad_array(xt, [(0, 0)] * first + pads + [(0, 0)] * (2 - first))
    padded = xt.shape[first : first + rank]
    if 0 in [output_size(n, k, s, d) for n, k, s, d in
             zip(padded, kernel, strides, dilations, strict=True)]:  # fmt: skip
        raise ValueError(
            f"conv: the dilated kernel {tuple(kernel)} (dilation {dilations}) does not fit "
            f"the padded input's spatial dims {padded}"
        )
    if not channels_last:  # the windows' gather reads whole channel vectors: C last
        xt = transpose(xt, [0, *range(2, rank + 2), 1])
    patches = windows(xt, 1, kernel, strides, dilations)  # (N, *O, *K, C)
    if channels_last:
        return _contract_channels_last(patches, wt, rank, groups)
    return _contract_channels_first(patches, wt, rank, groups)


def _contract_channels_first(patches: Tensor, w: Tensor, rank: int, groups: int) -> Tensor:
    """``y[n, g, o, p] = sum_{j, c} w[g, o, c, j] * patches[n, p, j, g, c]``: one
    ``DotGeneral`` batched over ``n`` and ``g`` (``w`` broadcast over the batch: im2col's
    one matrix product per image), whose result is ``(N, O, *O_spatial)`` already."""
    batch, *rest = patches.shape
    outs, kernel = rest[:rank], rest[rank : 2 * rank]
    out_channels, in_per_group = w.shape[:2]
    grouped = reshape(patches, (batch, *outs, *kernel, groups, in_per_group))
    w_grouped = reshape(w, (groups, out_channels // groups, in_per_group, *kernel))
    w_batched = broadcast_to(w_grouped, (batch, *w_grouped.shape))
    w_taps = (*range(4, 4 + rank), 3)  # (j, c) of w_batched, (n, g, o, c, *j)
    p_taps = (*range(1 + rank, 1 + 2 * rank), 2 + 2 * rank)  # of (n, *p, *j, g, c)
    op = ops.DotGeneral(w_taps, p_taps, (0, 1), (0, 1 + 2 * rank), w_batched.shape,
                        grouped.shape)  # fmt: skip
    y = apply1(op, w_batched, grouped)  # (N, G, O/G, *O_spatial)
    return reshape(y, (batch, out_channels, *outs))


def _contract_channels_last(patches: Tensor, w: Tensor, rank: int, groups: int) -> Tensor:
    """``sum_{j, c} patches[n, p, j, g, c] * w[j, c, g, o]`` as one ``DotGeneral``
    (groups a batch dimension), channels last: ``(N, *O, G * O/G)``."""
    taps = tuple(range(1 + rank, 1 + 2 * rank))
    if groups == 1:
        return contract(patches, w, (*taps, 1 + 2 * rank), tuple(range(rank + 1)))
    *lead, channels = patches.shape
    *kernel, in_per_group, out_channels = w.shape
    grouped = reshape(patches, (*lead, groups, in_per_group))
    w_grouped = reshape(w, (*kernel, in_per_group, groups, out_channels // groups))
    op = ops.DotGeneral((*taps, 2 + 2 * rank), tuple(range(rank + 1)), (1 + 2 * rank,),
                        (rank + 1,), grouped.shape, w_grouped.shape)  # fmt: skip
    y = apply1(op, grouped, w_grouped)  # (G, N, *O, O/G)
    y = transpose(y, [*range(1, rank + 2), 0, rank + 2])
    return reshape(y, (*y.shape[:-2], out_channels))


# --------------------------------------------------------------------------- numpy's 1-D functions

_MODES = {"valid": "valid", "same": "same", "full": "full", 0: "valid", 1: "same", 2: "full"}


def _correlate_1d(a: Any, v: Any, mode: Any, flip: bool, name: str) -> Tensor:
    """``c[k] = sum_j a[k + j - lo] * u[j]`` with ``u`` = ``v`` reversed (convolve) or
    conjugated (correlate), over the ``k`` numpy's ``mode`` keeps: offsets into the
    full result of ``n + m - 1`` found against numpy (valid ``min - 1``; same
    ``(m - 1) // 2``, for correlate with ``n < m`` ``n // 2``)."""
    if mode not in _MODES:
        raise ValueError(f"{name}: mode {mode!r} must be 'valid', 'same' or 'full'")
    x, u = promoted(a, v)
    if flip:  # numpy's convolve takes numbers as 1-element arrays, its correlate does not
        x, u = (reshape(t, (1,)) if t.ndim == 0 else t for t in (x, u))
    if x.ndim != 1 or u.ndim != 1:
        raise ValueError(f"{name}: a and v must be 1-D, got shapes {x.shape} and {u.shape}")
    if x.size == 0 or u.size == 0:
        raise ValueError(f"{name}: {'a' if x.size == 0 else 'v'} cannot be empty")
    u = u[::-1] if flip else (conj(u) if u.dtype.kind == "c" else u)
    n, m = x.size, u.size
    length = {"valid": max(n, m) - min(n, m) + 1, "same": max(n, m), "full": n + m - 1}
    offset = {"valid": min(n, m) - 1, "full": 0,
              "same": (min(n, m) - 1) // 2 if flip or n >= m else n // 2}  # fmt: skip
    mode = _MODES[mode]
    lo, hi = m - 1 - offset[mode], offset[mode] + length[mode] - n
    padded = pad_array(x, [(lo, hi)]) if lo or hi else x
    return contract(windows(padded, 0, [m], [1], [1]), u, (1,), (0,))


def convolve(a: Any, v: Any, mode: Any = "full") -> Tensor:
    """numpy's ``convolve``: ``c[k] = sum_i a[i] * v[k - i]`` (modes ``full``, ``same``,
    ``valid``); differentiable in both."""
    return _correlate_1d(a, v, mode, True, "convolve")


def correlate(a: Any, v: Any, mode: Any = "valid") -> Tensor:
    """numpy's ``correlate``: ``c[k] = sum_n a[n + k] * conj(v[n])`` (modes ``valid``,
    ``same``, ``full``); differentiable in both."""
    return _correlate_1d(a, v, mode, False, "correlate")
