"""Function transforms, named as in ``torch.func``: ``grad``, ``value_and_grad``, ``vjp``,
``jvp``, ``jacrev``, ``jacfwd``, ``hessian``, and ``vmap`` (``tidu_compile.batching``).

They take and return ``Tensor``s (arguments may be nested lists, tuples and dicts of
tensors, arrays or numbers: the gradients come back in the same structure) and nest to
any order::

    import tidu_compile as tc
    from tidu_compile import func

    f = lambda x: tc.sum(tc.sin(x) * x)
    func.grad(f)(x)                                   # f'(x)
    func.grad(lambda x: tc.sum(func.grad(f)(x)))(x)   # sum of f''
    func.jvp(func.grad(f), (x,), (v,))                # (f'(x), H v): forward over reverse

How: each transform runs ``f`` on the tape with its arguments as fresh tape values (a
new leaf, or a recorded identity of a tensor that an outer transform is tracking, so
nested transforms never confuse their variables). Reverse mode then walks the tape with
``backward_recorded``, forward mode pushes tangents through it with ``push_tangents``
(``frontend.higher_order``): one linearization per node and no reverse pass. Both record
what they compute as nodes of the tape, so an outer transform differentiates through
them; every node runs on the default executor (compiled, cached per node structure).

What a transform returns carries tape history only towards the tensors that were tracked
when it was called (an outer transform's variables, or tensors that require gradients):
its own variables are internal, so a result that depends on nothing else is returned
without history (``requires_grad`` False), as ``jax.grad``'s and ``torch.func.grad``'s are.
A JAX-style loop ``w = w - lr * func.grad(f)(w)`` then records nothing across steps,
while ``grad(grad(f))`` and ``jvp(grad(f))`` differentiate through the inner results
(they depend on the outer transform's variables). See ``_released``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from tidu_compile import ops
from tidu_compile.batched_transforms import batched_jacobian, batched_value_and_grad
from tidu_compile.batching import BatchTrace, vmap
from tidu_compile.compiler.buffers import MIN_POOLED_BYTES, POOL
from tidu_compile.composite_grad import fused_value_and_grad
from tidu_compile.eager import Trace
from tidu_compile.frontend.autograd import run_backward, user_array
from tidu_compile.frontend.higher_order import backward_recorded, push_tangents
from tidu_compile.frontend.namespace import FUNCTIONS
from tidu_compile.frontend.state import (
    RECORDER,
    TransformInTrace,
    current_capture,
    get_default_executor,
)
from tidu_compile.frontend.tensor import (
    Tensor,
    eager_input,
    record_node,
    recorded_graph_for,
)
from tidu_compile.graph import Input, ValueKey
from tidu_compile.ops import DIFFERENTIABLE_DTYPES

__all__ = ["grad", "hessian", "jacfwd", "jacrev", "jvp", "value_and_grad", "vjp", "vmap"]

Tree = Any  # a Tensor (or array-like leaf), or a list, tuple or dict of trees


# ------------------------------------------------------------------ trees


def _flatten(tree: Tree) -> tuple[list[Any], Callable[[list[Any]], Tree]]:
    """The leaves of ``tree`` in order, and the function rebuilding a tree from leaves."""
    if isinstance(tree, (list, tuple)):
        parts = [_flatten(t) for t in tree]
        counts = [len(leaves) for leaves, _ in parts]

        def rebuild_sequence(leaves: list[Any]) -> Tree:
            items, start = [], 0
            for (_, rebuild), count in zip(parts, counts, strict=True):
                items.append(rebuild(leaves[start : start + count]))
                start += count
            return type(tree)(items) if isinstance(tree, list) else tuple(items)

        return [leaf for leaves, _ in parts for leaf in leaves], rebuild_sequence
    if isinstance(tree, dict):
        keys = list(tree)
        flat, rebuild_values = _flatten([tree[k] for k in keys])
        return flat, lambda leaves: dict(zip(keys, rebuild_values(leaves), strict=True))
    return [tree], lambda leaves: leaves[0]


def _copy(leaf: Any) -> np.ndarray:
    """A copy of ``leaf``'s values (the tape keeps them: the caller may change its array);
    large ones in recycled memory (``compiler.buffers``: no page faults on every call)."""
    array = np.asarray(leaf)
    if array.nbytes < MIN_POOLED_BYTES or not array.dtype.isnative or array.dtype == object:
        return np.array(array, copy=True)
    copy = POOL.allocate(array.shape, array.dtype)
    np.copyto(copy, array)
    return copy


def _as_tensor(leaf: Any, what: str) -> Tensor:
    tensor = leaf if isinstance(leaf, Tensor) else Tensor(_copy(leaf))
    if tensor.dtype.name not in DIFFERENTIABLE_DTYPES:
        raise TypeError(
            f"{what}: differentiating needs float or complex values, got {tensor.dtype} "
            "(pass floats, e.g. 1.0 or an array of dtype float64)"
        )
    return tensor


def _variable(tensor: Tensor) -> Tensor:
    """A fresh tape value equal to ``tensor``: a new leaf, or, when ``tensor`` is tracked
    by an outer transform, a recorded identity of it (differentiable through both)."""
    if tensor.requires_grad:  # the identity node shares the (immutable) data: no copy
        identity = recorded_graph_for(ops.Scale(1.0))
        return record_node(identity, [eager_input(tensor)], [tensor._data])[0]
    (key,) = RECORDER.fresh_input_keys(1)
    return Tensor(tensor._data, True, Input(key))


def _inner_keys(variables: list[list[Tensor]]) -> frozenset[ValueKey]:
    """The tape keys of the fresh leaves among ``variables`` (not the recorded identities
    of tracked tensors): the transform's own variables."""
    return frozenset(v._key for fresh in variables for v in fresh if v._trace is None)


def _depends_on_outer(tensor: Tensor, inner: frozenset[ValueKey]) -> bool:
    """Whether ``tensor``'s tape history reaches a tensor needing a gradient other than
    the leaves ``inner`` (stops at the first one found)."""
    if not tensor._requires_grad:
        return False
    if tensor._trace is None:
        return tensor._key not in inner
    seen = {id(tensor._trace)}
    stack: list[Trace] = [tensor._trace]
    while stack:
        for edge in stack.pop().inputs:
            if not edge.requires_grad:
                continue
            if edge.trace is None:
                if edge.key not in inner:
                    return True
            elif id(edge.trace) not in seen:
                seen.add(id(edge.trace))
                stack.append(edge.trace)
    return False


def _released(tree: Tree, inner: frozenset[ValueKey]) -> Tree:
    """``tree`` with every tensor that depends on no tracked tensor but the transform's
    own variables ``inner`` replaced by its values without history.

    ``w = w - lr * grad(f)(w)``: ``grad`` differentiates ``f`` at a fresh leaf ``v`` (w
    needs no gradient); the gradient ``g`` is recorded as a function of ``v`` (nested
    transforms need that), so ``g.requires_grad`` would make ``w`` require gradients,
    the next step's ``v`` a recorded identity of that ``w``, and the tape one step
    longer every step. Nothing outside can ask for the gradient of ``v``: ``g`` depends
    on no outer variable, and is returned as plain values. Under ``grad(grad(f))`` the
    inner ``v`` is an identity of the outer variable, so the inner result keeps its
    history.
    """
    leaves, rebuild = _flatten(tree)
    return rebuild([
        Tensor(leaf._data)
        if isinstance(leaf, Tensor) and leaf._requires_grad and not _depends_on_outer(leaf, inner)
        else leaf
        for leaf in leaves
    ])  # fmt: skip


def _check_argnums(argnums: int | Sequence[int], count: int, name: str) -> tuple[int, ...]:
    numbers = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    if not numbers or any(not isinstance(n, int) for n in numbers):
        raise TypeError(f"{name}: argnums must be an int or a non-empty tuple of ints")
    for n in numbers:
        if not -count <= n < count:
            raise ValueError(
                f"{name}: argnums {n} is out of range for a function called with {count} "
                "positional arguments"
            )
    return tuple(n % count for n in numbers)


def _not_traced(name: str) -> None:
    capture = current_capture()
    if isinstance(capture, BatchTrace):
        raise TypeError(
            f"tidu_compile.func.{name} cannot run inside the function vmap maps "
            f"({capture.name}); pass the transform itself to vmap: vmap({name}(f), ...)"
        )
    if capture is not None:
        raise TransformInTrace(
            f"tidu_compile.func.{name} cannot run inside a @tidu_compile.function trace; "
            "call it outside the traced function"
        )


def _zeros_like(t: Tensor) -> Tensor:
    return Tensor(np.zeros(t.shape, dtype=t.dtype))


# ------------------------------------------------------------------ reverse mode


def _with_variables(
    args: tuple[Any, ...], argnums: tuple[int, ...], name: str
) -> tuple[list[Any], list[list[Tensor]], list[Callable[[list[Any]], Tree]]]:
    """``args`` with the trees at ``argnums`` made of fresh variables; the variables and
    the rebuilders of those trees."""
    call_args = list(args)
    variables: list[list[Tensor]] = []
    rebuilders: list[Callable[[list[Any]], Tree]] = []
    for n in argnums:
        leaves, rebuild = _flatten(args[n])
        fresh = [_variable(_as_tensor(leaf, f"{name}: argument {n}")) for leaf in leaves]
        call_args[n] = rebuild(fresh)
        variables.append(fresh)
        rebuilders.append(rebuild)
    return call_args, variables, rebuilders


def _gradients(
    roots: list[tuple[Tensor, Tensor]],
    variables: list[list[Tensor]],
    rebuilders: list[Callable[[list[Any]], Tree]],
) -> list[Tree]:
    """The cotangents of ``variables`` (zeros where none reaches), as trees."""
    live = [(out, seed) for out, seed in roots if out.requires_grad]
    wanted = [v._key for fresh in variables for v in fresh]
    cotangents = backward_recorded(live, get_default_executor(), wanted) if live else {}
    return _as_trees(cotangents, variables, rebuilders, lambda c, v: c)


def _as_trees(
    cotangents: Mapping[ValueKey, Any],
    variables: list[list[Tensor]],
    rebuilders: list[Callable[[list[Any]], Tree]],
    convert: Callable[[Any, Tensor], Tensor],
) -> list[Tree]:
    """The cotangent of each variable (``convert``-ed; zeros where none reaches), as
    the trees ``rebuilders`` make."""
    trees = []
    for fresh, rebuild in zip(variables, rebuilders, strict=True):
        found = [cotangents.get(v._key) for v in fresh]
        trees.append(rebuild([_zeros_like(v) if c is None else convert(c, v)
                              for v, c in zip(fresh, found, strict=True)]))  # fmt: skip
    return trees


def _unobserved(out: Tensor, variables: list[list[Tensor]]) -> bool:
    """Whether nothing outside the transform can differentiate its result: every
    variable is a fresh leaf (no outer transform tracks an argument) and ``out`` depends
    on no tracked tensor but them (none closed over)."""
    inner = _inner_keys(variables)
    return len(inner) == sum(map(len, variables)) and not _depends_on_outer(out, inner)


def _plain_gradients(
    out: Tensor,
    seed: Tensor,
    variables: list[list[Tensor]],
    rebuilders: list[Callable[[list[Any]], Tree]],
) -> list[Tree]:
    """``_gradients`` when ``_unobserved``: one backward of the tape, not recorded (as
    ``tc.grad``), its saved values freed after it; values without history."""
    keys = {v._key for fresh in variables for v in fresh}
    cotangents = run_backward(out, seed._data, None, False, keys) if out.requires_grad else {}
    taken: set[int] = set()  # user_array copies a buffer given to two variables
    return _as_trees(cotangents, variables, rebuilders,
                     lambda c, v: Tensor(user_array(c, v.dtype, taken)))  # fmt: skip


def _scalar_output(out: Any, name: str) -> Tensor:
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}: the function must return a Tensor, got {type(out).__name__}")
    if out.shape != () or out.dtype.kind != "f":
        raise ValueError(
            f"{name}: the function must return a real scalar, got shape {out.shape} and "
            f"dtype {out.dtype} (use vjp or jacrev for other outputs)"
        )
    return out


def value_and_grad(f: Callable[..., Any], argnums: int | Sequence[int] = 0) -> Callable[..., Any]:
    """``f`` returning ``(f(*args), gradient)``; the gradient has the structure of
    ``args[argnums]`` (a tuple of them when ``argnums`` is a tuple). For a
    ``@tc.function`` ``f`` called outside other transforms, forward and backward run as
    one program once ``f`` has traced (``tidu_compile.composite_grad``)."""

    def transformed(*args: Any) -> tuple[Tensor, Tree]:
        _not_traced("value_and_grad")
        numbers = _check_argnums(argnums, len(args), "value_and_grad")
        fused = fused_value_and_grad(f, args, numbers)  # a @tc.function: one program
        if fused is not None:
            value, leaves = fused
            fused_trees = [_flatten(args[n])[1](g) for n, g in zip(numbers, leaves, strict=True)]
            return value, fused_trees[0] if isinstance(argnums, int) else tuple(fused_trees)
        call_args, variables, rebuilders = _with_variables(args, numbers, "value_and_grad")
        out = _scalar_output(f(*call_args), "value_and_grad")
        seed = Tensor(np.ones((), dtype=out.dtype))
        if _unobserved(out, variables):  # not nested: a plain backward, as tc.grad's
            value, gradients = Tensor(out._data), _plain_gradients(out, seed, variables,
                                                                   rebuilders)  # fmt: skip
        else:
            trees = _gradients([(out, seed)], variables, rebuilders)
            value, gradients = _released((out, trees), _inner_keys(variables))
        return value, gradients[0] if isinstance(argnums, int) else tuple(gradients)

    transformed.vmap_rule = lambda *axes: batched_value_and_grad(  # type: ignore[attr-defined]
        vjp, f, argnums, *axes
    )
    transformed.compiled_form = lambda decorate: value_and_grad(decorate(f), argnums)  # type: ignore[attr-defined]
    transformed.__qualname__ = f"value_and_grad({getattr(f, '__qualname__', 'f')})"
    return transformed


def grad(f: Callable[..., Any], argnums: int | Sequence[int] = 0) -> Callable[..., Any]:
    """The gradient of a real-scalar ``f`` with respect to ``args[argnums]``."""
    value_and_gradient = value_and_grad(f, argnums)

    def transformed(*args: Any) -> Tree:
        return value_and_gradient(*args)[1]

    transformed.vmap_rule = lambda in_axes, out_axes, size: batched_value_and_grad(  # type: ignore[attr-defined]
        vjp, f, argnums, in_axes, out_axes, size, value=False
    )
    transformed.compiled_form = lambda decorate: grad(decorate(f), argnums)  # type: ignore[attr-defined]
    return transformed


def vjp(f: Callable[..., Any], *primals: Any) -> tuple[Tree, Callable[..., tuple[Tree, ...]]]:
    """``(f(*primals), vjp_fn)``; ``vjp_fn(cotangents)`` takes cotangents in the structure
    of the output and returns one cotangent tree per primal."""
    _not_traced("vjp")
    numbers = tuple(range(len(primals)))
    call_args, variables, rebuilders = _with_variables(primals, numbers, "vjp")
    out = f(*call_args)
    outputs, _ = _flatten(out)
    for i, o in enumerate(outputs):
        if not isinstance(o, Tensor):
            raise TypeError(f"vjp: output {i} is a {type(o).__name__}, expected a Tensor")

    def vjp_fn(cotangents: Tree) -> tuple[Tree, ...]:
        seeds, _ = _flatten(cotangents)
        if len(seeds) != len(outputs):
            raise ValueError(f"vjp_fn: expected {len(outputs)} cotangents (the output's "
                             f"structure), got {len(seeds)}")  # fmt: skip
        roots = []
        for i, (o, seed) in enumerate(zip(outputs, seeds, strict=True)):
            tensor = seed if isinstance(seed, Tensor) else Tensor(np.array(seed, copy=True))
            if tensor.shape != o.shape or tensor.dtype != o.dtype:
                raise ValueError(f"vjp_fn: cotangent {i} is {tensor.shape} {tensor.dtype}, "
                                 f"the output is {o.shape} {o.dtype}")  # fmt: skip
            roots.append((o, tensor))
        return tuple(_released(_gradients(roots, variables, rebuilders), inner))

    inner = _inner_keys(variables)
    return _released(out, inner), vjp_fn


# ------------------------------------------------------------------ forward mode


def jvp(
    f: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]
) -> tuple[Tree, Tree]:
    """``(f(*primals), J tangents)`` by forward mode: one linearization per tape node,
    no reverse pass. ``tangents`` has the structure of ``primals`` with matching shapes
    and dtypes; for a holomorphic ``f`` of complex inputs the tangent out is ``f'(z) dz``."""
    _not_traced("jvp")
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise TypeError("jvp: primals and tangents must be tuples (one entry per argument)")
    if len(primals) != len(tangents):
        raise ValueError(f"jvp: {len(primals)} primals but {len(tangents)} tangents")
    call_args, variables, _ = _with_variables(tuple(primals), tuple(range(len(primals))), "jvp")
    given: list[Tensor] = []
    for n, (fresh, tangent) in enumerate(zip(variables, tangents, strict=True)):
        leaves, _ = _flatten(tangent)
        if len(leaves) != len(fresh):
            raise ValueError(f"jvp: tangent {n} does not have the structure of primal {n}")
        for v, leaf in zip(fresh, leaves, strict=True):
            t = _as_tensor(leaf, f"jvp: tangent {n}")
            if t.shape != v.shape or t.dtype != v.dtype:
                raise ValueError(f"jvp: tangent {n} is {t.shape} {t.dtype}, its primal is "
                                 f"{v.shape} {v.dtype}")  # fmt: skip
            given.append(t)
    out = f(*call_args)
    outputs, rebuild = _flatten(out)
    for i, o in enumerate(outputs):
        if not isinstance(o, Tensor):
            raise TypeError(f"jvp: output {i} is a {type(o).__name__}, expected a Tensor")
    flat_variables = [v for fresh in variables for v in fresh]
    pushed = push_tangents(flat_variables, given, outputs, get_default_executor())
    tangent_out = [_zeros_like(o) if t is None else t for o, t in zip(outputs, pushed,
                                                                       strict=True)]  # fmt: skip
    return _released((out, rebuild(tangent_out)), _inner_keys(variables))  # type: ignore[no-any-return]


# ------------------------------------------------------------------ jacobians


def _stack(tensors: list[Tensor], shape: tuple[int, ...], like: Tensor) -> Tensor:
    """``tensors`` stacked along a new first axis and reshaped to ``shape``."""
    if not tensors:
        return Tensor(np.zeros(shape, dtype=like.dtype))
    return FUNCTIONS["reshape"](FUNCTIONS["stack"](tensors), shape)  # type: ignore[no-any-return]


def _basis(shape: tuple[int, ...], dtype: np.dtype) -> list[Tensor]:
    """The unit tensors of ``shape`` in row-major order."""
    size = int(np.prod(shape, dtype=np.int64))
    return [Tensor(np.eye(1, size, k, dtype=dtype).reshape(shape)) for k in range(size)]


def _tensor_leaves(out: Any, name: str) -> tuple[list[Tensor], Callable[[list[Any]], Tree]]:
    """The tensor leaves of ``f``'s output (a tensor or a tree of them) and its rebuilder."""
    leaves, rebuild = _flatten(out)
    for i, leaf in enumerate(leaves):
        if not isinstance(leaf, Tensor):
            raise TypeError(
                f"{name}: the function must return a Tensor (or a tree of them), got "
                f"{type(leaf).__name__}" + (f" at leaf {i}" if len(leaves) > 1 else "")
            )
    return leaves, rebuild


def _output_axes_first(columns: list[Tensor], x: Tensor, out: Tensor) -> Tensor:
    """The JVPs of ``out`` along each unit tangent of ``x`` as one Jacobian of shape
    ``out.shape + x.shape``."""
    stacked = _stack(columns, x.shape + out.shape, out)  # x's axes first
    axes = tuple(range(x.ndim, x.ndim + out.ndim)) + tuple(range(x.ndim))
    return FUNCTIONS["transpose"](stacked, axes)  # type: ignore[no-any-return]


def jacrev(f: Callable[..., Any], argnums: int | Sequence[int] = 0) -> Callable[..., Any]:
    """The Jacobian of ``f`` by reverse mode, one VJP per output element.

    For an output leaf ``o`` and an argument leaf ``x`` the block has shape
    ``o.shape + x.shape``; blocks are arranged as the output's tree of the argument's
    tree (a tuple of those, one per argument, when ``argnums`` is a tuple)."""

    def transformed(*args: Any) -> Any:
        _not_traced("jacrev")
        numbers = _check_argnums(argnums, len(args), "jacrev")
        call_args, variables, rebuilders = _with_variables(args, numbers, "jacrev")
        outputs, rebuild_out = _tensor_leaves(f(*call_args), "jacrev")
        as_leaves: list[Callable[[list[Any]], Tree]] = [list] * len(numbers)
        # blocks[k][o][j]: output leaf o by leaf j of argument k
        blocks: list[list[list[Tensor]]] = [[] for _ in numbers]
        for out in outputs:
            rows: list[list[list[Tensor]]] = [[[] for _ in fresh] for fresh in variables]
            for seed in _basis(out.shape, out.dtype):
                for row, leaves in zip(rows, _gradients([(out, seed)], variables, as_leaves),
                                       strict=True):  # fmt: skip
                    for column, gradient in zip(row, leaves, strict=True):
                        column.append(gradient)
            for k, (row, fresh) in enumerate(zip(rows, variables, strict=True)):
                blocks[k].append([_stack(column, out.shape + x.shape, out)
                                  for column, x in zip(row, fresh, strict=True)])  # fmt: skip
        jacobians = _released(tuple(
            rebuild_out([rebuild(per_leaf) for per_leaf in per_output])
            for per_output, rebuild in zip(blocks, rebuilders, strict=True)
        ), _inner_keys(variables))  # fmt: skip
        return jacobians[0] if isinstance(argnums, int) else jacobians

    transformed.vmap_rule = lambda in_axes, out_axes, size: batched_jacobian(  # type: ignore[attr-defined]
        vjp, jvp, f, argnums, in_axes, out_axes, size, forward=False
    )
    return transformed


def jacfwd(f: Callable[..., Any], argnums: int | Sequence[int] = 0) -> Callable[..., Any]:
    """The Jacobian of ``f`` by forward mode, one JVP per input element; blocks and
    their arrangement as ``jacrev`` gives them."""

    def transformed(*args: Any) -> Any:
        _not_traced("jacfwd")
        numbers = _check_argnums(argnums, len(args), "jacfwd")
        jacobians = []
        for n in numbers:
            leaves, rebuild = _flatten(args[n])
            xs = [_as_tensor(leaf, f"jacfwd: argument {n}") for leaf in leaves]
            g = _one_argument(f, args, n)
            outputs, rebuild_out = _tensor_leaves(g(rebuild(xs)), "jacfwd")
            columns: list[list[list[Tensor]]] = [[[] for _ in xs] for _ in outputs]
            for j, x in enumerate(xs):
                for unit in _basis(x.shape, x.dtype):
                    tangent = rebuild([unit if i == j else _zeros_like(v)
                                       for i, v in enumerate(xs)])  # fmt: skip
                    pushed, _ = _tensor_leaves(jvp(g, (rebuild(xs),), (tangent,))[1], "jacfwd")
                    for o, t in enumerate(pushed):
                        columns[o][j].append(t)
            jacobians.append(rebuild_out([
                rebuild([_output_axes_first(columns[o][j], x, out) for j, x in enumerate(xs)])
                for o, out in enumerate(outputs)
            ]))  # fmt: skip
        return jacobians[0] if isinstance(argnums, int) else tuple(jacobians)

    transformed.vmap_rule = lambda in_axes, out_axes, size: batched_jacobian(  # type: ignore[attr-defined]
        vjp, jvp, f, argnums, in_axes, out_axes, size, forward=True
    )
    return transformed


def _one_argument(f: Callable[..., Any], args: tuple[Any, ...], n: int) -> Callable[[Any], Any]:
    """``f`` as a function of its argument ``n`` alone (the others fixed to ``args``)."""

    def g(value: Any) -> Any:
        return f(*args[:n], value, *args[n + 1 :])

    return g


def hessian(f: Callable[..., Any], argnums: int | Sequence[int] = 0) -> Callable[..., Any]:
    """The Hessian of a real-scalar ``f``: ``jacfwd(jacrev(f))`` (forward over reverse).

    With ``argnums`` a tuple, block ``[i][j]`` is ``d2f / d(arg i) d(arg j)``, of shape
    ``arg_i.shape + arg_j.shape``, as ``jax.hessian`` gives it; for a nested argument the
    blocks nest as the argument's tree of the argument's tree."""
    if isinstance(argnums, int):
        return jacfwd(jacrev(f, argnums), argnums)

    def transformed(*args: Any) -> Any:
        numbers = _check_argnums(argnums, len(args), "hessian")
        return tuple(tuple(jacfwd(jacrev(f, i), j)(*args) for j in numbers) for i in numbers)

    def vmap_rule(in_axes: Any, out_axes: Any, size: int | None) -> Callable[..., Any]:
        def batched(*args: Any) -> Any:
            numbers = _check_argnums(argnums, len(args), "hessian")
            return tuple(tuple(vmap(jacfwd(jacrev(f, i), j), in_axes, out_axes, size)(*args)
                               for j in numbers) for i in numbers)  # fmt: skip

        return batched

    transformed.vmap_rule = vmap_rule  # type: ignore[attr-defined]
    return transformed
