// RUN: xdsl-opt -p expand-math-polynomials %s | filecheck %s
// RUN: xdsl-opt -p expand-math-polynomials %s | filecheck %s --check-prefix=NONE
// RUN: xdsl-opt -p "expand-math-polynomials{only_in_loops=true}" %s | filecheck %s --check-prefix=LOOPS

// No scalar f32/f64 exp/log/tanh/sin/cos is left, and nothing the vectorizer
// cannot handle is introduced.
// NONE-NOT: {{math\.(exp|log|tanh|sin|cos) .* : f(32|64)$}}
// NONE-NOT: fptosi
// NONE-NOT: scf.if
// NONE-NOT: func.call
// NONE-NOT: memref.

// exp: ordered clamps, shifter rounding, polynomial, 2^n in two factors.
// CHECK-LABEL: func.func @exp_f64
// CHECK:         arith.cmpf ogt, %x
// CHECK-NEXT:    arith.select
// CHECK:         arith.cmpf olt
// CHECK-NEXT:    arith.select
// CHECK:         math.fma
// CHECK:         arith.bitcast %{{.*}} : f64 to i64
// CHECK-NEXT:    arith.constant 4843621399236968448 : i64
// CHECK-NEXT:    arith.subi
// CHECK-COUNT-9: math.fma
// CHECK:         arith.shrsi
// CHECK:         arith.shli
// CHECK:         arith.bitcast %{{.*}} : i64 to f64
// CHECK:         arith.mulf
// CHECK:         arith.bitcast %{{.*}} : i64 to f64
// CHECK-NEXT:    %[[E:.*]] = arith.mulf
// CHECK-NEXT:    func.return %[[E]] : f64
func.func @exp_f64(%x: f64) -> f64 {
  %0 = math.exp %x : f64
  func.return %0 : f64
}

// The f32 variant works on i32 bit patterns.
// CHECK-LABEL: func.func @exp_f32
// CHECK:         arith.bitcast %{{.*}} : f32 to i32
// CHECK:         arith.shli %{{.*}}, %{{.*}} : i32
// CHECK:         func.return %{{.*}} : f32
func.func @exp_f32(%x: f32) -> f32 {
  %0 = math.exp %x : f32
  func.return %0 : f32
}

// log: exponent/mantissa split on the bits, s = f/(2+f), selects for 0, <0, inf.
// CHECK-LABEL: func.func @log_f64
// CHECK:         arith.cmpf olt, %x
// CHECK:         arith.shrsi
// CHECK:         arith.andi
// CHECK:         arith.divf
// CHECK:         arith.cmpf oeq, %x
// CHECK:         arith.cmpf oeq, %x
// CHECK:         arith.cmpf ult, %x
// CHECK:         %[[L:.*]] = arith.select
// CHECK-NEXT:    func.return %[[L]] : f64
func.func @log_f64(%x: f64) -> f64 {
  %0 = math.log %x : f64
  func.return %0 : f64
}

// tanh: |x| by masking the sign, expm1 from exp's polynomial, one division,
// the sign of x OR-ed back in.
// CHECK-LABEL: func.func @tanh_f32
// CHECK:         arith.andi
// CHECK:         arith.cmpf ogt
// CHECK:         arith.divf
// CHECK:         arith.ori
// CHECK-NEXT:    %[[T:.*]] = arith.bitcast %{{.*}} : i32 to f32
// CHECK-NEXT:    func.return %[[T]] : f32
func.func @tanh_f32(%x: f32) -> f32 {
  %0 = math.tanh %x : f32
  func.return %0 : f32
}

// sin and cos: both polynomials, quadrant select, sign flip by xor, NaN out of range.
// CHECK-LABEL: func.func @sin_cos_f64
// CHECK:         arith.cmpi ne
// CHECK:         arith.select
// CHECK:         arith.xori
// CHECK:         arith.cmpf oeq, %x
// CHECK:         arith.cmpf ole
// CHECK:         arith.select
// CHECK:         arith.addi
// CHECK:         arith.xori
// CHECK:         arith.cmpf ole
// CHECK:         func.return
func.func @sin_cos_f64(%x: f64) -> (f64, f64) {
  %0 = math.sin %x : f64
  %1 = math.cos %x : f64
  func.return %0, %1 : f64, f64
}

// Left alone: vectors, f16, and math ops without an expansion.
// CHECK-LABEL: func.func @untouched
// CHECK-NEXT:    %0 = math.exp %v : vector<4xf64>
// CHECK-NEXT:    %1 = math.log %h : f16
// CHECK-NEXT:    %2 = math.sqrt %x : f64
// CHECK-NEXT:    %3 = math.expm1 %x : f64
// CHECK-NEXT:    func.return
func.func @untouched(%v: vector<4xf64>, %h: f16, %x: f64) -> (vector<4xf64>, f16, f64, f64) {
  %0 = math.exp %v : vector<4xf64>
  %1 = math.log %h : f16
  %2 = math.sqrt %x : f64
  %3 = math.expm1 %x : f64
  func.return %0, %1, %2, %3 : vector<4xf64>, f16, f64, f64
}

// With only_in_loops, straight-line math (a 0-d kernel) stays a libm call and math in
// a loop body is expanded.
// LOOPS-LABEL: func.func @scalar_and_loop
// LOOPS:         %e = math.exp %s : f64
// LOOPS:         scf.for
// LOOPS-NOT:       math.exp
// LOOPS:         func.return
func.func @scalar_and_loop(%s: f64) -> f64 {
  %e = math.exp %s : f64
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%acc = %e) -> (f64) {
    %w = math.exp %acc : f64
    scf.yield %w : f64
  }
  func.return %r : f64
}
