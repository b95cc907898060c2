// RUN: xdsl-opt -p "tidu-fuse-elementwise{complex_kernels=true}" %s | filecheck %s

// A max reduction fuses with its neighbours: the scale before it is computed in its
// kernel (a result combined by max), and the shifted exp and its sum read the maximum
// through a broadcast operand map in the next one.
// CHECK-LABEL: func.func @softmax(
// CHECK-NEXT:    %s, %m = tidu.kernel ins(%x : tensor<4x8xf64>) domain [4, 8] maps {{\[\[}}0, 1]] -> {{\[\[}}0, 1], [0] max] {
// CHECK-NEXT:    ^bb0(%x_1: f64):
// CHECK-NEXT:      %s_1 = tidu.scale %x_1, 2.000000e+00 : f64
// CHECK-NEXT:      tidu.yield %s_1, %s_1 : f64, f64
// CHECK-NEXT:    } : tensor<4x8xf64>, tensor<4xf64>
// CHECK-NEXT:    %e, %t = tidu.kernel ins(%m, %s : tensor<4xf64>, tensor<4x8xf64>) domain [4, 8] maps {{\[\[}}0], [0, 1]] -> {{\[\[}}0, 1], [0]] {
// CHECK-NEXT:    ^bb0(%m_1: f64, %s_1: f64):
// CHECK-NEXT:      %d = tidu.sub %s_1, %m_1 : f64
// CHECK-NEXT:      %e_1 = tidu.exp %d : f64
// CHECK-NEXT:      tidu.yield %e_1, %e_1 : f64, f64
// CHECK-NEXT:    } : tensor<4x8xf64>, tensor<4xf64>
// CHECK-NEXT:    %r = tidu.kernel ins(%t, %e : tensor<4xf64>, tensor<4x8xf64>) domain [4, 8]
func.func @softmax(%x: tensor<4x8xf64>) -> tensor<4x8xf64> {
  %s = tidu.scale %x, 2.000000e+00 : tensor<4x8xf64>
  %m = tidu.reduce_max %s, axes = [1] : tensor<4x8xf64> -> tensor<4xf64>
  %b = tidu.broadcast_in_dim %m, dims = [0] : tensor<4xf64> -> tensor<4x8xf64>
  %d = tidu.sub %s, %b : tensor<4x8xf64>
  %e = tidu.exp %d : tensor<4x8xf64>
  %t = tidu.reduce_sum %e, axes = [1] : tensor<4x8xf64> -> tensor<4xf64>
  %tb = tidu.broadcast_in_dim %t, dims = [0] : tensor<4xf64> -> tensor<4x8xf64>
  %r = tidu.div %e, %tb : tensor<4x8xf64>
  func.return %r : tensor<4x8xf64>
}

// The residuals of a product's gradient: a sum and a product in one kernel, each
// result with its own combiner.
// CHECK-LABEL: func.func @prod_weights(
// CHECK:         %count, %rest = tidu.kernel ins(%x : tensor<3x5xf32>) domain [3, 5] maps {{\[\[}}0, 1]] -> {{\[\[}}0], [0] mul] {
// CHECK:           tidu.yield %ones, %safe : f32, f32
// CHECK-NEXT:    } : tensor<3xf32>, tensor<3xf32>
func.func @prod_weights(%x: tensor<3x5xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %zero = tidu.constant 0.000000e+00 : tensor<3x5xf32>
  %one = tidu.constant 1.000000e+00 : tensor<3x5xf32>
  %z = tidu.compare eq, %x, %zero : tensor<3x5xf32>
  %safe = tidu.select %z, %one, %x : tensor<3x5xf32>
  %ones = tidu.select %z, %one, %zero : tensor<3x5xf32>
  %count = tidu.reduce_sum %ones, axes = [1] : tensor<3x5xf32> -> tensor<3xf32>
  %rest = tidu.reduce_prod %safe, axes = [1] : tensor<3x5xf32> -> tensor<3xf32>
  func.return %count, %rest : tensor<3xf32>, tensor<3xf32>
}

// any and all: max and min of i1 values.
// CHECK-LABEL: func.func @any_all(
// CHECK:         %any, %all = tidu.kernel ins(%x : tensor<4x8xf64>) domain [4, 8] maps {{\[\[}}0, 1]] -> {{\[\[}}1] max, [] min] {
// CHECK:           %nz = tidu.compare ne, %x_1, %zero_1 : f64
// CHECK-NEXT:      tidu.yield %nz, %nz : i1, i1
// CHECK-NEXT:    } : tensor<8xi1>, tensor<i1>
func.func @any_all(%x: tensor<4x8xf64>) -> (tensor<8xi1>, tensor<i1>) {
  %zero = tidu.constant 0.000000e+00 : tensor<4x8xf64>
  %nz = tidu.compare ne, %x, %zero : tensor<4x8xf64>
  %any = tidu.reduce_max %nz, axes = [0] : tensor<4x8xi1> -> tensor<8xi1>
  %all = tidu.reduce_min %nz, axes = [0, 1] : tensor<4x8xi1> -> tensor<i1>
  func.return %any, %all : tensor<8xi1>, tensor<i1>
}

// A product of complex values.
// CHECK-LABEL: func.func @complex_prod(
// CHECK-NEXT:    %p = tidu.kernel ins(%z : tensor<6xcomplex<f64>>) domain [6] maps {{\[\[}}0]] -> {{\[\[}}] mul] {
// CHECK-NEXT:    ^bb0(%z_1: complex<f64>):
// CHECK-NEXT:      %c = tidu.conj %z_1 : complex<f64>
func.func @complex_prod(%z: tensor<6xcomplex<f64>>) -> tensor<complex<f64>> {
  %c = tidu.conj %z : tensor<6xcomplex<f64>>
  %p = tidu.reduce_prod %c, axes = [0] : tensor<6xcomplex<f64>> -> tensor<complex<f64>>
  func.return %p : tensor<complex<f64>>
}

// A reduction over no axes writes each element once: no combiner.
// CHECK-LABEL: func.func @over_nothing(
// CHECK-NEXT:    %m = tidu.kernel ins(%x : tensor<4xf64>) domain [4] maps {{\[\[}}0]] -> {{\[\[}}0]] {
func.func @over_nothing(%x: tensor<4xf64>) -> tensor<4xf64> {
  %n = tidu.neg %x : tensor<4xf64>
  %m = tidu.reduce_min %n, axes = [] : tensor<4xf64> -> tensor<4xf64>
  func.return %m : tensor<4xf64>
}
