// RUN: xdsl-opt -p convert-cf-to-llvm %s | filecheck %s

// Successors and block operands carry over unchanged.
// CHECK-LABEL: func.func @loop
// CHECK-NEXT:    llvm.br ^bb1(%x : f64)
// CHECK-NEXT:  ^bb1(%a: f64):
// CHECK-NEXT:    %c = "test.op"(%a) : (f64) -> i1
// CHECK-NEXT:    llvm.cond_br %c, ^bb1(%a : f64), ^bb2
// CHECK-NEXT:  ^bb2:
// CHECK-NEXT:    func.return %a : f64
// CHECK-NOT:   cf.
func.func @loop(%x: f64) -> f64 {
  cf.br ^bb0(%x : f64)
^bb0(%a: f64):
  %c = "test.op"(%a) : (f64) -> i1
  cf.cond_br %c, ^bb0(%a : f64), ^bb1
^bb1:
  func.return %a : f64
}
