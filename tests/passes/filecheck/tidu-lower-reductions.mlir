// RUN: xdsl-opt -p tidu-lower-to-loops %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: xdsl-opt -p "tidu-lower-to-loops{chunked=true}" %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=CHUNK

// A max over dim 1 starts each row at -inf and takes arith.maximumf (NaN-propagating);
// a min over dim 0 of f32 starts at +inf. Chunked, the min over dim 0 is a private
// partial result of each chunk (started whole), combined by min after the threads;
// the max keeps the chunk's own rows.
// CHECK-LABEL: func.func @extrema_k0(
// CHECK:         scf.for %i0 = %c0 to %c4 step %c1 {
// CHECK-NEXT:      %[[NINF:.*]] = arith.constant 0xfff0000000000000 : f64
// CHECK-NEXT:      memref.store %[[NINF]], %out0[%i0] : memref<4xf64>
// CHECK:           %[[INF:.*]] = arith.constant 0x7f800000 : f32
// CHECK-NEXT:      memref.store %[[INF]], %out1[%{{.*}}] : memref<8xf32>
// CHECK:             %e = math.exp %a : f64
// CHECK-NEXT:        %[[M:.*]] = memref.load %out0[%[[I:.*]]] : memref<4xf64>
// CHECK-NEXT:        %[[M2:.*]] = arith.maximumf %[[M]], %e : f64
// CHECK-NEXT:        memref.store %[[M2]], %out0[%[[I]]] : memref<4xf64>
// CHECK-NEXT:        %[[N:.*]] = memref.load %out1[%[[J:.*]]] : memref<8xf32>
// CHECK-NEXT:        %[[N2:.*]] = arith.minimumf %[[N]], %b : f32
// CHECK-NEXT:        memref.store %[[N2]], %out1[%[[J]]] : memref<8xf32>
// CHUNK:         func.call @extrema_k0({{.*}}) {tidu.chunk_extent = 4 : i64, tidu.domain_size = 32 : i64, tidu.partial_outputs = [1 : i64], tidu.partial_combiners = ["min"]}
// CHUNK-LABEL: func.func @extrema_k0(
// CHUNK:         scf.for %i0 = %lo to %hi step %c1 {
// CHUNK-NEXT:      arith.constant 0xfff0000000000000 : f64
// CHUNK:         scf.for %{{.*}} = %c0 to %c8 step %c1 {
// CHUNK-NEXT:      arith.constant 0x7f800000 : f32
func.func @extrema(%x: tensor<4x8xf64>, %f: tensor<4x8xf32>) -> (tensor<4xf64>, tensor<8xf32>) {
  %m, %n = tidu.kernel ins(%x, %f : tensor<4x8xf64>, tensor<4x8xf32>) domain [4, 8] maps [[0, 1], [0, 1]] -> [[0] max, [1] min] {
  ^bb0(%a: f64, %b: f32):
    %e = tidu.exp %a : f64
    tidu.yield %e, %b : f64, f32
  } : tensor<4xf64>, tensor<8xf32>
  func.return %m, %n : tensor<4xf64>, tensor<8xf32>
}

// -----

// any and all of i1 values: or from false, and from true.
// CHECK-LABEL: func.func @truth_k0(
// CHECK:           %[[F:.*]] = arith.constant false
// CHECK-NEXT:      memref.store %[[F]], %out0[%i0] : memref<8xi1>
// CHECK:         %[[T:.*]] = arith.constant true
// CHECK-NEXT:    memref.store %[[T]], %out1[] : memref<i1>
// CHECK:             %nz = arith.cmpf une, %a, %z : f64
// CHECK-NEXT:        %[[A:.*]] = memref.load %out0[%i1] : memref<8xi1>
// CHECK-NEXT:        %[[A2:.*]] = arith.ori %[[A]], %nz : i1
// CHECK-NEXT:        memref.store %[[A2]], %out0[%i1] : memref<8xi1>
// CHECK-NEXT:        %[[B:.*]] = memref.load %out1[] : memref<i1>
// CHECK-NEXT:        %[[B2:.*]] = arith.andi %[[B]], %nz : i1
// CHECK-NEXT:        memref.store %[[B2]], %out1[] : memref<i1>
// CHUNK:         tidu.partial_outputs = [0 : i64, 1 : i64], tidu.partial_combiners = ["max", "min"]
func.func @truth(%x: tensor<4x8xf64>) -> (tensor<8xi1>, tensor<i1>) {
  %any, %all = tidu.kernel ins(%x : tensor<4x8xf64>) domain [4, 8] maps [[0, 1]] -> [[1] max, [] min] {
  ^bb0(%a: f64):
    %z = tidu.constant 0.000000e+00 : f64
    %nz = tidu.compare ne, %a, %z : f64
    tidu.yield %nz, %nz : i1, i1
  } : tensor<8xi1>, tensor<i1>
  func.return %any, %all : tensor<8xi1>, tensor<i1>
}

// -----

// Products from 1 (a complex one from (1, 0)), the complex one by the textbook formula.
// CHECK-LABEL: func.func @products_k0(
// CHECK:         %[[ONE:.*]] = arith.constant 1.000000e+00 : f64
// CHECK-NEXT:    memref.store %[[ONE]], %out0[] : memref<f64>
// CHECK-NEXT:    %[[RE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    memref.store %[[RE]], %out1[%c0] : memref<2xf32>
// CHECK-NEXT:    %[[IM:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    memref.store %[[IM]], %out1[%c1] : memref<2xf32>
// CHECK:           %[[P:.*]] = memref.load %out0[] : memref<f64>
// CHECK-NEXT:      %[[P2:.*]] = arith.mulf %[[P]], %a : f64
// CHECK-NEXT:      memref.store %[[P2]], %out0[] : memref<f64>
// CHECK-NEXT:      %[[QR:.*]] = memref.load %out1[%c0] : memref<2xf32>
// CHECK-NEXT:      %[[QI:.*]] = memref.load %out1[%c1] : memref<2xf32>
// CHECK-NEXT:      %[[RR:.*]] = arith.mulf %[[QR]], %c_re : f32
// CHECK-NEXT:      %[[II:.*]] = arith.mulf %[[QI]], %c_im : f32
// CHECK-NEXT:      %[[R:.*]] = arith.subf %[[RR]], %[[II]] : f32
// CHECK-NEXT:      %[[RI:.*]] = arith.mulf %[[QR]], %c_im : f32
// CHECK-NEXT:      %[[IR:.*]] = arith.mulf %[[QI]], %c_re : f32
// CHECK-NEXT:      %[[I:.*]] = arith.addf %[[RI]], %[[IR]] : f32
// CHECK-NEXT:      memref.store %[[R]], %out1[%c0] : memref<2xf32>
// CHECK-NEXT:      memref.store %[[I]], %out1[%c1] : memref<2xf32>
// CHUNK:         tidu.partial_outputs = [0 : i64, 1 : i64], tidu.partial_combiners = ["mul", "mul"]
func.func @products(%x: tensor<6xf64>, %z: tensor<6xcomplex<f32>>) -> (tensor<f64>, tensor<complex<f32>>) {
  %p, %q = tidu.kernel ins(%x, %z : tensor<6xf64>, tensor<6xcomplex<f32>>) domain [6] maps [[0], [0]] -> [[] mul, [] mul] {
  ^bb0(%a: f64, %c: complex<f32>):
    tidu.yield %a, %c : f64, complex<f32>
  } : tensor<f64>, tensor<complex<f32>>
  func.return %p, %q : tensor<f64>, tensor<complex<f32>>
}
