// RUN: xdsl-opt -p convert-math-to-llvm %s | filecheck %s

// A libm declaration is added once for the functions LLVM has no intrinsic for.
// CHECK:       llvm.func @expm1f(f32) -> f32
// CHECK:       llvm.func @expm1(f64) -> f64
// CHECK-LABEL: func.func @unary
// CHECK-NEXT:    %0 = llvm.call_intrinsic "llvm.exp.f64"(%x) : (f64) -> f64
// CHECK-NEXT:    %1 = llvm.call_intrinsic "llvm.log.f64"(%0) : (f64) -> f64
// CHECK-NEXT:    %2 = llvm.call_intrinsic "llvm.sqrt.f64"(%1) : (f64) -> f64
// CHECK-NEXT:    %3 = llvm.call_intrinsic "llvm.sin.f64"(%2) : (f64) -> f64
// CHECK-NEXT:    %4 = llvm.call_intrinsic "llvm.cos.f64"(%3) : (f64) -> f64
// CHECK-NEXT:    %5 = llvm.call_intrinsic "llvm.tanh.f64"(%4) : (f64) -> f64
// CHECK-NEXT:    %6 = llvm.call_intrinsic "llvm.fabs.f64"(%5) : (f64) -> f64
// CHECK-NEXT:    %7 = llvm.call_intrinsic "llvm.floor.f64"(%6) : (f64) -> f64
// CHECK-NEXT:    %8 = llvm.call_intrinsic "llvm.ceil.f64"(%7) : (f64) -> f64
// CHECK-NEXT:    %9 = llvm.call @expm1(%8) : (f64) -> f64
// CHECK-NEXT:    %10 = llvm.call @expm1(%9) : (f64) -> f64
// CHECK-NEXT:    %11 = llvm.call @expm1f(%y) : (f32) -> f32
// CHECK-NEXT:    %12 = llvm.call_intrinsic "llvm.tanh.f32"(%11) : (f32) -> f32
// CHECK-NEXT:    %13 = llvm.mlir.constant(1.000000e+00 : f64) : f64
// CHECK-NEXT:    %14 = llvm.call_intrinsic "llvm.sqrt.f64"(%10) : (f64) -> f64
// CHECK-NEXT:    %15 = llvm.fdiv %13, %14 : f64
func.func @unary(%x: f64, %y: f32) -> f64 {
  %0 = math.exp %x : f64
  %1 = math.log %0 : f64
  %2 = math.sqrt %1 : f64
  %3 = math.sin %2 : f64
  %4 = math.cos %3 : f64
  %5 = math.tanh %4 : f64
  %6 = math.absf %5 : f64
  %7 = math.floor %6 : f64
  %8 = math.ceil %7 : f64
  %9 = math.expm1 %8 : f64
  %10 = math.expm1 %9 : f64
  %11 = math.expm1 %y : f32
  %12 = math.tanh %11 : f32
  %13 = math.rsqrt %10 : f64
  func.return %13 : f64
}

// CHECK-LABEL: func.func @binary
// CHECK-NEXT:    %0 = llvm.call_intrinsic "llvm.pow.f64"(%x, %y) : (f64, f64) -> f64
// CHECK-NEXT:    %1 = llvm.call_intrinsic "llvm.fma.f64"(%0, %x, %y) : (f64, f64, f64) -> f64
// CHECK-NEXT:    %2 = llvm.call_intrinsic "llvm.copysign.f64"(%1, %y) : (f64, f64) -> f64
// CHECK-NEXT:    %3 = llvm.call_intrinsic "llvm.atan2.f64"(%2, %x) : (f64, f64) -> f64
// CHECK-NEXT:    %4 = llvm.call_intrinsic "llvm.powi.f64.i32"(%3, %k) : (f64, i32) -> f64
// CHECK-NEXT:    %5 = llvm.mlir.constant(false) : i1
// CHECK-NEXT:    %6 = llvm.call_intrinsic "llvm.ctlz.i32"(%k, %5) : (i32, i1) -> i32
// CHECK-NEXT:    %7 = llvm.call_intrinsic "llvm.exp.v4f64"(%v) : (vector<4xf64>) -> vector<4xf64>
// CHECK-NEXT:    %8 = llvm.call_intrinsic "llvm.tanh.v4f64"(%v) : (vector<4xf64>) -> vector<4xf64>
// CHECK-NOT:   math.
func.func @binary(%x: f64, %y: f64, %k: i32, %v: vector<4xf64>) -> f64 {
  %0 = math.powf %x, %y : f64
  %1 = math.fma %0, %x, %y : f64
  %2 = math.copysign %1, %y : f64
  %3 = math.atan2 %2, %x : f64
  %4 = math.fpowi %3, %k : f64, i32
  %5 = math.ctlz %k : i32
  %6 = math.exp %v : vector<4xf64>
  %7 = math.tanh %v : vector<4xf64>
  func.return %4 : f64
}
