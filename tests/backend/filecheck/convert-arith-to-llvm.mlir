// RUN: xdsl-opt -p convert-arith-to-llvm %s | filecheck %s
// RUN: xdsl-opt -p "convert-arith-to-llvm{contract=false}" %s | filecheck %s --check-prefix=EXACT

// CHECK-LABEL: func.func @float_ops
// CHECK-NEXT:    %0 = llvm.fadd %a, %b {fastmathFlags = #llvm.fastmath<contract>} : f64
// CHECK-NEXT:    %1 = llvm.fsub %0, %b {fastmathFlags = #llvm.fastmath<nnan,contract>} : f64
// CHECK-NEXT:    %2 = llvm.fmul %1, %a {fastmathFlags = #llvm.fastmath<contract>} : f64
// CHECK-NEXT:    %3 = llvm.fdiv %2, %b {fastmathFlags = #llvm.fastmath<contract>} : f64
// CHECK-NEXT:    %4 = llvm.fneg %3 : f64
// CHECK-NEXT:    %5 = llvm.call_intrinsic "llvm.maxnum.f64"(%4, %a) : (f64, f64) -> f64
// CHECK-NEXT:    %6 = llvm.call_intrinsic "llvm.minnum.f64"(%5, %b) : (f64, f64) -> f64
// CHECK-NEXT:    func.return %6 : f64
// EXACT-LABEL: func.func @float_ops
// EXACT-NEXT:    %0 = llvm.fadd %a, %b : f64
// EXACT-NEXT:    %1 = llvm.fsub %0, %b {fastmathFlags = #llvm.fastmath<nnan>} : f64
func.func @float_ops(%a: f64, %b: f64) -> f64 {
  %0 = arith.addf %a, %b : f64
  %1 = arith.subf %0, %b fastmath<nnan> : f64
  %2 = arith.mulf %1, %a : f64
  %3 = arith.divf %2, %b : f64
  %4 = arith.negf %3 : f64
  %5 = arith.maxnumf %4, %a : f64
  %6 = arith.minnumf %5, %b : f64
  func.return %6 : f64
}

// CHECK-LABEL: func.func @int_ops
// CHECK-NEXT:    %0 = llvm.add %a, %b overflow<nsw> : i64
// CHECK-NEXT:    %1 = llvm.sub %0, %b : i64
// CHECK-NEXT:    %2 = llvm.mul %1, %a : i64
// CHECK-NEXT:    %3 = llvm.sdiv %2, %b : i64
// CHECK-NEXT:    %4 = llvm.urem %3, %b : i64
// CHECK-NEXT:    %5 = llvm.and %4, %a : i64
// CHECK-NEXT:    %6 = llvm.or %5, %a : i64
// CHECK-NEXT:    %7 = llvm.xor %6, %a : i64
// CHECK-NEXT:    %8 = llvm.shl %7, %b : i64
// CHECK-NEXT:    %9 = llvm.ashr %8, %b : i64
// CHECK-NEXT:    %10 = llvm.lshr %9, %b : i64
// CHECK-NEXT:    %11 = llvm.icmp "sgt" %10, %a : i64
// CHECK-NEXT:    %12 = llvm.select %11, %10, %a : i1, i64
// CHECK-NEXT:    %13 = llvm.icmp "ult" %12, %b : i64
// CHECK-NEXT:    %14 = llvm.select %13, %12, %b : i1, i64
// CHECK-NEXT:    func.return %14 : i64
func.func @int_ops(%a: i64, %b: i64) -> i64 {
  %0 = arith.addi %a, %b overflow<nsw> : i64
  %1 = arith.subi %0, %b : i64
  %2 = arith.muli %1, %a : i64
  %3 = arith.divsi %2, %b : i64
  %4 = arith.remui %3, %b : i64
  %5 = arith.andi %4, %a : i64
  %6 = arith.ori %5, %a : i64
  %7 = arith.xori %6, %a : i64
  %8 = arith.shli %7, %b : i64
  %9 = arith.shrsi %8, %b : i64
  %10 = arith.shrui %9, %b : i64
  %11 = arith.maxsi %10, %a : i64
  %12 = arith.minui %11, %b : i64
  func.return %12 : i64
}

// cmpf `true`/`false` fold to constants; the other predicates keep their names.
// CHECK-LABEL: func.func @constants_compares
// CHECK-NEXT:    %f = llvm.mlir.constant(2.500000e+00 : f32) : f32
// CHECK-NEXT:    %i = llvm.mlir.constant(-3 : i32) : i32
// CHECK-NEXT:    %t = llvm.mlir.constant(true) : i1
// CHECK-NEXT:    %c = llvm.fcmp "olt" %f, %f : f32
// CHECK-NEXT:    %d = llvm.mlir.constant(true) : i1
// CHECK-NEXT:    %e = llvm.icmp "sge" %i, %i : i32
// CHECK-NEXT:    %s = llvm.select %t, %c, %e : i1, i1
func.func @constants_compares() -> i1 {
  %f = arith.constant 2.5 : f32
  %i = arith.constant -3 : i32
  %t = arith.constant true
  %c = arith.cmpf olt, %f, %f : f32
  %d = arith.cmpf true, %f, %f : f32
  %e = arith.cmpi sge, %i, %i : i32
  %s = arith.select %t, %c, %e : i1
  func.return %s : i1
}

// fptosi goes through the saturating intrinsic; uitofp from i16 through i64.
// CHECK-LABEL: func.func @casts
// CHECK-NEXT:    %0 = llvm.sitofp %i : i32 to f64
// CHECK-NEXT:    %1 = llvm.fptrunc %0 : f64 to f32
// CHECK-NEXT:    %2 = llvm.fpext %1 : f32 to f64
// CHECK-NEXT:    %3 = llvm.call_intrinsic "llvm.fptosi.sat.i64.f64"(%2) : (f64) -> i64
// CHECK-NEXT:    %4 = llvm.trunc %3 : i64 to i32
// CHECK-NEXT:    %5 = llvm.sext %4 : i32 to i64
// CHECK-NEXT:    %6 = llvm.zext %u : i16 to i32
// CHECK-NEXT:    %7 = llvm.zext %u : i16 to i64
// CHECK-NEXT:    %8 = llvm.sitofp %7 : i64 to f32
// CHECK-NEXT:    %9 = llvm.bitcast %x : f64 to i64
// CHECK-NEXT:    func.return %8 : f32
func.func @casts(%x: f64, %i: i32, %u: i16) -> f32 {
  %0 = arith.sitofp %i : i32 to f64
  %1 = arith.truncf %0 : f64 to f32
  %2 = arith.extf %1 : f32 to f64
  %3 = arith.fptosi %2 : f64 to i64
  %4 = arith.trunci %3 : i64 to i32
  %5 = arith.extsi %4 : i32 to i64
  %6 = arith.extui %u : i16 to i32
  %7 = arith.uitofp %u : i16 to f32
  %8 = arith.bitcast %x : f64 to i64
  func.return %7 : f32
}

// maximumf: NaN-propagating, +0 above -0, from compares and selects.
// CHECK-LABEL: func.func @nan_max
// CHECK-NEXT:    %0 = llvm.fcmp "ogt" %a, %b : f64
// CHECK-NEXT:    %1 = llvm.select %0, %a, %b : i1, f64
// CHECK-NEXT:    %2 = llvm.bitcast %a : f64 to i64
// CHECK-NEXT:    %3 = llvm.bitcast %b : f64 to i64
// CHECK-NEXT:    %4 = llvm.and %2, %3 : i64
// CHECK-NEXT:    %5 = llvm.bitcast %4 : i64 to f64
// CHECK-NEXT:    %6 = llvm.fcmp "oeq" %a, %b : f64
// CHECK-NEXT:    %7 = llvm.select %6, %5, %1 : i1, f64
// CHECK-NEXT:    %8 = llvm.fcmp "uno" %a, %b : f64
// CHECK-NEXT:    %9 = llvm.fadd %a, %b : f64
// CHECK-NEXT:    %10 = llvm.select %8, %9, %7 : i1, f64
// CHECK-NEXT:    %11 = llvm.fcmp "olt" %a, %b : f64
// CHECK:         %15 = llvm.or %13, %14 : i64
// CHECK-NOT:   arith.
func.func @nan_max(%a: f64, %b: f64) -> f64 {
  %0 = arith.maximumf %a, %b : f64
  %1 = arith.minimumf %a, %b : f64
  func.return %0 : f64
}
