// RUN: xdsl-opt -p canonicalize %s | filecheck %s
// The tidu canonicalization patterns, applied by the stock `canonicalize` pass.

// x + full_like(0) -> x, on either side; a splat constant 0 too.
// CHECK-LABEL: func.func @add_zero(%x: tensor<4xf64>, %z: tensor<4xcomplex<f64>>)
// CHECK-NEXT:    func.return %x, %x, %x, %z : tensor<4xf64>, tensor<4xf64>, tensor<4xf64>, tensor<4xcomplex<f64>>
func.func @add_zero(%x: tensor<4xf64>, %z: tensor<4xcomplex<f64>>) -> (tensor<4xf64>, tensor<4xf64>, tensor<4xf64>, tensor<4xcomplex<f64>>) {
  %0 = tidu.full_like %x, 0.000000e+00 : tensor<4xf64>
  %a = tidu.add %x, %0 : tensor<4xf64>
  %b = tidu.add %0, %x : tensor<4xf64>
  %c0 = tidu.constant 0.000000e+00 : tensor<4xf64>
  %c = tidu.add %x, %c0 : tensor<4xf64>
  %z0 = tidu.full_like %z, 0.000000e+00 : tensor<4xcomplex<f64>>
  %d = tidu.add %z, %z0 : tensor<4xcomplex<f64>>
  func.return %a, %b, %c, %d : tensor<4xf64>, tensor<4xf64>, tensor<4xf64>, tensor<4xcomplex<f64>>
}

// Adding anything else stays.
// CHECK-LABEL: func.func @add_nonzero(%x: tensor<4xf64>)
// CHECK-NEXT:    %one = tidu.full_like %x, 1.000000e+00 : tensor<4xf64>
// CHECK-NEXT:    %a = tidu.add %x, %one : tensor<4xf64>
// CHECK-NEXT:    func.return %a
func.func @add_nonzero(%x: tensor<4xf64>) -> tensor<4xf64> {
  %one = tidu.full_like %x, 1.000000e+00 : tensor<4xf64>
  %a = tidu.add %x, %one : tensor<4xf64>
  func.return %a : tensor<4xf64>
}

// x * full_like(1) -> x; x * full_like(2) stays.
// CHECK-LABEL: func.func @mul_one(%x: tensor<4xf32>)
// CHECK-NEXT:    %two = tidu.full_like %x, 2.000000e+00 : tensor<4xf32>
// CHECK-NEXT:    %c = tidu.mul %x, %two : tensor<4xf32>
// CHECK-NEXT:    func.return %x, %x, %c
func.func @mul_one(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %one = tidu.full_like %x, 1.000000e+00 : tensor<4xf32>
  %a = tidu.mul %x, %one : tensor<4xf32>
  %b = tidu.mul %one, %x : tensor<4xf32>
  %two = tidu.full_like %x, 2.000000e+00 : tensor<4xf32>
  %c = tidu.mul %x, %two : tensor<4xf32>
  func.return %a, %b, %c : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// scale(1) -> x; scale(a)(scale(b)) -> scale(a*b), complex factors too.
// CHECK-LABEL: func.func @scale(%x: tensor<4xf64>, %z: tensor<4xcomplex<f64>>)
// CHECK-NEXT:    %b = tidu.scale %x, 6.000000e+00 : tensor<4xf64>
// CHECK-NEXT:    %w = tidu.scale %z, -2.000000e+00 : tensor<4xcomplex<f64>>
// CHECK-NEXT:    func.return %x, %b, %w
func.func @scale(%x: tensor<4xf64>, %z: tensor<4xcomplex<f64>>) -> (tensor<4xf64>, tensor<4xf64>, tensor<4xcomplex<f64>>) {
  %one = tidu.scale %x, 1.000000e+00 : tensor<4xf64>
  %a = tidu.scale %x, -2.000000e+00 : tensor<4xf64>
  %b = tidu.scale %a, -3.000000e+00 : tensor<4xf64>
  %v = tidu.scale %z, (0.000000e+00, 2.000000e+00) : tensor<4xcomplex<f64>>
  %w = tidu.scale %v, (0.000000e+00, 1.000000e+00) : tensor<4xcomplex<f64>>
  func.return %one, %b, %w : tensor<4xf64>, tensor<4xf64>, tensor<4xcomplex<f64>>
}

// Three scales fold into one.
// CHECK-LABEL: func.func @scale_chain(%x: tensor<f64>)
// CHECK-NEXT:    %c = tidu.scale %x, 3.000000e+01 : tensor<f64>
// CHECK-NEXT:    func.return %c
func.func @scale_chain(%x: tensor<f64>) -> tensor<f64> {
  %a = tidu.scale %x, 2.000000e+00 : tensor<f64>
  %b = tidu.scale %a, 3.000000e+00 : tensor<f64>
  %c = tidu.scale %b, 5.000000e+00 : tensor<f64>
  func.return %c : tensor<f64>
}

// neg(neg x) -> x; a single neg stays; neg(neg(neg x)) -> neg x (a second one: no CSE).
// CHECK-LABEL: func.func @neg_neg(%x: tensor<4xf64>)
// CHECK-NEXT:    %a = tidu.neg %x : tensor<4xf64>
// CHECK-NEXT:    %c = tidu.neg %x : tensor<4xf64>
// CHECK-NEXT:    func.return %x, %a, %c
func.func @neg_neg(%x: tensor<4xf64>) -> (tensor<4xf64>, tensor<4xf64>, tensor<4xf64>) {
  %a = tidu.neg %x : tensor<4xf64>
  %b = tidu.neg %a : tensor<4xf64>
  %c = tidu.neg %b : tensor<4xf64>
  func.return %b, %a, %c : tensor<4xf64>, tensor<4xf64>, tensor<4xf64>
}

// conj on a real type -> x; conj(conj z) -> z; a single complex conj stays.
// CHECK-LABEL: func.func @conj(%x: tensor<4xf32>, %z: tensor<4xcomplex<f64>>)
// CHECK-NEXT:    %c = tidu.conj %z : tensor<4xcomplex<f64>>
// CHECK-NEXT:    func.return %x, %z, %c
func.func @conj(%x: tensor<4xf32>, %z: tensor<4xcomplex<f64>>) -> (tensor<4xf32>, tensor<4xcomplex<f64>>, tensor<4xcomplex<f64>>) {
  %r = tidu.conj %x : tensor<4xf32>
  %c = tidu.conj %z : tensor<4xcomplex<f64>>
  %cc = tidu.conj %c : tensor<4xcomplex<f64>>
  func.return %r, %cc, %c : tensor<4xf32>, tensor<4xcomplex<f64>>, tensor<4xcomplex<f64>>
}

// shift(0) -> x; shift(1) stays.
// CHECK-LABEL: func.func @shift(%x: tensor<4xf64>)
// CHECK-NEXT:    %b = tidu.shift %x, 1.000000e+00 : tensor<4xf64>
// CHECK-NEXT:    func.return %x, %b
func.func @shift(%x: tensor<4xf64>) -> (tensor<4xf64>, tensor<4xf64>) {
  %a = tidu.shift %x, 0.000000e+00 : tensor<4xf64>
  %b = tidu.shift %x, 1.000000e+00 : tensor<4xf64>
  func.return %a, %b : tensor<4xf64>, tensor<4xf64>
}

// pow(x, 1) -> x.
// CHECK-LABEL: func.func @pow_one(%x: tensor<4xf64>)
// CHECK-NEXT:    func.return %x : tensor<4xf64>
func.func @pow_one(%x: tensor<4xf64>) -> tensor<4xf64> {
  %p = tidu.pow %x, 1.000000e+00 : tensor<4xf64>
  func.return %p : tensor<4xf64>
}

// pow(x, 2) -> x * x, complex x too.
// CHECK-LABEL: func.func @pow_two(%x: tensor<4xf32>, %z: tensor<4xcomplex<f64>>)
// CHECK-NEXT:    %p = tidu.mul %x, %x : tensor<4xf32>
// CHECK-NEXT:    %q = tidu.mul %z, %z : tensor<4xcomplex<f64>>
// CHECK-NEXT:    func.return %p, %q
func.func @pow_two(%x: tensor<4xf32>, %z: tensor<4xcomplex<f64>>) -> (tensor<4xf32>, tensor<4xcomplex<f64>>) {
  %p = tidu.pow %x, 2.000000e+00 : tensor<4xf32>
  %q = tidu.pow %z, 2.000000e+00 : tensor<4xcomplex<f64>>
  func.return %p, %q : tensor<4xf32>, tensor<4xcomplex<f64>>
}

// pow(x, 0.5) -> sqrt(x).
// CHECK-LABEL: func.func @pow_half(%x: tensor<4xf64>)
// CHECK-NEXT:    %p = tidu.sqrt %x : tensor<4xf64>
// CHECK-NEXT:    func.return %p
func.func @pow_half(%x: tensor<4xf64>) -> tensor<4xf64> {
  %p = tidu.pow %x, 5.000000e-01 : tensor<4xf64>
  func.return %p : tensor<4xf64>
}

// pow(x, -1) -> 1 / x.
// CHECK-LABEL: func.func @pow_minus_one(%x: tensor<4xf64>)
// CHECK-NEXT:    %one = tidu.full_like %x, 1.000000e+00 : tensor<4xf64>
// CHECK-NEXT:    %p = tidu.div %one, %x : tensor<4xf64>
// CHECK-NEXT:    func.return %p
func.func @pow_minus_one(%x: tensor<4xf64>) -> tensor<4xf64> {
  %p = tidu.pow %x, -1.000000e+00 : tensor<4xf64>
  func.return %p : tensor<4xf64>
}

// Other exponents stay (0 too: pow(x, 0) is 1 even for NaN x, which full_like keeps).
// CHECK-LABEL: func.func @pow_other(%x: tensor<4xf64>)
// CHECK-NEXT:    %a = tidu.pow %x, 3.000000e+00 : tensor<4xf64>
// CHECK-NEXT:    %b = tidu.pow %x, -5.000000e-01 : tensor<4xf64>
// CHECK-NEXT:    %c = tidu.pow %x, 0.000000e+00 : tensor<4xf64>
// CHECK-NEXT:    func.return %a, %b, %c
func.func @pow_other(%x: tensor<4xf64>) -> (tensor<4xf64>, tensor<4xf64>, tensor<4xf64>) {
  %a = tidu.pow %x, 3.000000e+00 : tensor<4xf64>
  %b = tidu.pow %x, -5.000000e-01 : tensor<4xf64>
  %c = tidu.pow %x, 0.000000e+00 : tensor<4xf64>
  func.return %a, %b, %c : tensor<4xf64>, tensor<4xf64>, tensor<4xf64>
}

// broadcast_in_dim of broadcast_in_dim -> one broadcast (dims composed).
// CHECK-LABEL: func.func @broadcast_broadcast(%v: tensor<8xf64>, %s: tensor<1xf64>)
// CHECK-NEXT:    %b = tidu.broadcast_in_dim %v, dims = [2] : tensor<8xf64> -> tensor<2x4x8xf64>
// CHECK-NEXT:    %d = tidu.broadcast_in_dim %s, dims = [1] : tensor<1xf64> -> tensor<2x4x8xf64>
// CHECK-NEXT:    func.return %b, %d
func.func @broadcast_broadcast(%v: tensor<8xf64>, %s: tensor<1xf64>) -> (tensor<2x4x8xf64>, tensor<2x4x8xf64>) {
  %a = tidu.broadcast_in_dim %v, dims = [1] : tensor<8xf64> -> tensor<4x8xf64>
  %b = tidu.broadcast_in_dim %a, dims = [1, 2] : tensor<4x8xf64> -> tensor<2x4x8xf64>
  %c = tidu.broadcast_in_dim %s, dims = [0] : tensor<1xf64> -> tensor<4x1xf64>
  %d = tidu.broadcast_in_dim %c, dims = [1, 2] : tensor<4x1xf64> -> tensor<2x4x8xf64>
  func.return %b, %d : tensor<2x4x8xf64>, tensor<2x4x8xf64>
}

// broadcast_in_dim / reshape / transpose to the same type -> operand.
// CHECK-LABEL: func.func @same_type(%x: tensor<4x8xf64>, %u: tensor<1x8x1xf64>)
// CHECK-NEXT:    func.return %x, %x, %x, %u
func.func @same_type(%x: tensor<4x8xf64>, %u: tensor<1x8x1xf64>) -> (tensor<4x8xf64>, tensor<4x8xf64>, tensor<4x8xf64>, tensor<1x8x1xf64>) {
  %a = tidu.broadcast_in_dim %x, dims = [0, 1] : tensor<4x8xf64> -> tensor<4x8xf64>
  %b = tidu.reshape %x : tensor<4x8xf64> -> tensor<4x8xf64>
  %c = tidu.transpose %x, permutation = [0, 1] : tensor<4x8xf64> -> tensor<4x8xf64>
  %d = tidu.transpose %u, permutation = [2, 1, 0] : tensor<1x8x1xf64> -> tensor<1x8x1xf64>
  func.return %a, %b, %c, %d : tensor<4x8xf64>, tensor<4x8xf64>, tensor<4x8xf64>, tensor<1x8x1xf64>
}

// A transpose of a square matrix keeps its type but is not a no-op.
// CHECK-LABEL: func.func @square_transpose(%q: tensor<8x8xf64>)
// CHECK-NEXT:    %t = tidu.transpose %q, permutation = [1, 0] : tensor<8x8xf64> -> tensor<8x8xf64>
// CHECK-NEXT:    func.return %t
func.func @square_transpose(%q: tensor<8x8xf64>) -> tensor<8x8xf64> {
  %t = tidu.transpose %q, permutation = [1, 0] : tensor<8x8xf64> -> tensor<8x8xf64>
  func.return %t : tensor<8x8xf64>
}

// reshape of reshape -> one reshape (or the operand when it comes back to its type).
// CHECK-LABEL: func.func @reshape_reshape(%x: tensor<4x8xf64>)
// CHECK-NEXT:    %b = tidu.reshape %x : tensor<4x8xf64> -> tensor<2x16xf64>
// CHECK-NEXT:    func.return %b, %x
func.func @reshape_reshape(%x: tensor<4x8xf64>) -> (tensor<2x16xf64>, tensor<4x8xf64>) {
  %a = tidu.reshape %x : tensor<4x8xf64> -> tensor<32xf64>
  %b = tidu.reshape %a : tensor<32xf64> -> tensor<2x16xf64>
  %c = tidu.reshape %a : tensor<32xf64> -> tensor<4x8xf64>
  func.return %b, %c : tensor<2x16xf64>, tensor<4x8xf64>
}

// transpose of transpose -> one transpose (composed), or the operand for identity.
// CHECK-LABEL: func.func @transpose_transpose(%k: tensor<2x3x4xf64>)
// CHECK-NEXT:    %b = tidu.transpose %k, permutation = [1, 2, 0] : tensor<2x3x4xf64> -> tensor<3x4x2xf64>
// CHECK-NEXT:    func.return %b, %k
func.func @transpose_transpose(%k: tensor<2x3x4xf64>) -> (tensor<3x4x2xf64>, tensor<2x3x4xf64>) {
  %a = tidu.transpose %k, permutation = [1, 0, 2] : tensor<2x3x4xf64> -> tensor<3x2x4xf64>
  %b = tidu.transpose %a, permutation = [0, 2, 1] : tensor<3x2x4xf64> -> tensor<3x4x2xf64>
  %c = tidu.transpose %a, permutation = [1, 0, 2] : tensor<3x2x4xf64> -> tensor<2x3x4xf64>
  func.return %b, %c : tensor<3x4x2xf64>, tensor<2x3x4xf64>
}

// A real contraction over extent-1 dimensions, no batch: an outer product, as a
// broadcast multiply (each operand reshaped to its free dimensions first); a true
// contraction, a batched one and a complex one stay.
// CHECK-LABEL: func.func @outer_product(%a: tensor<4x1xf64>, %b: tensor<3x1xf64>, %v: tensor<4xf64>, %m: tensor<4x2xf64>, %i: tensor<4x1xcomplex<f64>>, %n: tensor<2x4x1xf64>)
// CHECK-NEXT:    %[[A:.*]] = tidu.reshape %a : tensor<4x1xf64> -> tensor<4xf64>
// CHECK-NEXT:    %[[AB:.*]] = tidu.broadcast_in_dim %[[A]], dims = [0] : tensor<4xf64> -> tensor<4x3xf64>
// CHECK-NEXT:    %[[B:.*]] = tidu.reshape %b : tensor<3x1xf64> -> tensor<3xf64>
// CHECK-NEXT:    %[[BB:.*]] = tidu.broadcast_in_dim %[[B]], dims = [1] : tensor<3xf64> -> tensor<4x3xf64>
// CHECK-NEXT:    %[[P:.*]] = tidu.mul %[[AB]], %[[BB]] : tensor<4x3xf64>
// CHECK-NEXT:    %[[VB:.*]] = tidu.broadcast_in_dim %v, dims = [0] : tensor<4xf64> -> tensor<4x4x2xf64>
// CHECK-NEXT:    %[[MB:.*]] = tidu.broadcast_in_dim %m, dims = [1, 2] : tensor<4x2xf64> -> tensor<4x4x2xf64>
// CHECK-NEXT:    %[[Q:.*]] = tidu.mul %[[VB]], %[[MB]] : tensor<4x4x2xf64>
// CHECK-NEXT:    %c = tidu.dot_general %m, %m, batch = [] x [], contracting = [1] x [1]
// CHECK-NEXT:    %d = tidu.dot_general %i, %i,
// CHECK-NEXT:    %e = tidu.dot_general %n, %n, batch = [0] x [0], contracting = [2] x [2]
// CHECK-NEXT:    func.return %[[P]], %[[Q]], %c, %d, %e
func.func @outer_product(%a: tensor<4x1xf64>, %b: tensor<3x1xf64>, %v: tensor<4xf64>, %m: tensor<4x2xf64>, %i: tensor<4x1xcomplex<f64>>, %n: tensor<2x4x1xf64>) -> (tensor<4x3xf64>, tensor<4x4x2xf64>, tensor<4x4xf64>, tensor<4x4xcomplex<f64>>, tensor<2x4x4xf64>) {
  %p = tidu.dot_general %a, %b, batch = [] x [], contracting = [1] x [1] : tensor<4x1xf64>, tensor<3x1xf64> -> tensor<4x3xf64>
  %q = tidu.dot_general %v, %m, batch = [] x [], contracting = [] x [] : tensor<4xf64>, tensor<4x2xf64> -> tensor<4x4x2xf64>
  %c = tidu.dot_general %m, %m, batch = [] x [], contracting = [1] x [1] : tensor<4x2xf64>, tensor<4x2xf64> -> tensor<4x4xf64>
  %d = tidu.dot_general %i, %i, batch = [] x [], contracting = [1] x [1] : tensor<4x1xcomplex<f64>>, tensor<4x1xcomplex<f64>> -> tensor<4x4xcomplex<f64>>
  %e = tidu.dot_general %n, %n, batch = [0] x [0], contracting = [2] x [2] : tensor<2x4x1xf64>, tensor<2x4x1xf64> -> tensor<2x4x4xf64>
  func.return %p, %q, %c, %d, %e : tensor<4x3xf64>, tensor<4x4x2xf64>, tensor<4x4xf64>, tensor<4x4xcomplex<f64>>, tensor<2x4x4xf64>
}

// A contraction of a transpose contracts its operand (the dimension numbers mapped)
// when the free dimensions keep their order (a matrix's transpose always does); %s's
// free dimensions 0 and 1 are %b's 0 and 2, in order: folded; %u's free dimensions
// 1 and 2 are %b's 2 and 0, swapped: kept.
// CHECK-LABEL: func.func @transposed_operand(%a: tensor<4x3xf64>, %b: tensor<2x3x5xf64>, %c: tensor<3x6xf64>)
// CHECK-NEXT:    %p = tidu.dot_general %a, %c, batch = [] x [], contracting = [1] x [0] : tensor<4x3xf64>, tensor<3x6xf64> -> tensor<4x6xf64>
// CHECK-NEXT:    %q = tidu.dot_general %c, %a, batch = [] x [], contracting = [0] x [1] : tensor<3x6xf64>, tensor<4x3xf64> -> tensor<6x4xf64>
// CHECK-NEXT:    %r = tidu.dot_general %b, %c, batch = [] x [], contracting = [1] x [0] : tensor<2x3x5xf64>, tensor<3x6xf64> -> tensor<2x5x6xf64>
// CHECK-NEXT:    %u = tidu.transpose %b, permutation = [1, 2, 0]
// CHECK-NEXT:    %v = tidu.dot_general %u, %c, batch = [] x [], contracting = [0] x [0]
// CHECK-NEXT:    func.return %p, %q, %r, %v
func.func @transposed_operand(%a: tensor<4x3xf64>, %b: tensor<2x3x5xf64>, %c: tensor<3x6xf64>) -> (tensor<4x6xf64>, tensor<6x4xf64>, tensor<2x5x6xf64>, tensor<5x2x6xf64>) {
  %t = tidu.transpose %a, permutation = [1, 0] : tensor<4x3xf64> -> tensor<3x4xf64>
  %p = tidu.dot_general %t, %c, batch = [] x [], contracting = [0] x [0] : tensor<3x4xf64>, tensor<3x6xf64> -> tensor<4x6xf64>
  %q = tidu.dot_general %c, %t, batch = [] x [], contracting = [0] x [0] : tensor<3x6xf64>, tensor<3x4xf64> -> tensor<6x4xf64>
  %s = tidu.transpose %b, permutation = [0, 2, 1] : tensor<2x3x5xf64> -> tensor<2x5x3xf64>
  %r = tidu.dot_general %s, %c, batch = [] x [], contracting = [2] x [0] : tensor<2x5x3xf64>, tensor<3x6xf64> -> tensor<2x5x6xf64>
  %u = tidu.transpose %b, permutation = [1, 2, 0] : tensor<2x3x5xf64> -> tensor<3x5x2xf64>
  %v = tidu.dot_general %u, %c, batch = [] x [], contracting = [0] x [0] : tensor<3x5x2xf64>, tensor<3x6xf64> -> tensor<5x2x6xf64>
  func.return %p, %q, %r, %v : tensor<4x6xf64>, tensor<6x4xf64>, tensor<2x5x6xf64>, tensor<5x2x6xf64>
}

// Scalars inside a kernel body are canonicalized too.
// CHECK-LABEL: func.func @in_kernel(%x: tensor<4xf64>)
// CHECK:         ^bb0(%a: f64):
// CHECK-NEXT:      %e = tidu.exp %a : f64
// CHECK-NEXT:      %one = tidu.full_like %e, 1.000000e+00 : f64
// CHECK-NEXT:      %q = tidu.div %one, %e : f64
// CHECK-NEXT:      tidu.yield %q : f64
func.func @in_kernel(%x: tensor<4xf64>) -> tensor<4xf64> {
  %r = tidu.kernel ins(%x : tensor<4xf64>) domain [4] maps [[0]] -> [[0]] {
  ^bb0(%a: f64):
    %n = tidu.neg %a : f64
    %m = tidu.neg %n : f64
    %e = tidu.exp %m : f64
    %s = tidu.scale %e, 1.000000e+00 : f64
    %q = tidu.pow %s, -1.000000e+00 : f64
    tidu.yield %q : f64
  } : tensor<4xf64>
  func.return %r : tensor<4xf64>
}
