// RUN: xdsl-opt -p convert-memref-to-ptr-fast %s | filecheck %s

// What xDSL's convert-memref-to-ptr{lower_func=true} gives, op for op: memref
// arguments, call operands and results, and returned memrefs become !ptr_xdsl.ptr
// (with from_ptr/to_ptr casts); a load or store reads its address from the strides;
// an op left dead is erased.
// CHECK-LABEL: func.func @k(%x: !ptr_xdsl.ptr, %y: !ptr_xdsl.ptr, %i: index, %j: index) -> !ptr_xdsl.ptr {
// CHECK-NEXT:    %x_1 = ptr_xdsl.from_ptr %x : !ptr_xdsl.ptr -> memref<8xf64>
// CHECK-NEXT:    %y_1 = ptr_xdsl.from_ptr %y : !ptr_xdsl.ptr -> memref<2x4xf64>
// CHECK-NEXT:    %x_2 = ptr_xdsl.to_ptr %x_1 : memref<8xf64> -> !ptr_xdsl.ptr
// CHECK-NEXT:    %bytes_per_element = ptr_xdsl.type_offset f64 : index
// CHECK-NEXT:    %scaled_pointer_offset = arith.muli %i, %bytes_per_element : index
// CHECK-NEXT:    %offset_pointer = ptr_xdsl.ptradd %x_2, %scaled_pointer_offset : (!ptr_xdsl.ptr, index) -> !ptr_xdsl.ptr
// CHECK-NEXT:    %v = ptr_xdsl.load %offset_pointer : !ptr_xdsl.ptr -> f64
// CHECK-NEXT:    %y_2 = ptr_xdsl.to_ptr %y_1 : memref<2x4xf64> -> !ptr_xdsl.ptr
// CHECK-NEXT:    %pointer_dim_stride = arith.constant 4 : index
// CHECK-NEXT:    %pointer_dim_offset = arith.muli %i, %pointer_dim_stride : index
// CHECK-NEXT:    %pointer_dim_stride_1 = arith.addi %pointer_dim_offset, %j : index
// CHECK-NEXT:    %bytes_per_element_1 = ptr_xdsl.type_offset f64 : index
// CHECK-NEXT:    %scaled_pointer_offset_1 = arith.muli %pointer_dim_stride_1, %bytes_per_element_1 : index
// CHECK-NEXT:    %offset_pointer_1 = ptr_xdsl.ptradd %y_2, %scaled_pointer_offset_1 : (!ptr_xdsl.ptr, index) -> !ptr_xdsl.ptr
// CHECK-NEXT:    ptr_xdsl.store %v, %offset_pointer_1 : f64, !ptr_xdsl.ptr
// CHECK-NEXT:    %y_3 = ptr_xdsl.to_ptr %y_1 : memref<2x4xf64> -> !ptr_xdsl.ptr
// CHECK-NEXT:    %r = func.call @id(%y_3) : (!ptr_xdsl.ptr) -> !ptr_xdsl.ptr
// CHECK-NEXT:    %r_1 = ptr_xdsl.from_ptr %r : !ptr_xdsl.ptr -> memref<2x4xf64>
// CHECK-NEXT:    %r_2 = ptr_xdsl.to_ptr %r_1 : memref<2x4xf64> -> !ptr_xdsl.ptr
// CHECK-NEXT:    func.return %r_2 : !ptr_xdsl.ptr
// CHECK-NEXT:  }
// CHECK-NEXT:  func.func private @id(!ptr_xdsl.ptr) -> !ptr_xdsl.ptr
// CHECK-NOT:   memref.load
// CHECK-NOT:   memref.store
func.func @k(%x: memref<8xf64>, %y: memref<2x4xf64>, %i: index, %j: index) -> memref<2x4xf64> {
  %unused = arith.constant 24 : index
  %v = memref.load %x[%i] : memref<8xf64>
  memref.store %v, %y[%i, %j] : memref<2x4xf64>
  %r = func.call @id(%y) : (memref<2x4xf64>) -> memref<2x4xf64>
  func.return %r : memref<2x4xf64>
}
func.func private @id(memref<2x4xf64>) -> memref<2x4xf64>
