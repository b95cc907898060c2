// RUN: xdsl-opt -p "tidu-fuse-elementwise{complex_kernels=true},tidu-lower-to-loops" %s --split-input-file | filecheck %s

// The lowering row of every unary math primitive (passes/tidu_math_lowering.py), fused
// with a neighbour on each side into one kernel: the row's math/llvm ops and compares
// appear in the loop body between the producer's arith.mulf and the consumer's arith.addf.

// tidu.log2: its row in a kernel between a mul and an add
// CHECK-LABEL: func.func @log2(
// CHECK-NOT:     tidu.
// CHECK:         func.call @log2_k0(
// CHECK-NOT:     tidu.
// CHECK-LABEL: func.func @log2_k0(
// CHECK:         %a = arith.mulf %x, %y : f64
// CHECK:         math.log
// CHECK:         %b = arith.mulf %{{.*}}, %{{.*}} : f64
// CHECK-NEXT:    %c = arith.addf %b, %x : f64
func.func @log2(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %a = tidu.mul %x, %y : tensor<4xf64>
  %b = tidu.log2 %a : tensor<4xf64>
  %c = tidu.add %b, %x : tensor<4xf64>
  func.return %c : tensor<4xf64>
}

// -----

// tidu.log10: its row in a kernel between a mul and an add
// CHECK-LABEL: func.func @log10(
// CHECK-NOT:     tidu.
// CHECK:         func.call @log10_k0(
// CHECK-NOT:     tidu.
// CHECK-LABEL: func.func @log10_k0(
// CHECK:         %a = arith.mulf %x, %y : f64
// CHECK:         math.log
// CHECK:         %b = arith.mulf %{{.*}}, %{{.*}} : f64
// CHECK-NEXT:    %c = arith.addf %b, %x : f64
func.func @log10(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %a = tidu.mul %x, %y : tensor<4xf64>
  %b = tidu.log10 %a : tensor<4xf64>
  %c = tidu.add %b, %x : tensor<4xf64>
  func.return %c : tensor<4xf64>
}

// -----

// tidu.exp2: its row in a kernel between a mul and an add
// CHECK-LABEL: func.func @exp2(
// CHECK-NOT:     tidu.
// CHECK:         func.call @exp2_k0(
// CHECK-NOT:     tidu.
// CHECK-LABEL: func.func @exp2_k0(
// CHECK:         %a = arith.mulf %x, %y : f32
// CHECK:         math.fma
// CHECK:         math.fma
// CHECK:         math.exp
// CHECK:         math.fma
// CHECK:         arith.cmpf oeq
// CHECK:         arith.cmpf oeq
// CHECK:         %b = arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:    %c = arith.addf %b, %x : f32
func.func @exp2(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %a = tidu.mul %x, %y : tensor<4xf32>
  %b = tidu.exp2 %a : tensor<4xf32>
  %c = tidu.add %b, %x : tensor<4xf32>
  func.return %c : tensor<4xf32>
}

// -----

// tidu.tan: its row in a kernel between a mul and an add
// CHECK-LABEL: func.func @tan(
// CHECK-NOT:     tidu.
// CHECK:         func.call @tan_k0(
// CHECK-NOT:     tidu.
// CHECK-LABEL: func.func @tan_k0(
// CHECK:         %a = arith.mulf %x, %y : f64
// CHECK:         math.sin
// CHECK:         math.cos
// CHECK:         %b = arith.divf %{{.*}}, %{{.*}} : f64
// CHECK-NEXT:    %c = arith.addf %b, %x : f64
func.func @tan(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %a = tidu.mul %x, %y : tensor<4xf64>
  %b = tidu.tan %a : tensor<4xf64>
  %c = tidu.add %b, %x : tensor<4xf64>
  func.return %c : tensor<4xf64>
}

// -----

// tidu.arcsin: its row in a kernel between a mul and an add
// CHECK-LABEL: func.func @arcsin(
// CHECK-NOT:     tidu.
// CHECK:         func.call @arcsin_k0(
// CHECK-NOT:     tidu.
// CHECK-LABEL: func.func @arcsin_k0(
// CHECK:         %a = arith.mulf %x, %y : f64
// CHECK:         %b = math.asin %a : f64
// CHECK-NEXT:    %c = arith.addf %b, %x : f64
func.func @arcsin(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %a = tidu.mul %x, %y : tensor<4xf64>
  %b = tidu.arcsin %a : tensor<4xf64>
  %c = tidu.add %b, %x : tensor<4xf64>
  func.return %c : tensor<4xf64>
}

// -----

// tidu.arccos: its row in a kernel between a mul and an add
// CHECK-LABEL: func.func @arccos(
// CHECK-NOT:     tidu.
// CHECK:         func.call @arccos_k0(
// CHECK-NOT:     tidu.
// CHECK-LABEL: func.func @arccos_k0(
// CHECK:         %a = arith.mulf %x, %y : f64
// CHECK:         %b = math.acos %a : f64
// CHECK-NEXT:    %c = arith.addf %b, %x : f64
func.func @arccos(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %a = tidu.mul %x, %y : tensor<4xf64>
  %b = tidu.arccos %a : tensor<4xf64>
  %c = tidu.add %b, %x : tensor<4xf64>
  func.return %c : tensor<4xf64>
}

// -----

// tidu.arctan: its row in a kernel between a mul and an add
// CHECK-LABEL: func.func @arctan(
// CHECK-NOT:     tidu.
// CHECK:         func.call @arctan_k0(
// CHECK-NOT:     tidu.
// CHECK-LABEL: func.func @arctan_k0(
// CHECK:         %a = arith.mulf %x, %y : f64
// CHECK:         %b = math.atan %a : f64
// CHECK-NEXT:    %c = arith.addf %b, %x : f64
func.func @arctan(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %a = tidu.mul %x, %y : tensor<4xf64>
  %b = tidu.arctan %a : tensor<4xf64>
  %c = tidu.add %b, %x : tensor<4xf64>
  func.return %c : tensor<4xf64>
}

// -----

// tidu.sinh: its row in a kernel between a mul and an add
// CHECK-LABEL: func.func @sinh(
// CHECK-NOT:     tidu.
// CHECK:         func.call @sinh_k0(
// CHECK-NOT:     tidu.
// CHECK-LABEL: func.func @sinh_k0(
// CHECK:         %a = arith.mulf %x, %y : f32
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
// CHECK:         %b = math.copysign %{{.*}}, %a : f32
// CHECK-NEXT:    %c = arith.addf %b, %x : f32
func.func @sinh(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %a = tidu.mul %x, %y : tensor<4xf32>
  %b = tidu.sinh %a : tensor<4xf32>
  %c = tidu.add %b, %x : tensor<4xf32>
  func.return %c : tensor<4xf32>
}

// -----

// tidu.cosh: its row in a kernel between a mul and an add
// CHECK-LABEL: func.func @cosh(
// CHECK-NOT:     tidu.
// CHECK:         func.call @cosh_k0(
// CHECK-NOT:     tidu.
// CHECK-LABEL: func.func @cosh_k0(
// CHECK:         %a = arith.mulf %x, %y : f64
// CHECK:         math.absf
// CHECK:         math.exp
// CHECK:         math.exp
// CHECK:         arith.cmpf oge
// CHECK:         %b = arith.select %{{.*}}, %{{.*}}, %{{.*}} : f64
// CHECK-NEXT:    %c = arith.addf %b, %x : f64
func.func @cosh(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %a = tidu.mul %x, %y : tensor<4xf64>
  %b = tidu.cosh %a : tensor<4xf64>
  %c = tidu.add %b, %x : tensor<4xf64>
  func.return %c : tensor<4xf64>
}

// -----

// tidu.arcsinh: its row in a kernel between a mul and an add
// CHECK-LABEL: func.func @arcsinh(
// CHECK-NOT:     tidu.
// CHECK:         func.call @arcsinh_k0(
// CHECK-NOT:     tidu.
// CHECK-LABEL: func.func @arcsinh_k0(
// CHECK:         %a = arith.mulf %x, %y : f64
// CHECK:         math.absf
// CHECK:         math.sqrt
// CHECK:         arith.cmpf oge
// CHECK:         math.log
// CHECK:         math.log
// CHECK:         arith.cmpf oeq
// CHECK:         arith.cmpf oeq
// CHECK:         arith.cmpf olt
// CHECK:         %b = math.copysign %{{.*}}, %a : f64
// CHECK-NEXT:    %c = arith.addf %b, %x : f64
func.func @arcsinh(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %a = tidu.mul %x, %y : tensor<4xf64>
  %b = tidu.arcsinh %a : tensor<4xf64>
  %c = tidu.add %b, %x : tensor<4xf64>
  func.return %c : tensor<4xf64>
}

// -----

// tidu.arccosh: its row in a kernel between a mul and an add
// CHECK-LABEL: func.func @arccosh(
// CHECK-NOT:     tidu.
// CHECK:         func.call @arccosh_k0(
// CHECK-NOT:     tidu.
// CHECK-LABEL: func.func @arccosh_k0(
// CHECK:         %a = arith.mulf %x, %y : f32
// CHECK:         math.fma
// CHECK:         math.sqrt
// CHECK:         math.fma
// CHECK:         math.sqrt
// CHECK:         arith.cmpf oge
// CHECK:         math.log
// CHECK:         math.log
// CHECK:         arith.cmpf oeq
// CHECK:         arith.cmpf oeq
// CHECK:         arith.cmpf olt
// CHECK:         arith.cmpf olt
// CHECK:         %b = arith.select %{{.*}}, %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:    %c = arith.addf %b, %x : f32
func.func @arccosh(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %a = tidu.mul %x, %y : tensor<4xf32>
  %b = tidu.arccosh %a : tensor<4xf32>
  %c = tidu.add %b, %x : tensor<4xf32>
  func.return %c : tensor<4xf32>
}

// -----

// tidu.arctanh: its row in a kernel between a mul and an add
// CHECK-LABEL: func.func @arctanh(
// CHECK-NOT:     tidu.
// CHECK:         func.call @arctanh_k0(
// CHECK-NOT:     tidu.
// CHECK-LABEL: func.func @arctanh_k0(
// CHECK:         %a = arith.mulf %x, %y : f64
// CHECK:         math.absf
// CHECK:         arith.cmpf olt
// CHECK:         math.log
// CHECK:         arith.cmpf oeq
// CHECK:         arith.cmpf oeq
// CHECK:         %b = math.copysign %{{.*}}, %a : f64
// CHECK-NEXT:    %c = arith.addf %b, %x : f64
func.func @arctanh(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %a = tidu.mul %x, %y : tensor<4xf64>
  %b = tidu.arctanh %a : tensor<4xf64>
  %c = tidu.add %b, %x : tensor<4xf64>
  func.return %c : tensor<4xf64>
}

// -----

// tidu.sign: its row in a kernel between a mul and an add
// CHECK-LABEL: func.func @sign(
// CHECK-NOT:     tidu.
// CHECK:         func.call @sign_k0(
// CHECK-NOT:     tidu.
// CHECK-LABEL: func.func @sign_k0(
// CHECK:         %a = arith.mulf %x, %y : f64
// CHECK:         arith.cmpf oeq
// CHECK:         arith.cmpf olt
// CHECK:         arith.cmpf ogt
// CHECK:         %b = arith.select %{{.*}}, %{{.*}}, %{{.*}} : f64
// CHECK-NEXT:    %c = arith.addf %b, %x : f64
func.func @sign(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %a = tidu.mul %x, %y : tensor<4xf64>
  %b = tidu.sign %a : tensor<4xf64>
  %c = tidu.add %b, %x : tensor<4xf64>
  func.return %c : tensor<4xf64>
}

// -----

// tidu.floor: its row in a kernel between a mul and an add
// CHECK-LABEL: func.func @floor(
// CHECK-NOT:     tidu.
// CHECK:         func.call @floor_k0(
// CHECK-NOT:     tidu.
// CHECK-LABEL: func.func @floor_k0(
// CHECK:         %a = arith.mulf %x, %y : f64
// CHECK:         %b = math.floor %a : f64
// CHECK-NEXT:    %c = arith.addf %b, %x : f64
func.func @floor(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %a = tidu.mul %x, %y : tensor<4xf64>
  %b = tidu.floor %a : tensor<4xf64>
  %c = tidu.add %b, %x : tensor<4xf64>
  func.return %c : tensor<4xf64>
}

// -----

// tidu.ceil: its row in a kernel between a mul and an add
// CHECK-LABEL: func.func @ceil(
// CHECK-NOT:     tidu.
// CHECK:         func.call @ceil_k0(
// CHECK-NOT:     tidu.
// CHECK-LABEL: func.func @ceil_k0(
// CHECK:         %a = arith.mulf %x, %y : f64
// CHECK:         %b = math.ceil %a : f64
// CHECK-NEXT:    %c = arith.addf %b, %x : f64
func.func @ceil(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %a = tidu.mul %x, %y : tensor<4xf64>
  %b = tidu.ceil %a : tensor<4xf64>
  %c = tidu.add %b, %x : tensor<4xf64>
  func.return %c : tensor<4xf64>
}

// -----

// tidu.round: its row in a kernel between a mul and an add
// CHECK-LABEL: func.func @round(
// CHECK-NOT:     tidu.
// CHECK:         func.call @round_k0(
// CHECK-NOT:     tidu.
// CHECK-LABEL: func.func @round_k0(
// CHECK:         %a = arith.mulf %x, %y : f64
// CHECK:         %b = math.roundeven %a : f64
// CHECK-NEXT:    %c = arith.addf %b, %x : f64
func.func @round(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %a = tidu.mul %x, %y : tensor<4xf64>
  %b = tidu.round %a : tensor<4xf64>
  %c = tidu.add %b, %x : tensor<4xf64>
  func.return %c : tensor<4xf64>
}

// -----

// tidu.trunc: its row in a kernel between a mul and an add
// CHECK-LABEL: func.func @trunc(
// CHECK-NOT:     tidu.
// CHECK:         func.call @trunc_k0(
// CHECK-NOT:     tidu.
// CHECK-LABEL: func.func @trunc_k0(
// CHECK:         %a = arith.mulf %x, %y : f64
// CHECK:         %b = math.trunc %a : f64
// CHECK-NEXT:    %c = arith.addf %b, %x : f64
func.func @trunc(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %a = tidu.mul %x, %y : tensor<4xf64>
  %b = tidu.trunc %a : tensor<4xf64>
  %c = tidu.add %b, %x : tensor<4xf64>
  func.return %c : tensor<4xf64>
}

// -----

// tidu.abs: its row in a kernel between a mul and an add
// CHECK-LABEL: func.func @abs(
// CHECK-NOT:     tidu.
// CHECK:         func.call @abs_k0(
// CHECK-NOT:     tidu.
// CHECK-LABEL: func.func @abs_k0(
// CHECK:         %a = arith.mulf %x, %y : f64
// CHECK:         %b = math.absf %a : f64
// CHECK-NEXT:    %c = arith.addf %b, %x : f64
func.func @abs(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %a = tidu.mul %x, %y : tensor<4xf64>
  %b = tidu.abs %a : tensor<4xf64>
  %c = tidu.add %b, %x : tensor<4xf64>
  func.return %c : tensor<4xf64>
}

// -----

// tidu.sigmoid: its row in a kernel between a mul and an add
// CHECK-LABEL: func.func @sigmoid(
// CHECK-NOT:     tidu.
// CHECK:         func.call @sigmoid_k0(
// CHECK-NOT:     tidu.
// CHECK-LABEL: func.func @sigmoid_k0(
// CHECK:         %a = arith.mulf %x, %y : f64
// CHECK:         math.absf
// CHECK:         math.exp
// CHECK:         arith.cmpf oge
// CHECK:         %b = arith.select %{{.*}}, %{{.*}}, %{{.*}} : f64
// CHECK-NEXT:    %c = arith.addf %b, %x : f64
func.func @sigmoid(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %a = tidu.mul %x, %y : tensor<4xf64>
  %b = tidu.sigmoid %a : tensor<4xf64>
  %c = tidu.add %b, %x : tensor<4xf64>
  func.return %c : tensor<4xf64>
}

// -----

// tidu.relu: its row in a kernel between a mul and an add
// CHECK-LABEL: func.func @relu(
// CHECK-NOT:     tidu.
// CHECK:         func.call @relu_k0(
// CHECK-NOT:     tidu.
// CHECK-LABEL: func.func @relu_k0(
// CHECK:         %a = arith.mulf %x, %y : f64
// CHECK:         %b = arith.maximumf %a, %{{.*}} : f64
// CHECK-NEXT:    %c = arith.addf %b, %x : f64
func.func @relu(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %a = tidu.mul %x, %y : tensor<4xf64>
  %b = tidu.relu %a : tensor<4xf64>
  %c = tidu.add %b, %x : tensor<4xf64>
  func.return %c : tensor<4xf64>
}

// -----

// tidu.erf: its row in a kernel between a mul and an add
// CHECK-LABEL: func.func @erf(
// CHECK-NOT:     tidu.
// CHECK:         func.call @erf_k0(
// CHECK-NOT:     tidu.
// CHECK-LABEL: func.func @erf_k0(
// CHECK:         %a = arith.mulf %x, %y : f64
// CHECK:         %b = math.erf %a : f64
// CHECK-NEXT:    %c = arith.addf %b, %x : f64
func.func @erf(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %a = tidu.mul %x, %y : tensor<4xf64>
  %b = tidu.erf %a : tensor<4xf64>
  %c = tidu.add %b, %x : tensor<4xf64>
  func.return %c : tensor<4xf64>
}

// -----

// tidu.log1p: its row in a kernel between a mul and an add
// CHECK-LABEL: func.func @log1p(
// CHECK-NOT:     tidu.
// CHECK:         func.call @log1p_k0(
// CHECK-NOT:     tidu.
// CHECK-LABEL: func.func @log1p_k0(
// CHECK:         %a = arith.mulf %x, %y : f64
// CHECK:         math.log
// CHECK:         arith.cmpf oeq
// CHECK:         arith.cmpf oeq
// CHECK:         %b = arith.select %{{.*}}, %a, %{{.*}} : f64
// CHECK-NEXT:    %c = arith.addf %b, %x : f64
func.func @log1p(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %a = tidu.mul %x, %y : tensor<4xf64>
  %b = tidu.log1p %a : tensor<4xf64>
  %c = tidu.add %b, %x : tensor<4xf64>
  func.return %c : tensor<4xf64>
}

// -----

// tidu.expm1: its row in a kernel between a mul and an add
// CHECK-LABEL: func.func @expm1(
// CHECK-NOT:     tidu.
// CHECK:         func.call @expm1_k0(
// CHECK-NOT:     tidu.
// CHECK-LABEL: func.func @expm1_k0(
// CHECK:         %a = arith.mulf %x, %y : f64
// CHECK:         math.exp
// CHECK:         math.log
// CHECK:         arith.cmpf oeq
// CHECK:         arith.cmpf oeq
// CHECK:         arith.cmpf oeq
// CHECK:         %b = arith.select %{{.*}}, %a, %{{.*}} : f64
// CHECK-NEXT:    %c = arith.addf %b, %x : f64
func.func @expm1(%x: tensor<4xf64>, %y: tensor<4xf64>) -> tensor<4xf64> {
  %a = tidu.mul %x, %y : tensor<4xf64>
  %b = tidu.expm1 %a : tensor<4xf64>
  %c = tidu.add %b, %x : tensor<4xf64>
  func.return %c : tensor<4xf64>
}
