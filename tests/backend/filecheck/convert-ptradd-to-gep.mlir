// RUN: xdsl-opt -p convert-ptradd-to-gep %s | filecheck %s
// RUN: xdsl-opt -p convert-ptradd-to-gep,convert-ptr-to-llvm,convert-index-to-i64,reconcile-unrealized-casts %s | filecheck %s --check-prefix=CHAIN

// CHECK-LABEL: func.func @load_at
// CHECK-NEXT:    %[[OFF:.*]] = arith.index_cast %off : index to i64
// CHECK-NEXT:    %[[BASE:.*]] = builtin.unrealized_conversion_cast %p : !ptr_xdsl.ptr to !llvm.ptr
// CHECK-NEXT:    %[[GEP:.*]] = llvm.getelementptr inbounds %[[BASE]][%[[OFF]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:    %[[Q:.*]] = builtin.unrealized_conversion_cast %[[GEP]] : !llvm.ptr to !ptr_xdsl.ptr
// CHECK-NEXT:    %v = ptr_xdsl.load %[[Q]] : !ptr_xdsl.ptr -> f64
// An integer offset needs no cast.
// CHECK:         %{{.*}} = llvm.getelementptr inbounds %{{.*}}[%i] : (!llvm.ptr, i32) -> !llvm.ptr, i8
// CHECK-NOT:   ptradd

// After the pointer and index passes, only the GEP remains.
// CHAIN-LABEL: func.func @load_at(%p: !llvm.ptr, %off: i64, %i: i32) -> f64 {
// CHAIN-NEXT:    %q = llvm.getelementptr inbounds %p[%off] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHAIN-NEXT:    %v = llvm.load %q : !llvm.ptr -> f64
func.func @load_at(%p: !ptr_xdsl.ptr, %off: index, %i: i32) -> f64 {
  %q = ptr_xdsl.ptradd %p, %off : (!ptr_xdsl.ptr, index) -> !ptr_xdsl.ptr
  %v = ptr_xdsl.load %q : !ptr_xdsl.ptr -> f64
  %r = ptr_xdsl.ptradd %p, %i : (!ptr_xdsl.ptr, i32) -> !ptr_xdsl.ptr
  func.return %v : f64
}
