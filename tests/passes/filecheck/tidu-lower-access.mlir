// RUN: xdsl-opt -p "tidu-lower-to-loops{chunked=true}" %s | filecheck %s

// A pad as a result map: the fill goes where no iteration writes, slab by slab; the
// rows no chunk writes (dimension 0's sides) by the chunk starting at 0, each chunk the
// other sides of its own rows (ops marked tidu.fill: the plan's work estimate skips
// them). Then the main nest writes at 1 + i0, 5 - i1.
// CHECK-LABEL: func.func @pad2d_k0(
// CHECK:         %0 = arith.cmpi eq, %lo, %c0 : index
// CHECK-NEXT:    scf.if %0 {
// CHECK-NEXT:      scf.for %i0 = %c0 to %c1 step %c1 {
// CHECK-NEXT:        scf.for %i1 = %c0 to %c7 step %c1 {
// CHECK-NEXT:          %1 = arith.constant 2.500000e+00 : f64
// CHECK-NEXT:          memref.store %1, %out0[%i0, %i1] : memref<5x7xf64>
// CHECK:           scf.if %2 {
// CHECK-NEXT:      scf.for %i0_1 = %c4 to %c5 step %c1 {
// CHECK:         %4 = arith.addi %lo, %c1 : index
// CHECK-NEXT:    %5 = arith.addi %hi, %c1 : index
// CHECK-NEXT:    scf.for %i0_2 = %4 to %5 step %c1 {
// CHECK-NEXT:      scf.for %i1_2 = %c0 to %c2 step %c1 {
// CHECK:         scf.for %i0_3 = %4 to %5 step %c1 {
// CHECK-NEXT:      scf.for %i1_3 = %c6 to %c7 step %c1 {
// CHECK:         scf.for %i0_4 = %lo to %hi step %c1 {
// CHECK-NEXT:      scf.for %i1_4 = %c0 to %c4 step %c1 {
// CHECK-NEXT:        %x = memref.load %in0[%i0_4, %i1_4] : memref<3x4xf64>
// CHECK-NEXT:        %8 = arith.addi %i0_4, %c1 : index
// CHECK-NEXT:        %9 = arith.muli %i1_4, %c-1 : index
// CHECK-NEXT:        %10 = arith.addi %9, %c5 : index
// CHECK-NEXT:        memref.store %x, %out0[%8, %10] : memref<5x7xf64>
func.func @pad2d(%x: tensor<3x4xf64>) -> tensor<5x7xf64> {
  %p = tidu.kernel ins(%x : tensor<3x4xf64>) domain [3, 4] maps [[0, 1]] -> [[0+1, 1*-1+5] fill 2.500000e+00] {
  ^bb0(%x_1: f64):
    tidu.yield %x_1 : f64
  } : tensor<5x7xf64>
  func.return %p : tensor<5x7xf64>
}

// A strided pad is filled whole first, and its kernel takes no row range.
// CHECK-LABEL: func.func @strided_k0(%in0: memref<3xf32> {llvm.noalias}, %out0: memref<7xf32> {llvm.noalias}) attributes {tidu.kernel} {
// CHECK:         scf.for %i0 = %c0 to %c7 step %c1 {
// CHECK-NEXT:      %0 = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      memref.store %0, %out0[%i0] : memref<7xf32>
// CHECK:         scf.for %i0_1 = %c0 to %c3 step %c1 {
// CHECK-NEXT:      %x = memref.load %in0[%i0_1] : memref<3xf32>
// CHECK-NEXT:      %1 = arith.muli %i0_1, %c3 : index
// CHECK-NEXT:      memref.store %x, %out0[%1] : memref<7xf32>
func.func @strided(%x: tensor<3xf32>) -> tensor<7xf32> {
  %p = tidu.kernel ins(%x : tensor<3xf32>) domain [3] maps [[0]] -> [[0*3] fill 0.000000e+00] {
  ^bb0(%x_1: f32):
    tidu.yield %x_1 : f32
  } : tensor<7xf32>
  func.return %p : tensor<7xf32>
}

// A gather reads through the index operand (negative counts from the end, clamped
// into the dimension); a scatter-add accumulates from zero. Its output is summed over
// dimension 0, so each chunk has a private copy (tidu.partial_outputs = [0]).
// CHECK-LABEL: func.func @gather_scatter(
// CHECK:         func.call @gather_scatter_k1({{.*}}) {tidu.chunk_extent = 4 : i64, tidu.domain_size = 12 : i64, tidu.partial_outputs = [0 : i64]}
// CHECK-LABEL: func.func @gather_scatter_k0(
// CHECK:             %0 = memref.load %in1[%i0] : memref<4xi64>
// CHECK-NEXT:        %1 = arith.index_cast %0 : i64 to index
// CHECK-NEXT:        %2 = arith.cmpi slt, %1, %c0 : index
// CHECK-NEXT:        %3 = arith.addi %1, %c5 : index
// CHECK-NEXT:        %4 = arith.select %2, %3, %1 : index
// CHECK-NEXT:        %5 = arith.maxsi %4, %c0 : index
// CHECK-NEXT:        %6 = arith.minsi %5, %c4 : index
// CHECK-NEXT:        %x = memref.load %in0[%6, %i1] : memref<5x3xf64>
// CHECK-NEXT:        memref.store %x, %out0[%i0, %i1] : memref<4x3xf64>
// CHECK-LABEL: func.func @gather_scatter_k1(
// CHECK:         scf.for %i0 = %c0 to %c5 step %c1 {
// CHECK:             memref.store %0, %out0[%i0, %i1] : memref<5x3xf64>
// CHECK:             %u = memref.load %in0[%i0_1, %i1_1] : memref<4x3xf64>
// CHECK-NEXT:        %1 = memref.load %in1[%i0_1] : memref<4xi64>
// CHECK:             %7 = arith.minsi %6, %c4 : index
// CHECK-NEXT:        %8 = memref.load %out0[%7, %i1_1] : memref<5x3xf64>
// CHECK-NEXT:        %9 = arith.addf %8, %u fastmath<reassoc> : f64
// CHECK-NEXT:        memref.store %9, %out0[%7, %i1_1] : memref<5x3xf64>
func.func @gather_scatter(%x: tensor<5x3xf64>, %i: tensor<4xi64>, %u: tensor<4x3xf64>) -> (tensor<4x3xf64>, tensor<5x3xf64>) {
  %g = tidu.kernel ins(%x, %i : tensor<5x3xf64>, tensor<4xi64>) domain [4, 3] maps [[in1, 1], [0]] -> [[0, 1]] {
  ^bb0(%x_1: f64, %i_1: i64):
    tidu.yield %x_1 : f64
  } : tensor<4x3xf64>
  %s = tidu.kernel ins(%u, %i : tensor<4x3xf64>, tensor<4xi64>) domain [4, 3] maps [[0, 1], [0]] -> [[in1, 1]] {
  ^bb0(%u_1: f64, %i_1: i64):
    tidu.yield %u_1 : f64
  } : tensor<5x3xf64>
  func.return %g, %s : tensor<4x3xf64>, tensor<5x3xf64>
}

// A concatenation piece read with a fill: where its index leaves it, the load reads
// index 0 and the fill is selected (only the dimension that can leave is checked).
// CHECK-LABEL: func.func @concat_k0(
// CHECK:             %0 = arith.addi %i1, %c-3 : index
// CHECK-NEXT:        %1 = arith.cmpi sge, %0, %c0 : index
// CHECK-NEXT:        %2 = arith.cmpi slt, %0, %c5 : index
// CHECK-NEXT:        %3 = arith.andi %1, %2 : i1
// CHECK-NEXT:        %4 = arith.select %3, %0, %c0 : index
// CHECK-NEXT:        %5 = memref.load %in0[%i0, %4] : memref<2x5xf64>
// CHECK-NEXT:        %6 = arith.constant -0.000000e+00 : f64
// CHECK-NEXT:        %b = arith.select %3, %5, %6 : f64
func.func @concat(%b: tensor<2x5xf64>) -> tensor<2x8xf64> {
  %e = tidu.kernel ins(%b : tensor<2x5xf64>) domain [2, 8] maps [[0, 1-3] fill -0.000000e+00] -> [[0, 1]] {
  ^bb0(%b_1: f64):
    tidu.yield %b_1 : f64
  } : tensor<2x8xf64>
  func.return %e : tensor<2x8xf64>
}
