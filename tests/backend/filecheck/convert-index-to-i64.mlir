// RUN: xdsl-opt -p convert-index-to-i64 %s | filecheck %s

// Values, block arguments, signatures and constants are retyped in place;
// index_cast becomes nothing, extsi or trunci.
// CHECK-LABEL: func.func @f(%n: i64, %w: i32) -> i32 {
// CHECK-NEXT:    %c8 = arith.constant 8 : i64
// CHECK-NEXT:    %b = arith.muli %n, %c8 : i64
// CHECK-NEXT:    %x = arith.extsi %w : i32 to i64
// CHECK-NEXT:    %s = arith.addi %b, %x : i64
// CHECK-NEXT:    cf.br ^bb1(%s : i64)
// CHECK-NEXT:  ^bb1(%a: i64):
// CHECK-NEXT:    %r = arith.trunci %a : i64 to i32
// CHECK-NEXT:    %k = arith.addi %a, %a : i64
// CHECK-NEXT:    %v = func.call @g(%k) : (i64) -> i64
// CHECK-NEXT:    func.return %r : i32
// CHECK:       func.func private @g(i64) -> i64
// CHECK-NOT:   index
func.func @f(%n: index, %w: i32) -> i32 {
  %c8 = arith.constant 8 : index
  %b = arith.muli %n, %c8 : index
  %x = arith.index_cast %w : i32 to index
  %s = arith.addi %b, %x : index
  cf.br ^bb0(%s : index)
^bb0(%a: index):
  %r = arith.index_cast %a : index to i32
  %i = arith.index_cast %a : index to i64
  %k = arith.addi %i, %i : i64
  %v = func.call @g(%k) : (i64) -> index
  func.return %r : i32
}
func.func private @g(i64) -> index
