// RUN: xdsl-opt -p "tidu-lower-to-loops{runtime_scales=true}" %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: xdsl-opt -p tidu-lower-to-loops %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=LITERAL

// Two real factors of f32 values: one %params entry each, loaded and rounded to f32
// once, before the loop; the node function passes the constant global.
// CHECK:       "memref.global"() <{sym_name = "mean_k0_params", type = memref<2xf64>, initial_value = dense<[1.250000e-01, 3.000000e+00]> : memref<2xf64>, sym_visibility = "private", constant}>
// CHECK-LABEL: func.func @mean(%x: tensor<8xf32>)
// CHECK-NEXT:    %0 = bufferization.to_buffer %x read_only : tensor<8xf32> to memref<8xf32>
// CHECK-NEXT:    %1 = memref.get_global @mean_k0_params : memref<2xf64>
// CHECK-NEXT:    %2 = memref.alloc() : memref<8xf32>
// CHECK-NEXT:    func.call @mean_k0(%0, %1, %2) : (memref<8xf32>, memref<2xf64>, memref<8xf32>) -> ()
// CHECK-LABEL: func.func @mean_k0(%in0: memref<8xf32> {llvm.noalias}, %params: memref<2xf64> {llvm.noalias}, %out0: memref<8xf32> {llvm.noalias})
// CHECK:         %[[K0:.*]] = memref.load %params[%c0] : memref<2xf64>
// CHECK-NEXT:    %[[F0:.*]] = arith.truncf %[[K0]] : f64 to f32
// CHECK-NEXT:    %[[K1:.*]] = memref.load %params[%c1] : memref<2xf64>
// CHECK-NEXT:    %[[F1:.*]] = arith.truncf %[[K1]] : f64 to f32
// CHECK-NEXT:    scf.for %i0 = %c0 to %c8 step %c1 {
// CHECK-NEXT:      %a = memref.load %in0[%i0] : memref<8xf32>
// CHECK-NEXT:      %s = arith.mulf %a, %[[F0]] : f32
// CHECK-NEXT:      %t = arith.mulf %s, %[[F1]] : f32
// CHECK-NEXT:      memref.store %t, %out0[%i0] : memref<8xf32>
// LITERAL-NOT:   memref.global
// LITERAL-LABEL: func.func @mean_k0(%in0: memref<8xf32> {llvm.noalias}, %out0: memref<8xf32> {llvm.noalias})
// LITERAL:         arith.constant 1.250000e-01 : f32
func.func @mean(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = tidu.kernel ins(%x : tensor<8xf32>) domain [8] maps [[0]] -> [[0]] {
  ^bb0(%a: f32):
    %s = tidu.scale %a, 1.250000e-01 : f32
    %t = tidu.scale %s, 3.000000e+00 : f32
    tidu.yield %t : f32
  } : tensor<8xf32>
  func.return %y : tensor<8xf32>
}

// -----

// A complex factor takes two entries and multiplies as a complex number; a real factor
// of complex values one entry, scaling both parts (as the literal lowering does).
// CHECK:       initial_value = dense<[0.000000e+00, 1.000000e+00, 2.000000e+00]> : memref<3xf64>
// CHECK-LABEL: func.func @rotate_k0(%in0: memref<4x2xf64> {llvm.noalias}, %params: memref<3xf64> {llvm.noalias}, %out0: memref<4x2xf64> {llvm.noalias})
// CHECK:         %[[RE:.*]] = memref.load %params[%c0] : memref<3xf64>
// CHECK-NEXT:    %[[IM:.*]] = memref.load %params[%c1] : memref<3xf64>
// CHECK-NEXT:    %[[K:.*]] = memref.load %params[%c2] : memref<3xf64>
// CHECK:           %[[A:.*]] = arith.mulf %a_re, %[[RE]] : f64
// CHECK-NEXT:      %[[B:.*]] = arith.mulf %a_im, %[[IM]] : f64
// CHECK-NEXT:      %s_re = arith.subf %[[A]], %[[B]] : f64
// CHECK-NEXT:      %[[C:.*]] = arith.mulf %a_re, %[[IM]] : f64
// CHECK-NEXT:      %[[D:.*]] = arith.mulf %a_im, %[[RE]] : f64
// CHECK-NEXT:      %s_im = arith.addf %[[C]], %[[D]] : f64
// CHECK-NEXT:      %t_re = arith.mulf %s_re, %[[K]] : f64
// CHECK-NEXT:      %t_im = arith.mulf %s_im, %[[K]] : f64
func.func @rotate(%z: tensor<4xcomplex<f64>>) -> tensor<4xcomplex<f64>> {
  %y = tidu.kernel ins(%z : tensor<4xcomplex<f64>>) domain [4] maps [[0]] -> [[0]] {
  ^bb0(%a: complex<f64>):
    %s = tidu.scale %a, (0.000000e+00, 1.000000e+00) : complex<f64>
    %t = tidu.scale %s, 2.000000e+00 : complex<f64>
    tidu.yield %t : complex<f64>
  } : tensor<4xcomplex<f64>>
  func.return %y : tensor<4xcomplex<f64>>
}

// -----

// No scale: no %params, no global.
// CHECK-NOT:   memref.global
// CHECK-LABEL: func.func @plain_k0(%in0: memref<4xf64> {llvm.noalias}, %out0: memref<4xf64> {llvm.noalias})
func.func @plain(%x: tensor<4xf64>) -> tensor<4xf64> {
  %y = tidu.kernel ins(%x : tensor<4xf64>) domain [4] maps [[0]] -> [[0]] {
  ^bb0(%a: f64):
    %e = tidu.exp %a : f64
    tidu.yield %e : f64
  } : tensor<4xf64>
  func.return %y : tensor<4xf64>
}
