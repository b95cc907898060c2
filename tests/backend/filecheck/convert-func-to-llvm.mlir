// RUN: xdsl-opt -p convert-func-to-llvm %s | filecheck %s
// RUN: xdsl-opt -p "convert-func-to-llvm{noalias=false}" %s | filecheck %s --check-prefix=ALIAS

// Pointer arguments of definitions get llvm.noalias; declarations do not.
// CHECK:       llvm.func @ext(i64) -> f64
// CHECK-LABEL: llvm.func @kernel(%p: !llvm.ptr {llvm.noalias}, %q: !llvm.ptr {llvm.noalias}, %n: i64) -> f64 {
// CHECK-NEXT:    %r = llvm.call @ext(%n) : (i64) -> f64
// CHECK-NEXT:    %u = llvm.call @helper(%p) : (!llvm.ptr) -> f64
// CHECK-NEXT:    llvm.return %r : f64
// CHECK-NEXT:  }
// ALIAS-LABEL: llvm.func @kernel(%p: !llvm.ptr, %q: !llvm.ptr, %n: i64) -> f64 {
func.func private @ext(i64) -> f64

func.func @kernel(%p: !llvm.ptr, %q: !llvm.ptr, %n: i64) -> f64 {
  %r = func.call @ext(%n) : (i64) -> f64
  %u = func.call @helper(%p) : (!llvm.ptr) -> f64
  func.return %r : f64
}

// A private definition becomes internal; existing argument attributes stay.
// CHECK-LABEL: llvm.func internal @helper(%p_1: !llvm.ptr {llvm.nonnull, llvm.noalias}) -> f64 {
// CHECK-NEXT:    %x = llvm.load %p_1 : !llvm.ptr -> f64
// CHECK-NEXT:    llvm.return %x : f64
// CHECK-LABEL: llvm.func @nothing() {
// CHECK-NEXT:    llvm.return
// CHECK-NOT:   func.
func.func private @helper(%p: !llvm.ptr {llvm.nonnull}) -> f64 {
  %x = llvm.load %p : !llvm.ptr -> f64
  func.return %x : f64
}

func.func @nothing() {
  func.return
}
