// RUN: xdsl-opt -p "tidu-fuse-elementwise{complex_kernels=true},tidu-lower-to-loops" %s --split-input-file | filecheck %s

// The lowering row of every binary (and complex) math primitive (passes/tidu_math_lowering.py), fused
// with a neighbour on each side into one kernel: the row's math/llvm ops and compares
// appear in the loop body between the producer's arith.mulf and the consumer's arith.addf.

// tidu.arctan2: its row in a kernel between a mul and an add
// CHECK-LABEL: func.func @arctan2(
// CHECK-NOT:     tidu.
// CHECK:         func.call @arctan2_k0(
// CHECK-NOT:     tidu.
// CHECK-LABEL: func.func @arctan2_k0(
// CHECK:         %a = arith.mulf %x, %y : f64
// CHECK:         %b = math.atan2 %a, %y : f64
// CHECK-NEXT:    %c = arith.addf %b, %x : f64
func.func @arctan2(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %a = tidu.mul %x, %y : tensor<4xf64>
  %b = tidu.arctan2 %a, %y : tensor<4xf64>
  %c = tidu.add %b, %x : tensor<4xf64>
  func.return %c : tensor<4xf64>
}

// -----

// tidu.hypot: its row in a kernel between a mul and an add
// CHECK-LABEL: func.func @hypot(
// CHECK-NOT:     tidu.
// CHECK:         func.call @hypot_k0(
// CHECK-NOT:     tidu.
// CHECK-LABEL: func.func @hypot_k0(
// CHECK:         %a = arith.mulf %x, %y : f64
// CHECK:         math.absf
// CHECK:         math.absf
// CHECK:         arith.maximumf
// CHECK:         arith.minimumf
// CHECK:         math.fma
// CHECK:         math.sqrt
// CHECK:         arith.cmpf oeq
// CHECK:         arith.cmpf oeq
// CHECK:         arith.cmpf oeq
// CHECK:         %b = arith.select %{{.*}}, %{{.*}}, %{{.*}} : f64
// CHECK-NEXT:    %c = arith.addf %b, %x : f64
func.func @hypot(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %a = tidu.mul %x, %y : tensor<4xf64>
  %b = tidu.hypot %a, %y : tensor<4xf64>
  %c = tidu.add %b, %x : tensor<4xf64>
  func.return %c : tensor<4xf64>
}

// -----

// tidu.logaddexp: its row in a kernel between a mul and an add
// CHECK-LABEL: func.func @logaddexp(
// CHECK-NOT:     tidu.
// CHECK:         func.call @logaddexp_k0(
// CHECK-NOT:     tidu.
// CHECK-LABEL: func.func @logaddexp_k0(
// CHECK:         %a = arith.mulf %x, %y : f32
// CHECK:         arith.extf
// CHECK:         arith.extf
// CHECK:         arith.minimumf
// CHECK:         math.exp
// CHECK:         math.log
// CHECK:         arith.maximumf
// CHECK:         arith.cmpf oeq
// CHECK:         %b = arith.truncf %{{.*}} : f64 to f32
// CHECK-NEXT:    %c = arith.addf %b, %x : f32
func.func @logaddexp(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %a = tidu.mul %x, %y : tensor<4xf32>
  %b = tidu.logaddexp %a, %y : tensor<4xf32>
  %c = tidu.add %b, %x : tensor<4xf32>
  func.return %c : tensor<4xf32>
}

// -----

// tidu.logaddexp2: its row in a kernel between a mul and an add
// CHECK-LABEL: func.func @logaddexp2(
// CHECK-NOT:     tidu.
// CHECK:         func.call @logaddexp2_k0(
// CHECK-NOT:     tidu.
// CHECK-LABEL: func.func @logaddexp2_k0(
// CHECK:         %a = arith.mulf %x, %y : f64
// CHECK:         arith.minimumf
// CHECK:         math.fma
// CHECK:         math.fma
// CHECK:         math.exp
// CHECK:         math.fma
// CHECK:         arith.cmpf oeq
// CHECK:         arith.cmpf oeq
// CHECK:         math.log
// CHECK:         arith.maximumf
// CHECK:         arith.cmpf oeq
// CHECK:         %b = arith.select %{{.*}}, %{{.*}}, %{{.*}} : f64
// CHECK-NEXT:    %c = arith.addf %b, %x : f64
func.func @logaddexp2(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %a = tidu.mul %x, %y : tensor<4xf64>
  %b = tidu.logaddexp2 %a, %y : tensor<4xf64>
  %c = tidu.add %b, %x : tensor<4xf64>
  func.return %c : tensor<4xf64>
}

// -----

// tidu.power: its row in a kernel between a mul and an add
// CHECK-LABEL: func.func @power(
// CHECK-NOT:     tidu.
// CHECK:         func.call @power_k0(
// CHECK-NOT:     tidu.
// CHECK-LABEL: func.func @power_k0(
// CHECK:         %a = arith.mulf %x, %y : f64
// CHECK:         %b = math.powf %a, %y : f64
// CHECK-NEXT:    %c = arith.addf %b, %x : f64
func.func @power(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %a = tidu.mul %x, %y : tensor<4xf64>
  %b = tidu.power %a, %y : tensor<4xf64>
  %c = tidu.add %b, %x : tensor<4xf64>
  func.return %c : tensor<4xf64>
}

// -----

// tidu.minimum: its row in a kernel between a mul and an add
// CHECK-LABEL: func.func @minimum(
// CHECK-NOT:     tidu.
// CHECK:         func.call @minimum_k0(
// CHECK-NOT:     tidu.
// CHECK-LABEL: func.func @minimum_k0(
// CHECK:         %a = arith.mulf %x, %y : f64
// CHECK:         %b = arith.minimumf %a, %y : f64
// CHECK-NEXT:    %c = arith.addf %b, %x : f64
func.func @minimum(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %a = tidu.mul %x, %y : tensor<4xf64>
  %b = tidu.minimum %a, %y : tensor<4xf64>
  %c = tidu.add %b, %x : tensor<4xf64>
  func.return %c : tensor<4xf64>
}

// -----

// tidu.fmax: its row in a kernel between a mul and an add
// CHECK-LABEL: func.func @fmax(
// CHECK-NOT:     tidu.
// CHECK:         func.call @fmax_k0(
// CHECK-NOT:     tidu.
// CHECK-LABEL: func.func @fmax_k0(
// CHECK:         %a = arith.mulf %x, %y : f64
// CHECK:         %b = arith.maxnumf %a, %y : f64
// CHECK-NEXT:    %c = arith.addf %b, %x : f64
func.func @fmax(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %a = tidu.mul %x, %y : tensor<4xf64>
  %b = tidu.fmax %a, %y : tensor<4xf64>
  %c = tidu.add %b, %x : tensor<4xf64>
  func.return %c : tensor<4xf64>
}

// -----

// tidu.fmin: its row in a kernel between a mul and an add
// CHECK-LABEL: func.func @fmin(
// CHECK-NOT:     tidu.
// CHECK:         func.call @fmin_k0(
// CHECK-NOT:     tidu.
// CHECK-LABEL: func.func @fmin_k0(
// CHECK:         %a = arith.mulf %x, %y : f64
// CHECK:         %b = arith.minnumf %a, %y : f64
// CHECK-NEXT:    %c = arith.addf %b, %x : f64
func.func @fmin(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %a = tidu.mul %x, %y : tensor<4xf64>
  %b = tidu.fmin %a, %y : tensor<4xf64>
  %c = tidu.add %b, %x : tensor<4xf64>
  func.return %c : tensor<4xf64>
}

// -----

// tidu.mod: its row in a kernel between a mul and an add
// CHECK-LABEL: func.func @mod(
// CHECK-NOT:     tidu.
// CHECK:         func.call @mod_k0(
// CHECK-NOT:     tidu.
// CHECK-LABEL: func.func @mod_k0(
// CHECK:         %a = arith.mulf %x, %y : f32
// CHECK:         llvm.frem
// CHECK:         arith.cmpf olt
// CHECK:         arith.cmpf olt
// CHECK:         arith.cmpf one
// CHECK:         math.copysign
// CHECK:         arith.cmpf oeq
// CHECK:         %b = arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:    %c = arith.addf %b, %x : f32
func.func @mod(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %a = tidu.mul %x, %y : tensor<4xf32>
  %b = tidu.mod %a, %y : tensor<4xf32>
  %c = tidu.add %b, %x : tensor<4xf32>
  func.return %c : tensor<4xf32>
}

// -----

// tidu.sinh on complex values: its row on (re, im) pairs
// CHECK-LABEL: func.func @sinh_complex(
// CHECK-NOT:     tidu.
// CHECK:         func.call @sinh_complex_k0(
// CHECK-NOT:     tidu.
// CHECK-LABEL: func.func @sinh_complex_k0(
// CHECK:         %a_im = arith.addf %{{.*}}, %{{.*}} : f64
// CHECK:         math.absf
// CHECK:         math.exp
// CHECK:         math.log
// CHECK:         arith.cmpf oeq
// CHECK:         arith.cmpf oeq
// CHECK:         arith.cmpf oeq
// CHECK:         arith.cmpf oge
// CHECK:         arith.cmpf oge
// CHECK:         math.exp
// CHECK:         arith.cmpf oge
// CHECK:         math.copysign
// CHECK:         math.absf
// CHECK:         math.exp
// CHECK:         math.exp
// CHECK:         arith.cmpf oge
// CHECK:         math.cos
// CHECK:         %b_re = arith.mulf %{{.*}}, %{{.*}} : f64
// CHECK:         math.sin
// CHECK:         %b_im = arith.mulf %{{.*}}, %{{.*}} : f64
// CHECK-NEXT:    %c_re = arith.addf %b_re, %x_re : f64
// CHECK-NEXT:    %c_im = arith.addf %b_im, %x_im : f64
func.func @sinh_complex(%x: tensor<4xcomplex<f64>>, %y: tensor<4xcomplex<f64>>) -> tensor<4xcomplex<f64>> {
  %a = tidu.mul %x, %y : tensor<4xcomplex<f64>>
  %b = tidu.sinh %a : tensor<4xcomplex<f64>>
  %c = tidu.add %b, %x : tensor<4xcomplex<f64>>
  func.return %c : tensor<4xcomplex<f64>>
}

// -----

// tidu.cosh on complex values: its row on (re, im) pairs
// CHECK-LABEL: func.func @cosh_complex(
// CHECK-NOT:     tidu.
// CHECK:         func.call @cosh_complex_k0(
// CHECK-NOT:     tidu.
// CHECK-LABEL: func.func @cosh_complex_k0(
// CHECK:         %a_im = arith.addf %{{.*}}, %{{.*}} : f64
// CHECK:         math.absf
// CHECK:         math.exp
// CHECK:         math.log
// CHECK:         arith.cmpf oeq
// CHECK:         arith.cmpf oeq
// CHECK:         arith.cmpf oeq
// CHECK:         arith.cmpf oge
// CHECK:         arith.cmpf oge
// CHECK:         math.exp
// CHECK:         arith.cmpf oge
// CHECK:         math.copysign
// CHECK:         math.absf
// CHECK:         math.exp
// CHECK:         math.exp
// CHECK:         arith.cmpf oge
// CHECK:         math.cos
// CHECK:         %b_re = arith.mulf %{{.*}}, %{{.*}} : f64
// CHECK:         math.sin
// CHECK:         %b_im = arith.mulf %{{.*}}, %{{.*}} : f64
// CHECK-NEXT:    %c_re = arith.addf %b_re, %x_re : f64
// CHECK-NEXT:    %c_im = arith.addf %b_im, %x_im : f64
func.func @cosh_complex(%x: tensor<4xcomplex<f64>>, %y: tensor<4xcomplex<f64>>) -> tensor<4xcomplex<f64>> {
  %a = tidu.mul %x, %y : tensor<4xcomplex<f64>>
  %b = tidu.cosh %a : tensor<4xcomplex<f64>>
  %c = tidu.add %b, %x : tensor<4xcomplex<f64>>
  func.return %c : tensor<4xcomplex<f64>>
}
