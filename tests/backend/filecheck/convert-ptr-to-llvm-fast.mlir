// RUN: xdsl-opt -p convert-ptr-to-llvm-fast %s | filecheck %s

// Pointer values, block arguments and signatures become !llvm.ptr in place;
// load/store map 1:1, to_ptr/from_ptr disappear.
// CHECK-LABEL: func.func @copy(%p: !llvm.ptr, %m: memref<4xf64>) -> !llvm.ptr {
// CHECK-NEXT:    %v = llvm.load %p : !llvm.ptr -> f64
// CHECK-NEXT:    %q = llvm.load %p : !llvm.ptr -> !llvm.ptr
// CHECK-NEXT:    llvm.store %v, %q : f64, !llvm.ptr
// CHECK-NEXT:    cf.br ^bb1(%q : !llvm.ptr)
// CHECK-NEXT:  ^bb1(%r: !llvm.ptr):
// CHECK-NEXT:    %c = builtin.unrealized_conversion_cast %r : !llvm.ptr to !llvm.ptr
// CHECK-NEXT:    %t = func.call @id(%c) : (!llvm.ptr) -> !llvm.ptr
// CHECK-NEXT:    func.return %t : !llvm.ptr
// CHECK:       func.func private @id(!llvm.ptr) -> !llvm.ptr
// CHECK-NOT:   ptr_xdsl
func.func @copy(%p: !ptr_xdsl.ptr, %m: memref<4xf64>) -> !ptr_xdsl.ptr {
  %v = ptr_xdsl.load %p : !ptr_xdsl.ptr -> f64
  %q = ptr_xdsl.load %p : !ptr_xdsl.ptr -> !ptr_xdsl.ptr
  %w = ptr_xdsl.from_ptr %q : !ptr_xdsl.ptr -> memref<4xf64>
  %x = ptr_xdsl.to_ptr %w : memref<4xf64> -> !ptr_xdsl.ptr
  ptr_xdsl.store %v, %x : f64, !ptr_xdsl.ptr
  cf.br ^bb1(%x : !ptr_xdsl.ptr)
^bb1(%r: !ptr_xdsl.ptr):
  %c = builtin.unrealized_conversion_cast %r : !ptr_xdsl.ptr to !llvm.ptr
  %t = func.call @id(%c) : (!llvm.ptr) -> !ptr_xdsl.ptr
  func.return %t : !ptr_xdsl.ptr
}
func.func private @id(!llvm.ptr) -> !ptr_xdsl.ptr
