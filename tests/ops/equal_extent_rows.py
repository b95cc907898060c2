"""The op-table rows whose shapes have two dims of one size (a square, a cube), where a
kernel that confuses two axes of equal extent gives a wrong answer no other row shows."""

from __future__ import annotations

#: The square shape of the elementwise rows with equal extents.
SQUARE = (3, 3)
#: The dtypes of the transposes, reshapes and contractions with equal extents.
EQUAL_EXTENT_DTYPES = ("float64", "complex128")
#: (operand shape, result shape, broadcast_dimensions): rows and columns of equal size.
EQUAL_EXTENT_BROADCASTS = [
    ((3,), (3, 3), (1,)),
    ((3,), (3, 3), (0,)),
    ((3, 1), (3, 3), (0, 1)),
    ((1, 3), (3, 3), (0, 1)),
    ((2,), (2, 2, 2), (1,)),
    ((2, 2), (2, 2, 2), (0, 2)),
    ((2, 1), (2, 2, 2), (1, 2)),
]
#: (operand shape, axes): every single axis of a cube, and pairs.
EQUAL_EXTENT_REDUCES = [
    ((3, 3), (0,)),
    ((3, 3), (1,)),
    ((3, 3), (0, 1)),
    ((2, 2, 2), (0,)),
    ((2, 2, 2), (1,)),
    ((2, 2, 2), (2,)),
    ((2, 2, 2), (0, 2)),
    ((2, 2, 2), (1, 2)),
]
EQUAL_EXTENT_RESHAPES = [((3, 3), (9,)), ((2, 2, 2), (4, 2)), ((4,), (2, 2))]
EQUAL_EXTENT_TRANSPOSES = [((3, 3), (1, 0)), ((2, 2, 2), (1, 2, 0)), ((2, 2, 2), (2, 0, 1)),
                           ((2, 2, 2), (0, 2, 1)), ((2, 2, 2), (1, 0, 2))]  # fmt: skip
#: Square contractions: name, lhs shape, rhs shape, lhs_c, rhs_c, lhs_b, rhs_b.
EQUAL_EXTENT_DOTS = [
    ("matmul", (3, 3), (3, 3), (1,), (0,), (), ()),
    ("matmul_lhs_t", (3, 3), (3, 3), (0,), (0,), (), ()),
    ("matmul_rhs_t", (3, 3), (3, 3), (1,), (1,), (), ()),
    ("batched_matmul", (2, 2, 2), (2, 2, 2), (2,), (1,), (0,), (0,)),
    ("outer", (3,), (3,), (), (), (), ()),
    ("matvec", (3, 3), (3,), (1,), (0,), (), ()),
    ("vecmat", (3,), (3, 3), (0,), (0,), (), ()),
    ("two_contracting", (2, 2, 2), (2, 2, 2), (1, 2), (1, 0), (), ()),
    ("batch_not_leading", (2, 2, 2), (2, 2, 2), (2,), (0,), (1,), (2,)),
    ("two_batch_swapped", (2, 2, 2), (2, 2, 2), (2,), (2,), (0, 1), (1, 0)),
]
