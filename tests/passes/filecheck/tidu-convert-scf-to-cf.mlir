// RUN: xdsl-opt -p tidu-convert-scf-to-cf %s --split-input-file | filecheck %s

// A while loop with a carried value: the entry branches to the condition block, whose
// cond_br enters the body (forwarding the values) or leaves; the body branches back;
// the loop's result is the value scf.condition forwarded.
// CHECK-LABEL: func.func @count(%init: i64, %n: i64) -> i64
// CHECK-NEXT:    %one = arith.constant 1 : i64
// CHECK-NEXT:    cf.br ^[[BEFORE:.*]](%init : i64)
// CHECK-NEXT:  ^[[BEFORE]](%a: i64):
// CHECK-NEXT:    %c = arith.cmpi slt, %a, %n : i64
// CHECK-NEXT:    cf.cond_br %c, ^[[AFTER:.*]](%a : i64), ^[[EXIT:.*]]
// CHECK-NEXT:  ^[[AFTER]](%b: i64):
// CHECK-NEXT:    %next = arith.addi %b, %one : i64
// CHECK-NEXT:    cf.br ^[[BEFORE]](%next : i64)
// CHECK-NEXT:  ^[[EXIT]]:
// CHECK-NEXT:    func.return %a : i64
// CHECK-NOT:   scf.
func.func @count(%init: i64, %n: i64) -> i64 {
  %one = arith.constant 1 : i64
  %r = scf.while (%a = %init) : (i64) -> i64 {
    %c = arith.cmpi slt, %a, %n : i64
    scf.condition(%c) %a : i64
  } do {
  ^bb0(%b: i64):
    %next = arith.addi %b, %one : i64
    scf.yield %next : i64
  }
  func.return %r : i64
}

// -----

// A while kernel's shape: no loop values, the state in memory, the loop inside an
// scf.for (each row doubled until it reaches 100). Both become branches in one walk:
// the for's condition block, the while's condition and body, the for's step.
// CHECK-LABEL: func.func @rows(%m: memref<4xf64>)
// CHECK:         cf.br ^[[FOR:.*]](%c0 : index)
// CHECK-NEXT:  ^[[FOR]](%i: index):
// CHECK-NEXT:    %[[INSIDE:.*]] = arith.cmpi slt, %i, %c4 : index
// CHECK-NEXT:    cf.cond_br %[[INSIDE]], ^[[ROW:.*]], ^[[DONE:.*]]
// CHECK-NEXT:  ^[[ROW]]:
// CHECK-NEXT:    cf.br ^[[TEST:.*]]
// CHECK-NEXT:  ^[[TEST]]:
// CHECK-NEXT:    %v = memref.load %m[%i] : memref<4xf64>
// CHECK-NEXT:    %big = arith.constant 1.000000e+02 : f64
// CHECK-NEXT:    %c = arith.cmpf olt, %v, %big : f64
// CHECK-NEXT:    cf.cond_br %c, ^[[DOUBLE:.*]], ^[[NEXT:.*]]
// CHECK-NEXT:  ^[[DOUBLE]]:
// CHECK:         memref.store %w, %m[%i] : memref<4xf64>
// CHECK-NEXT:    cf.br ^[[TEST]]
// CHECK-NEXT:  ^[[NEXT]]:
// CHECK-NEXT:    %{{.*}} = arith.addi %i, %c1 : index
// CHECK-NEXT:    cf.br ^[[FOR]](%{{.*}} : index)
// CHECK-NEXT:  ^[[DONE]]:
// CHECK-NEXT:    func.return
// CHECK-NOT:   scf.
func.func @rows(%m: memref<4xf64>) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %c4 step %c1 {
    scf.while () : () -> () {
      %v = memref.load %m[%i] : memref<4xf64>
      %big = arith.constant 1.0e+02 : f64
      %c = arith.cmpf olt, %v, %big : f64
      scf.condition(%c)
    } do {
      %v = memref.load %m[%i] : memref<4xf64>
      %two = arith.constant 2.0 : f64
      %w = arith.mulf %v, %two : f64
      memref.store %w, %m[%i] : memref<4xf64>
      scf.yield
    }
  }
  func.return
}

// -----

// A while nested in a while's body: the outer loop's regions move whole, the inner
// loop's blocks with them.
// CHECK-LABEL: func.func @nested(%n: i64) -> i64
// CHECK-COUNT-2: cf.cond_br
// CHECK-NOT:   scf.
func.func @nested(%n: i64) -> i64 {
  %zero = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %r = scf.while (%a = %zero) : (i64) -> i64 {
    %c = arith.cmpi slt, %a, %n : i64
    scf.condition(%c) %a : i64
  } do {
  ^bb0(%b: i64):
    %inner = scf.while (%x = %b) : (i64) -> i64 {
      %d = arith.cmpi slt, %x, %one : i64
      scf.condition(%d) %x : i64
    } do {
    ^bb1(%y: i64):
      %z = arith.addi %y, %one : i64
      scf.yield %z : i64
    }
    %next = arith.addi %inner, %one : i64
    scf.yield %next : i64
  }
  func.return %r : i64
}
