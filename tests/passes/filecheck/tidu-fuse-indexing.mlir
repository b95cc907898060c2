// RUN: xdsl-opt -p "tidu-fuse-elementwise{complex_kernels=true}" %s | filecheck %s

// The backward of tanh(x[1:] * y[:-1]): the slices become operand maps, the pads
// (their transposes) result maps with a fill: one kernel, nothing copied.
// CHECK-LABEL: func.func @slices(
// CHECK-NEXT:    %gx, %gy = tidu.kernel ins(%x, %y, %g : tensor<9xf64>, tensor<9xf64>, tensor<8xf64>) domain [8] maps {{\[\[}}0+1], [0], [0]] -> {{\[\[}}0+1] fill 0.000000e+00, [0] fill 0.000000e+00] {
// CHECK-NEXT:    ^bb0(%x_1: f64, %y_1: f64, %g_1: f64):
// CHECK-NEXT:      %p = tidu.mul %x_1, %y_1 : f64
// CHECK-NEXT:      %t = tidu.tanh %p : f64
// CHECK:           %gxs = tidu.mul %gp, %y_1 : f64
// CHECK-NEXT:      %gys = tidu.mul %gp, %x_1 : f64
// CHECK-NEXT:      tidu.yield %gxs, %gys : f64, f64
// CHECK-NEXT:    } : tensor<9xf64>, tensor<9xf64>
// CHECK-NEXT:    func.return %gx, %gy
func.func @slices(%g: tensor<8xf64>, %x: tensor<9xf64>, %y: tensor<9xf64>) -> (tensor<9xf64>, tensor<9xf64>) {
  %xs = tidu.slice %x, start = [1], step = [1] : tensor<9xf64> -> tensor<8xf64>
  %ys = tidu.slice %y, start = [0], step = [1] : tensor<9xf64> -> tensor<8xf64>
  %p = tidu.mul %xs, %ys : tensor<8xf64>
  %t = tidu.tanh %p : tensor<8xf64>
  %tt = tidu.mul %t, %t : tensor<8xf64>
  %ntt = tidu.neg %tt : tensor<8xf64>
  %om = tidu.shift %ntt, 1.000000e+00 : tensor<8xf64>
  %gp = tidu.mul %g, %om : tensor<8xf64>
  %gxs = tidu.mul %gp, %ys : tensor<8xf64>
  %gys = tidu.mul %gp, %xs : tensor<8xf64>
  %gx = tidu.pad %gxs, start = [1], step = [1], value = 0.000000e+00 : tensor<8xf64> -> tensor<9xf64>
  %gy = tidu.pad %gys, start = [0], step = [1], value = 0.000000e+00 : tensor<8xf64> -> tensor<9xf64>
  func.return %gx, %gy : tensor<9xf64>, tensor<9xf64>
}

// Strided and reversed windows: offset + stride * i per dimension.
// CHECK-LABEL: func.func @windows(
// CHECK-NEXT:    %e = tidu.kernel ins(%x : tensor<4x6xf32>) domain [2, 3] maps {{\[\[}}0*2+1, 1*-2+5]] -> {{\[\[}}0, 1]] {
// CHECK:         %r = tidu.kernel ins(%x : tensor<4x6xf32>) domain [1, 6] maps {{\[\[}}0+3, 1]] -> {{\[\[}}0, 1]] {
// CHECK-NEXT:    ^bb0(%x_1: f32):
// CHECK-NEXT:      tidu.yield %x_1 : f32
func.func @windows(%x: tensor<4x6xf32>) -> (tensor<2x3xf32>, tensor<1x6xf32>) {
  %s = tidu.slice %x, start = [1, 5], step = [2, -2] : tensor<4x6xf32> -> tensor<2x3xf32>
  %e = tidu.exp %s : tensor<2x3xf32>
  %r = tidu.slice %x, start = [3, 0], step = [1, 1] : tensor<4x6xf32> -> tensor<1x6xf32>
  func.return %e, %r : tensor<2x3xf32>, tensor<1x6xf32>
}

// A concatenation: each piece is read where it lies and -0.0 elsewhere, and summed.
// CHECK-LABEL: func.func @concat(
// CHECK-NEXT:    %e = tidu.kernel ins(%a, %b : tensor<2x3xf64>, tensor<2x5xf64>) domain [2, 8] maps {{\[\[}}0, 1] fill -0.000000e+00, [0, 1-3] fill -0.000000e+00] -> {{\[\[}}0, 1]] {
// CHECK-NEXT:    ^bb0(%a_1: f64, %b_1: f64):
// CHECK-NEXT:      %0 = tidu.add %a_1, %b_1 : f64
// CHECK-NEXT:      %e_1 = tidu.exp %0 : f64
func.func @concat(%a: tensor<2x3xf64>, %b: tensor<2x5xf64>) -> tensor<2x8xf64> {
  %c = tidu.concatenate %a, %b, axis = 1 : tensor<2x3xf64>, tensor<2x5xf64> -> tensor<2x8xf64>
  %e = tidu.exp %c : tensor<2x8xf64>
  func.return %e : tensor<2x8xf64>
}

// A complex piece reads (-0.0, -0.0) outside itself.
// CHECK-LABEL: func.func @concat_complex(
// CHECK-NEXT:    %c = tidu.kernel ins(%a, %a : tensor<2xcomplex<f32>>, tensor<2xcomplex<f32>>) domain [4] maps {{\[\[}}0] fill (-0.000000e+00, -0.000000e+00), [0-2] fill (-0.000000e+00, -0.000000e+00)] -> {{\[\[}}0]] {
func.func @concat_complex(%a: tensor<2xcomplex<f32>>) -> tensor<4xcomplex<f32>> {
  %c = tidu.concatenate %a, %a, axis = 0 : tensor<2xcomplex<f32>>, tensor<2xcomplex<f32>> -> tensor<4xcomplex<f32>>
  func.return %c : tensor<4xcomplex<f32>>
}

// A slice of a value the group makes cannot be an operand map: a second kernel reads
// it, and a pad of a reduced value is a kernel of its own.
// CHECK-LABEL: func.func @cut(
// CHECK-NEXT:    %e, %s = tidu.kernel ins(%x : tensor<6xf64>) domain [6] maps {{\[\[}}0]] -> {{\[\[}}0], []] {
// CHECK:         %q = tidu.kernel ins(%e : tensor<6xf64>) domain [3] maps {{\[\[}}0*2]] -> {{\[\[}}0]] {
// CHECK:         %p = tidu.kernel ins(%s : tensor<f64>) domain [] maps {{\[\[}}]] -> {{\[\[}}] fill 0.000000e+00] {
func.func @cut(%x: tensor<6xf64>) -> (tensor<3xf64>, tensor<f64>) {
  %e = tidu.exp %x : tensor<6xf64>
  %s = tidu.reduce_sum %e, axes = [0] : tensor<6xf64> -> tensor<f64>
  %h = tidu.slice %e, start = [0], step = [2] : tensor<6xf64> -> tensor<3xf64>
  %q = tidu.mul %h, %h : tensor<3xf64>
  %p = tidu.pad %s, start = [], step = [], value = 0.000000e+00 : tensor<f64> -> tensor<f64>
  func.return %q, %p : tensor<3xf64>, tensor<f64>
}

// A gather reads its data through the index tensors (kernel inputs with their own map);
// its transpose, a scatter-add, writes through them: one kernel, summed from zero.
// CHECK-LABEL: func.func @gather_scatter(
// CHECK-NEXT:    %s = tidu.kernel ins(%i, %x, %g : tensor<4xi64>, tensor<5x3xf64>, tensor<4x3xf64>) domain [4, 3] maps {{\[\[}}0], [in0, 1], [0, 1]] -> {{\[\[}}in0, 1]] {
// CHECK-NEXT:    ^bb0(%i_1: i64, %x_1: f64, %g_1: f64):
// CHECK-NEXT:      %t = tidu.tanh %x_1 : f64
// CHECK-NEXT:      %u = tidu.mul %t, %g_1 : f64
// CHECK-NEXT:      tidu.yield %u : f64
func.func @gather_scatter(%x: tensor<5x3xf64>, %i: tensor<4xi64>, %g: tensor<4x3xf64>) -> tensor<5x3xf64> {
  %y = tidu.gather %x[%i], axis = 0 : tensor<5x3xf64>, tensor<4xi64> -> tensor<4x3xf64>
  %t = tidu.tanh %y : tensor<4x3xf64>
  %u = tidu.mul %t, %g : tensor<4x3xf64>
  %s = tidu.scatter_add %u[%i], axis = 0 : tensor<4x3xf64>, tensor<4xi64> -> tensor<5x3xf64>
  func.return %s : tensor<5x3xf64>
}

// Integer labels, one value per row, summed: two index tensors (i64 and i32).
// CHECK-LABEL: func.func @labels(
// CHECK-NEXT:    %s = tidu.kernel ins(%r, %l, %x : tensor<6xi64>, tensor<6xi32>, tensor<6x5xf64>) domain [6] maps {{\[\[}}0], [0], [in0, in1]] -> {{\[\[}}]] {
func.func @labels(%x: tensor<6x5xf64>, %r: tensor<6xi64>, %l: tensor<6xi32>) -> tensor<f64> {
  %y = tidu.gather %x[%r, %l], axis = 0 : tensor<6x5xf64>, tensor<6xi64>, tensor<6xi32> -> tensor<6xf64>
  %s = tidu.reduce_sum %y, axes = [0] : tensor<6xf64> -> tensor<f64>
  func.return %s : tensor<f64>
}

// Scans stay between kernels (library calls by design): the kernels around them.
// CHECK-LABEL: func.func @scan(
// CHECK-NEXT:    %e = tidu.kernel ins(%x : tensor<8xf64>)
// CHECK:         %c = tidu.cum_sum %e, axis = 0 reverse : tensor<8xf64> -> tensor<8xf64>
// CHECK-NEXT:    %t = tidu.kernel ins(%c : tensor<8xf64>)
func.func @scan(%x: tensor<8xf64>) -> tensor<8xf64> {
  %e = tidu.exp %x : tensor<8xf64>
  %c = tidu.cum_sum %e, axis = 0 reverse : tensor<8xf64> -> tensor<8xf64>
  %t = tidu.tanh %c : tensor<8xf64>
  func.return %t : tensor<8xf64>
}
