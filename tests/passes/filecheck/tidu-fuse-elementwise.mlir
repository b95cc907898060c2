// RUN: xdsl-opt -p tidu-fuse-elementwise %s | filecheck %s
// RUN: xdsl-opt -p "tidu-fuse-elementwise{complex_kernels=true}" %s | filecheck %s --check-prefix=CPLX

// The W1 backward: L = sum(tanh(x*y + exp(-x)) * y), seed %g broadcast from 0-d.
// CHECK-LABEL: func.func @w1(
// CHECK-NEXT:    %gx, %gy = tidu.kernel ins(%x, %y, %g : tensor<16xf64>, tensor<16xf64>, tensor<f64>) domain [16] maps {{\[\[}}0], [0], []] -> {{\[\[}}0], [0]] {
// CHECK-NEXT:    ^bb0(%x_1: f64, %y_1: f64, %g_1: f64):
// CHECK-NEXT:      %a = tidu.neg %x_1 : f64
// CHECK-NEXT:      %e = tidu.exp %a : f64
// CHECK:           %t = tidu.tanh %s : f64
// CHECK-NEXT:      %gt = tidu.mul %g_1, %y_1 : f64
// CHECK:           %gy_1 = tidu.add %gy1, %gy2 : f64
// CHECK-NEXT:      tidu.yield %gx_1, %gy_1 : f64, f64
// CHECK-NEXT:    } : tensor<16xf64>, tensor<16xf64>
// CHECK-NEXT:    func.return %gx, %gy
func.func @w1(%g: tensor<f64>, %x: tensor<16xf64>, %y: tensor<16xf64>) -> (tensor<16xf64>, tensor<16xf64>) {
  %a = tidu.neg %x : tensor<16xf64>
  %e = tidu.exp %a : tensor<16xf64>
  %p = tidu.mul %x, %y : tensor<16xf64>
  %s = tidu.add %p, %e : tensor<16xf64>
  %t = tidu.tanh %s : tensor<16xf64>
  %gq = tidu.broadcast_in_dim %g, dims = [] : tensor<f64> -> tensor<16xf64>
  %gt = tidu.mul %gq, %y : tensor<16xf64>
  %gy1 = tidu.mul %gq, %t : tensor<16xf64>
  %tt = tidu.mul %t, %t : tensor<16xf64>
  %ntt = tidu.neg %tt : tensor<16xf64>
  %om = tidu.shift %ntt, 1.000000e+00 : tensor<16xf64>
  %gs = tidu.mul %gt, %om : tensor<16xf64>
  %ga = tidu.mul %gs, %e : tensor<16xf64>
  %gx1 = tidu.neg %ga : tensor<16xf64>
  %gx2 = tidu.mul %gs, %y : tensor<16xf64>
  %gy2 = tidu.mul %gs, %x : tensor<16xf64>
  %gx = tidu.add %gx1, %gx2 : tensor<16xf64>
  %gy = tidu.add %gy1, %gy2 : tensor<16xf64>
  func.return %gx, %gy : tensor<16xf64>, tensor<16xf64>
}

// A row vector broadcast over a matrix, a column reduction and a full reduction.
// CHECK-LABEL: func.func @bcast_reduce(
// CHECK-NEXT:    %e, %c, %f = tidu.kernel ins(%v, %x : tensor<8xf32>, tensor<4x8xf32>) domain [4, 8] maps {{\[\[}}1], [0, 1]] -> {{\[\[}}0, 1], [1], []] {
// CHECK-NEXT:    ^bb0(%v_1: f32, %x_1: f32):
// CHECK-NEXT:      %p = tidu.mul %x_1, %v_1 : f32
// CHECK-NEXT:      %e_1 = tidu.exp %p : f32
// CHECK-NEXT:      tidu.yield %e_1, %e_1, %p : f32, f32, f32
// CHECK-NEXT:    } : tensor<4x8xf32>, tensor<8xf32>, tensor<f32>
// CHECK-NEXT:    func.return %e, %c, %f
func.func @bcast_reduce(%x: tensor<4x8xf32>, %v: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<f32>) {
  %b = tidu.broadcast_in_dim %v, dims = [1] : tensor<8xf32> -> tensor<4x8xf32>
  %p = tidu.mul %x, %b : tensor<4x8xf32>
  %e = tidu.exp %p : tensor<4x8xf32>
  %c = tidu.reduce_sum %e, axes = [0] : tensor<4x8xf32> -> tensor<8xf32>
  %f = tidu.reduce_sum %p, axes = [0, 1] : tensor<4x8xf32> -> tensor<f32>
  func.return %e, %c, %f : tensor<4x8xf32>, tensor<8xf32>, tensor<f32>
}

// A chain cut by dot_general: two kernels with the library call between them.
// CHECK-LABEL: func.func @dot_cut(
// CHECK-NEXT:    %h2 = tidu.kernel ins(%x : tensor<4x8xf64>) domain [4, 8] maps {{\[\[}}0, 1]] -> {{\[\[}}0, 1]] {
// CHECK:           tidu.yield %h2_1 : f64
// CHECK-NEXT:    } : tensor<4x8xf64>
// CHECK-NEXT:    %d = tidu.dot_general %h2, %w
// CHECK-NEXT:    %r = tidu.kernel ins(%d, %b : tensor<4x3xf64>, tensor<4x3xf64>) domain [4, 3]
// CHECK-NEXT:    ^bb0(%d_1: f64, %b_1: f64):
// CHECK-NEXT:      %o = tidu.add %d_1, %b_1 : f64
// CHECK-NEXT:      %r_1 = tidu.exp %o : f64
// CHECK-NEXT:      tidu.yield %r_1 : f64
// CHECK-NEXT:    } : tensor<4x3xf64>
// CHECK-NEXT:    func.return %r
func.func @dot_cut(%x: tensor<4x8xf64>, %w: tensor<8x3xf64>, %b: tensor<4x3xf64>) -> tensor<4x3xf64> {
  %h = tidu.tanh %x : tensor<4x8xf64>
  %h2 = tidu.scale %h, 2.000000e+00 : tensor<4x8xf64>
  %d = tidu.dot_general %h2, %w, batch = [] x [], contracting = [1] x [0] : tensor<4x8xf64>, tensor<8x3xf64> -> tensor<4x3xf64>
  %o = tidu.add %d, %b : tensor<4x3xf64>
  %r = tidu.exp %o : tensor<4x3xf64>
  func.return %r : tensor<4x3xf64>
}

// A reduced value cannot feed ops of its own kernel: softmax-like broadcast back.
// CHECK-LABEL: func.func @reduce_back(
// CHECK-NEXT:    %e, %s = tidu.kernel ins(%x : tensor<4x8xf64>) domain [4, 8] maps {{\[\[}}0, 1]] -> {{\[\[}}0, 1], [0]] {
// CHECK:         } : tensor<4x8xf64>, tensor<4xf64>
// CHECK-NEXT:    %r = tidu.kernel ins(%s, %e : tensor<4xf64>, tensor<4x8xf64>) domain [4, 8] maps {{\[\[}}0], [0, 1]] -> {{\[\[}}0, 1]] {
// CHECK-NEXT:    ^bb0(%s_1: f64, %e_1: f64):
// CHECK-NEXT:      %r_1 = tidu.div %e_1, %s_1 : f64
func.func @reduce_back(%x: tensor<4x8xf64>) -> tensor<4x8xf64> {
  %e = tidu.exp %x : tensor<4x8xf64>
  %s = tidu.reduce_sum %e, axes = [1] : tensor<4x8xf64> -> tensor<4xf64>
  %b = tidu.broadcast_in_dim %s, dims = [0] : tensor<4xf64> -> tensor<4x8xf64>
  %r = tidu.div %e, %b : tensor<4x8xf64>
  func.return %r : tensor<4x8xf64>
}

// No cycle: %c reads %a and the dot of %a, so it cannot join %a's kernel.
// CHECK-LABEL: func.func @no_cycle(
// CHECK-NEXT:    %a = tidu.kernel ins(%x : tensor<4x4xf64>)
// CHECK:         %d = tidu.dot_general %a, %x
// CHECK-NEXT:    %c = tidu.kernel ins(%a, %d : tensor<4x4xf64>, tensor<4x4xf64>)
func.func @no_cycle(%x: tensor<4x4xf64>) -> tensor<4x4xf64> {
  %a = tidu.exp %x : tensor<4x4xf64>
  %d = tidu.dot_general %a, %x, batch = [] x [], contracting = [1] x [0] : tensor<4x4xf64>, tensor<4x4xf64> -> tensor<4x4xf64>
  %c = tidu.mul %a, %d : tensor<4x4xf64>
  func.return %c : tensor<4x4xf64>
}

// Ops on complex values stay outside kernels by default; with complex_kernels=true,
// those without a complex lowering (log) stay and cut the chain. Reshape always
// stays.
// CHECK-LABEL: func.func @unfused(
// CHECK-NEXT:    %c = tidu.conj %z : tensor<4xcomplex<f64>>
// CHECK-NEXT:    %l = tidu.log %c : tensor<4xcomplex<f64>>
// CHECK-NEXT:    %m = tidu.mul %l, %z : tensor<4xcomplex<f64>>
// CHECK-NEXT:    %r = tidu.reshape %x
// CHECK-NEXT:    func.return
// CPLX-LABEL: func.func @unfused(
// CPLX-NEXT:    %c = tidu.kernel ins(%z : tensor<4xcomplex<f64>>) domain [4]
// CPLX-NEXT:    ^bb0(%z_1: complex<f64>):
// CPLX-NEXT:      %c_1 = tidu.conj %z_1 : complex<f64>
// CPLX-NEXT:      tidu.yield %c_1 : complex<f64>
// CPLX-NEXT:    } : tensor<4xcomplex<f64>>
// CPLX-NEXT:    %l = tidu.log %c : tensor<4xcomplex<f64>>
// CPLX-NEXT:    %m = tidu.kernel ins(%l, %z : tensor<4xcomplex<f64>>, tensor<4xcomplex<f64>>) domain [4]
// CPLX-NEXT:    ^bb0(%l_1: complex<f64>, %z_1: complex<f64>):
// CPLX-NEXT:      %m_1 = tidu.mul %l_1, %z_1 : complex<f64>
// CPLX:         %r = tidu.reshape %x
// CPLX-NEXT:    func.return
func.func @unfused(%z: tensor<4xcomplex<f64>>, %x: tensor<4x2xf64>) -> (tensor<4xcomplex<f64>>, tensor<8xf64>) {
  %c = tidu.conj %z : tensor<4xcomplex<f64>>
  %l = tidu.log %c : tensor<4xcomplex<f64>>
  %m = tidu.mul %l, %z : tensor<4xcomplex<f64>>
  %r = tidu.reshape %x : tensor<4x2xf64> -> tensor<8xf64>
  func.return %m, %r : tensor<4xcomplex<f64>>, tensor<8xf64>
}

// A transpose is a view: its operand read through the permuted map; alone, a
// copying kernel.
// CHECK-LABEL: func.func @transposed(
// CHECK-NEXT:    %m = tidu.kernel ins(%x, %y : tensor<4x2xf64>, tensor<2x4xf64>) domain [2, 4] maps {{\[\[}}1, 0], [0, 1]] -> {{\[\[}}0, 1]] {
// CHECK-NEXT:    ^bb0(%x_1: f64, %y_1: f64):
// CHECK-NEXT:      %m_1 = tidu.mul %x_1, %y_1 : f64
// CHECK:         %t = tidu.kernel ins(%y : tensor<2x4xf64>) domain [4, 2] maps {{\[\[}}1, 0]] -> {{\[\[}}0, 1]] {
// CHECK-NEXT:    ^bb0(%y_1: f64):
// CHECK-NEXT:      tidu.yield %y_1 : f64
// CHECK:         func.return %m, %t
func.func @transposed(%x: tensor<4x2xf64>, %y: tensor<2x4xf64>) -> (tensor<2x4xf64>, tensor<4x2xf64>) {
  %xt = tidu.transpose %x, permutation = [1, 0] : tensor<4x2xf64> -> tensor<2x4xf64>
  %m = tidu.mul %xt, %y : tensor<2x4xf64>
  %t = tidu.transpose %y, permutation = [1, 0] : tensor<2x4xf64> -> tensor<4x2xf64>
  func.return %m, %t : tensor<2x4xf64>, tensor<4x2xf64>
}

// triangle_part joins a kernel as an elementwise op on the body's scalars (the loop
// lowering selects by the iteration point); a complex one only with complex_kernels.
// CHECK-LABEL: func.func @triangle(
// CHECK-NEXT:    %s = tidu.kernel ins(%x : tensor<4x4xf64>) domain [4, 4] maps {{\[\[}}0, 1]] -> {{\[\[}}0, 1]] {
// CHECK-NEXT:    ^bb0(%x_1: f64):
// CHECK-NEXT:      %l = tidu.triangle_part %x_1, offset = -1 : f64 -> f64
// CHECK-NEXT:      %u = tidu.triangle_part %x_1, offset = 0 upper : f64 -> f64
// CHECK-NEXT:      %s_1 = tidu.add %l, %u : f64
// CHECK-NEXT:      tidu.yield %s_1 : f64
// CHECK:         %c = tidu.triangle_part %z, offset = 0 : tensor<4x4xcomplex<f64>>
// CHECK-NEXT:    func.return %s, %c
// CPLX-LABEL: func.func @triangle(
// CPLX-NEXT:     %s, %c = tidu.kernel ins(%x, %z : tensor<4x4xf64>, tensor<4x4xcomplex<f64>>) domain [4, 4]
// CPLX:            %c_1 = tidu.triangle_part %z_1, offset = 0 : complex<f64> -> complex<f64>
func.func @triangle(%x: tensor<4x4xf64>, %z: tensor<4x4xcomplex<f64>>) -> (tensor<4x4xf64>, tensor<4x4xcomplex<f64>>) {
  %l = tidu.triangle_part %x, offset = -1 : tensor<4x4xf64> -> tensor<4x4xf64>
  %u = tidu.triangle_part %x, offset = 0 upper : tensor<4x4xf64> -> tensor<4x4xf64>
  %s = tidu.add %l, %u : tensor<4x4xf64>
  %c = tidu.triangle_part %z, offset = 0 : tensor<4x4xcomplex<f64>> -> tensor<4x4xcomplex<f64>>
  func.return %s, %c : tensor<4x4xf64>, tensor<4x4xcomplex<f64>>
}

// Splat constants and full_like become scalar constants of the body; one op is a kernel.
// CHECK-LABEL: func.func @constants(
// CHECK-NEXT:    %k = tidu.constant 3.000000e+00 : tensor<4xf64>
// CHECK-NEXT:    %f, %b = tidu.kernel ins(%x : tensor<4xf64>) domain [4] maps {{\[\[}}0]] -> {{\[\[}}0], [0]] {
// CHECK-NEXT:    ^bb0(%x_1: f64):
// CHECK-NEXT:      %f_1 = tidu.constant 2.000000e+00 : f64
// CHECK-NEXT:      %k_1 = tidu.constant 3.000000e+00 : f64
// CHECK-NEXT:      %a = tidu.mul %x_1, %k_1 : f64
// CHECK-NEXT:      %b_1 = tidu.add %a, %f_1 : f64
// CHECK-NEXT:      tidu.yield %f_1, %b_1 : f64, f64
// CHECK:         func.return %b, %k, %f
func.func @constants(%x: tensor<4xf64>) -> (tensor<4xf64>, tensor<4xf64>, tensor<4xf64>) {
  %k = tidu.constant 3.000000e+00 : tensor<4xf64>
  %f = tidu.full_like %x, 2.000000e+00 : tensor<4xf64>
  %a = tidu.mul %x, %k : tensor<4xf64>
  %b = tidu.add %a, %f : tensor<4xf64>
  func.return %b, %k, %f : tensor<4xf64>, tensor<4xf64>, tensor<4xf64>
}

// Independent chains of one domain share a kernel; one value read through two maps.
// CHECK-LABEL: func.func @siblings(
// CHECK-NEXT:    %a, %d = tidu.kernel ins(%x, %v, %v : tensor<4x4xf64>, tensor<4xf64>, tensor<4xf64>) domain [4, 4] maps {{\[\[}}0, 1], [0], [1]] -> {{\[\[}}0, 1], [0, 1]] {
// CHECK-NEXT:    ^bb0(%x_1: f64, %v_1: f64, %v_2: f64):
// CHECK-NEXT:      %a_1 = tidu.sin %x_1 : f64
// CHECK-NEXT:      %d_1 = tidu.sub %v_1, %v_2 : f64
func.func @siblings(%x: tensor<4x4xf64>, %v: tensor<4xf64>) -> (tensor<4x4xf64>, tensor<4x4xf64>) {
  %a = tidu.sin %x : tensor<4x4xf64>
  %r = tidu.broadcast_in_dim %v, dims = [0] : tensor<4xf64> -> tensor<4x4xf64>
  %c = tidu.broadcast_in_dim %v, dims = [1] : tensor<4xf64> -> tensor<4x4xf64>
  %d = tidu.sub %r, %c : tensor<4x4xf64>
  func.return %a, %d : tensor<4x4xf64>, tensor<4x4xf64>
}

// Masks and sincos; a dead op makes no kernel.
// CHECK-LABEL: func.func @masks(
// CHECK-NEXT:    %m, %r = tidu.kernel ins(%x, %y : tensor<8xf64>, tensor<8xf64>) domain [8]
// CHECK-NEXT:    ^bb0(%x_1: f64, %y_1: f64):
// CHECK-NEXT:      %m_1 = tidu.compare gt, %x_1, %y_1 : f64
// CHECK-NEXT:      %s, %c = tidu.sincos %x_1 : f64
// CHECK-NEXT:      %r_1 = tidu.select %m_1, %s, %c : f64
// CHECK-NEXT:      tidu.yield %m_1, %r_1 : i1, f64
// CHECK-NEXT:    } : tensor<8xi1>, tensor<8xf64>
// CHECK-NOT:     tidu.kernel
// CHECK:         func.return %m, %r
func.func @masks(%x: tensor<8xf64>, %y: tensor<8xf64>) -> (tensor<8xi1>, tensor<8xf64>) {
  %m = tidu.compare gt, %x, %y : tensor<8xf64>
  %s, %c = tidu.sincos %x : tensor<8xf64>
  %r = tidu.select %m, %s, %c : tensor<8xf64>
  %dead = tidu.exp %y : tensor<8xf64>
  func.return %m, %r : tensor<8xi1>, tensor<8xf64>
}

// Kernels are placed after the ops they read: %t comes first, then the one kernel.
// CHECK-LABEL: func.func @reorder(
// CHECK-NEXT:    %t = tidu.reshape %y
// CHECK-NEXT:    %c = tidu.kernel ins(%x, %t : tensor<4x4xf64>, tensor<4x4xf64>)
func.func @reorder(%x: tensor<4x4xf64>, %y: tensor<16xf64>) -> tensor<4x4xf64> {
  %a = tidu.exp %x : tensor<4x4xf64>
  %t = tidu.reshape %y : tensor<16xf64> -> tensor<4x4xf64>
  %c = tidu.mul %a, %t : tensor<4x4xf64>
  func.return %c : tensor<4x4xf64>
}

// Regression: %b joins the first kernel after %s's kernel exists, so that kernel now
// depends on %s's; %t (reading the reduction) must not join %s's kernel: a cycle.
// CHECK-LABEL: func.func @late_dependency(
// CHECK-NEXT:    %s = tidu.kernel ins(%g : tensor<f64>) domain []
// CHECK:         %c, %r = tidu.kernel ins(%x, %s : tensor<4xf64>, tensor<f64>) domain [4] maps {{\[\[}}0], []] -> {{\[\[}}0], []] {
// CHECK:         %t = tidu.kernel ins(%r : tensor<f64>) domain []
// CHECK:         func.return %c, %t
func.func @late_dependency(%x: tensor<4xf64>, %g: tensor<f64>) -> (tensor<4xf64>, tensor<f64>) {
  %a = tidu.neg %x : tensor<4xf64>
  %s = tidu.shift %g, 1.000000e+00 : tensor<f64>
  %b = tidu.broadcast_in_dim %s, dims = [] : tensor<f64> -> tensor<4xf64>
  %c = tidu.add %a, %b : tensor<4xf64>
  %r = tidu.reduce_sum %a, axes = [0] : tensor<4xf64> -> tensor<f64>
  %t = tidu.shift %r, 2.000000e+00 : tensor<f64>
  func.return %c, %t : tensor<4xf64>, tensor<f64>
}
