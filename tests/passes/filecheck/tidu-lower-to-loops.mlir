// RUN: xdsl-opt -p tidu-lower-to-loops %s --split-input-file --verify-diagnostics | filecheck %s
// RUN: xdsl-opt -p "tidu-lower-to-loops{chunked=true}" %s --split-input-file --verify-diagnostics | filecheck %s --check-prefix=CHUNK

// A row broadcast, a plain result, a column sum and a full sum in one nest.
// CHECK-LABEL: func.func @node(%x: tensor<4x8xf64>, %v: tensor<8xf64>)
// CHECK-NEXT:    %0 = bufferization.to_buffer %x read_only : tensor<4x8xf64> to memref<4x8xf64>
// CHECK-NEXT:    %1 = bufferization.to_buffer %v read_only : tensor<8xf64> to memref<8xf64>
// CHECK-NEXT:    %2 = memref.alloc() : memref<4x8xf64>
// CHECK-NEXT:    %3 = memref.alloc() : memref<8xf64>
// CHECK-NEXT:    %4 = memref.alloc() : memref<f64>
// CHECK-NEXT:    func.call @node_k0(%0, %1, %2, %3, %4) : (memref<4x8xf64>, memref<8xf64>, memref<4x8xf64>, memref<8xf64>, memref<f64>) -> ()
// CHECK-NEXT:    %e = bufferization.to_tensor %2 : memref<4x8xf64> to tensor<4x8xf64>
// CHECK-NEXT:    %c = bufferization.to_tensor %3 : memref<8xf64> to tensor<8xf64>
// CHECK-NEXT:    %f = bufferization.to_tensor %4 : memref<f64> to tensor<f64>
// CHECK-NEXT:    func.return %e, %c, %f
// CHECK-LABEL: func.func @node_k0(%in0: memref<4x8xf64> {llvm.noalias}, %in1: memref<8xf64> {llvm.noalias}, %out0: memref<4x8xf64> {llvm.noalias}, %out1: memref<8xf64> {llvm.noalias}, %out2: memref<f64> {llvm.noalias}) attributes {tidu.kernel} {
// CHECK-NEXT:    %c0 = arith.constant 0 : index
// CHECK-NEXT:    %c8 = arith.constant 8 : index
// CHECK-NEXT:    %c1 = arith.constant 1 : index
// CHECK-NEXT:    %c4 = arith.constant 4 : index
// CHECK-NEXT:    scf.for %i0 = %c0 to %c8 step %c1 {
// CHECK-NEXT:      %[[Z1:.*]] = arith.constant 0.000000e+00 : f64
// CHECK-NEXT:      memref.store %[[Z1]], %out1[%i0] : memref<8xf64>
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[Z2:.*]] = arith.constant 0.000000e+00 : f64
// CHECK-NEXT:    memref.store %[[Z2]], %out2[] : memref<f64>
// CHECK-NEXT:    scf.for %[[I:.*]] = %c0 to %c4 step %c1 {
// CHECK-NEXT:      scf.for %[[J:.*]] = %c0 to %c8 step %c1 {
// CHECK-NEXT:        %a = memref.load %in0[%[[I]], %[[J]]] : memref<4x8xf64>
// CHECK-NEXT:        %b = memref.load %in1[%[[J]]] : memref<8xf64>
// CHECK-NEXT:        %p = arith.mulf %a, %b : f64
// CHECK-NEXT:        %q = math.exp %p : f64
// CHECK-NEXT:        memref.store %q, %out0[%[[I]], %[[J]]] : memref<4x8xf64>
// CHECK-NEXT:        %[[S:.*]] = memref.load %out1[%[[J]]] : memref<8xf64>
// CHECK-NEXT:        %[[T:.*]] = arith.addf %[[S]], %q fastmath<reassoc> : f64
// CHECK-NEXT:        memref.store %[[T]], %out1[%[[J]]] : memref<8xf64>
// CHECK-NEXT:        %[[U:.*]] = memref.load %out2[] : memref<f64>
// CHECK-NEXT:        %[[V:.*]] = arith.addf %[[U]], %p fastmath<reassoc> : f64
// CHECK-NEXT:        memref.store %[[V]], %out2[] : memref<f64>
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return
func.func @node(%x: tensor<4x8xf64>, %v: tensor<8xf64>) -> (tensor<4x8xf64>, tensor<8xf64>, tensor<f64>) {
  %e, %c, %f = tidu.kernel ins(%x, %v : tensor<4x8xf64>, tensor<8xf64>) domain [4, 8] maps [[0, 1], [1]] -> [[0, 1], [1], []] {
  ^bb0(%a: f64, %b: f64):
    %p = tidu.mul %a, %b : f64
    %q = tidu.exp %p : f64
    tidu.yield %q, %q, %p : f64, f64, f64
  } : tensor<4x8xf64>, tensor<8xf64>, tensor<f64>
  func.return %e, %c, %f : tensor<4x8xf64>, tensor<8xf64>, tensor<f64>
}

// -----

// Two kernels around a library call; a value read twice is one to_buffer.
// CHECK-LABEL: func.func @node(%x: tensor<4x8xf32>, %w: tensor<8x3xf32>, %s: tensor<1x3xf32>)
// CHECK-NEXT:    %0 = bufferization.to_buffer %x read_only : tensor<4x8xf32> to memref<4x8xf32>
// CHECK-NEXT:    %1 = memref.alloc() : memref<4x8xf32>
// CHECK-NEXT:    func.call @node_k0(%0, %0, %1)
// CHECK-NEXT:    %h = bufferization.to_tensor %1
// CHECK-NEXT:    %d = tidu.dot_general %h, %w
// CHECK-NEXT:    %2 = bufferization.to_buffer %d read_only : tensor<4x3xf32> to memref<4x3xf32>
// CHECK-NEXT:    %3 = bufferization.to_buffer %s read_only : tensor<1x3xf32> to memref<1x3xf32>
// CHECK-NEXT:    %4 = memref.alloc() : memref<4x3xf32>
// CHECK-NEXT:    func.call @node_k1(%2, %3, %4) : (memref<4x3xf32>, memref<1x3xf32>, memref<4x3xf32>) -> ()
// CHECK-NEXT:    %r = bufferization.to_tensor %4 : memref<4x3xf32> to tensor<4x3xf32>
// CHECK-NEXT:    func.return %r
// CHECK-LABEL: func.func @node_k0(
// CHECK:           %t = arith.mulf %a, %b : f32
// CHECK-LABEL: func.func @node_k1(%in0: memref<4x3xf32> {llvm.noalias}, %in1: memref<1x3xf32> {llvm.noalias}, %out0: memref<4x3xf32> {llvm.noalias})
// CHECK:           %b = memref.load %in1[%c0, %i1] : memref<1x3xf32>
// CHECK-NEXT:      %t = math.tanh %a : f32
// CHECK-NEXT:      %u = arith.addf %t, %b : f32
// CHECK-NEXT:      memref.store %u, %out0[%i0, %i1] : memref<4x3xf32>
func.func @node(%x: tensor<4x8xf32>, %w: tensor<8x3xf32>, %s: tensor<1x3xf32>) -> tensor<4x3xf32> {
  %h = tidu.kernel ins(%x, %x : tensor<4x8xf32>, tensor<4x8xf32>) domain [4, 8] maps [[0, 1], [0, 1]] -> [[0, 1]] {
  ^bb0(%a: f32, %b: f32):
    %t = tidu.mul %a, %b : f32
    tidu.yield %t : f32
  } : tensor<4x8xf32>
  %d = tidu.dot_general %h, %w, batch = [] x [], contracting = [1] x [0] : tensor<4x8xf32>, tensor<8x3xf32> -> tensor<4x3xf32>
  %r = tidu.kernel ins(%d, %s : tensor<4x3xf32>, tensor<1x3xf32>) domain [4, 3] maps [[0, 1], [-1, 1]] -> [[0, 1]] {
  ^bb0(%a: f32, %b: f32):
    %t = tidu.tanh %a : f32
    %u = tidu.add %t, %b : f32
    tidu.yield %u : f32
  } : tensor<4x3xf32>
  func.return %r : tensor<4x3xf32>
}

// -----

// A 0-d kernel has no loops.
// CHECK-LABEL: func.func @scalar_k0(%in0: memref<f64> {llvm.noalias}, %out0: memref<f64> {llvm.noalias}) attributes {tidu.kernel} {
// CHECK-NEXT:    %a = memref.load %in0[] : memref<f64>
// CHECK-NEXT:    %l = math.log %a : f64
// CHECK-NEXT:    memref.store %l, %out0[] : memref<f64>
// CHECK-NEXT:    func.return
func.func @scalar(%x: tensor<f64>) -> tensor<f64> {
  %r = tidu.kernel ins(%x : tensor<f64>) domain [] maps [[]] -> [[]] {
  ^bb0(%a: f64):
    %l = tidu.log %a : f64
    tidu.yield %l : f64
  } : tensor<f64>
  func.return %r : tensor<f64>
}

// -----

// The scalar table: pow special cases, scale, shift, compare, select, convert.
// CHECK-LABEL: func.func @table_k0(
// CHECK:           %a = memref.load %in0[%i0] : memref<4xf32>
// CHECK-NEXT:      %b = memref.load %in1[%i0] : memref<4xi1>
// CHECK-NEXT:      %p2 = arith.mulf %a, %a : f32
// CHECK-NEXT:      %ph = math.sqrt %a : f32
// CHECK-NEXT:      %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:      %pm = arith.divf %[[ONE]], %a : f32
// CHECK-NEXT:      %[[X2:.*]] = arith.mulf %a, %a : f32
// CHECK-NEXT:      %[[X4:.*]] = arith.mulf %[[X2]], %[[X2]] : f32
// CHECK-NEXT:      %p5 = arith.mulf %a, %[[X4]] : f32
// CHECK-NEXT:      %[[E:.*]] = arith.constant 1.500000e+00 : f32
// CHECK-NEXT:      %pg = math.powf %a, %[[E]] : f32
// CHECK-NEXT:      %p0 = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:      %[[K:.*]] = arith.constant 3.000000e+00 : f32
// CHECK-NEXT:      %sc = arith.mulf %p2, %[[K]] : f32
// CHECK-NEXT:      %[[M:.*]] = arith.constant -1.000000e+00 : f32
// CHECK-NEXT:      %sh = arith.addf %sc, %[[M]] : f32
// CHECK-NEXT:      %lt = arith.cmpf une, %sh, %ph : f32
// CHECK-NEXT:      %se = arith.select %b, %pm, %p5 : f32
// CHECK-NEXT:      %mx = arith.maximumf %se, %pg : f32
// CHECK-NEXT:      %ad = arith.addf %mx, %p0 : f32
// CHECK-NEXT:      %cv = arith.extf %ad : f32 to f64
// CHECK-NEXT:      %cb = arith.uitofp %b : i1 to f64
// CHECK-NEXT:      %su = arith.subf %cv, %cb : f64
// CHECK-NEXT:      memref.store %su, %out0[%i0] : memref<4xf64>
// CHECK-NEXT:      memref.store %lt, %out1[%i0] : memref<4xi1>
func.func @table(%x: tensor<4xf32>, %m: tensor<4xi1>) -> (tensor<4xf64>, tensor<4xi1>) {
  %r, %k = tidu.kernel ins(%x, %m : tensor<4xf32>, tensor<4xi1>) domain [4] maps [[0], [0]] -> [[0], [0]] {
  ^bb0(%a: f32, %b: i1):
    %p2 = tidu.pow %a, 2.000000e+00 : f32
    %ph = tidu.pow %a, 5.000000e-01 : f32
    %pm = tidu.pow %a, -1.000000e+00 : f32
    %p5 = tidu.pow %a, 5.000000e+00 : f32
    %pg = tidu.pow %a, 1.500000e+00 : f32
    %p0 = tidu.pow %a, 0.000000e+00 : f32
    %sc = tidu.scale %p2, 3.000000e+00 : f32
    %sh = tidu.shift %sc, -1.000000e+00 : f32
    %lt = tidu.compare ne, %sh, %ph : f32
    %se = tidu.select %b, %pm, %p5 : f32
    %mx = tidu.maximum %se, %pg : f32
    %ad = tidu.add %mx, %p0 : f32
    %cv = tidu.convert %ad : f32 -> f64
    %cb = tidu.convert %b : i1 -> f64
    %su = tidu.sub %cv, %cb : f64
    tidu.yield %su, %lt : f64, i1
  } : tensor<4xf64>, tensor<4xi1>
  func.return %r, %k : tensor<4xf64>, tensor<4xi1>
}

// -----

// An op without a row in the table.
// CHECK: tidu-lower-to-loops: cannot lower 'arith.addf': no scalar lowering rule for this op in a tidu.kernel body
func.func @no_rule(%x: tensor<4xf64>) -> tensor<4xf64> {
  %r = tidu.kernel ins(%x : tensor<4xf64>) domain [4] maps [[0]] -> [[0]] {
  ^bb0(%a: f64):
    %z = arith.addf %a, %a : f64
    tidu.yield %z : f64
  } : tensor<4xf64>
  func.return %r : tensor<4xf64>
}

// -----

// A complex op without a row in the complex table.
// CHECK: tidu-lower-to-loops: cannot lower 'tidu.sqrt': no lowering rule for complex scalars in a tidu.kernel body
func.func @complex_no_rule(%z: tensor<4xcomplex<f64>>) -> tensor<4xcomplex<f64>> {
  %r = tidu.kernel ins(%z : tensor<4xcomplex<f64>>) domain [4] maps [[0]] -> [[0]] {
  ^bb0(%a: complex<f64>):
    %c = tidu.sqrt %a : complex<f64>
    tidu.yield %c : complex<f64>
  } : tensor<4xcomplex<f64>>
  func.return %r : tensor<4xcomplex<f64>>
}

// -----

// Complex values are (re, im) pairs: memref<...x2xfN> arguments, cast in @node.
// CHECK-LABEL: func.func @complex(%z: tensor<4xcomplex<f32>>, %x: tensor<4xf32>)
// CHECK-NEXT:    %0 = bufferization.to_buffer %z read_only : tensor<4xcomplex<f32>> to memref<4xcomplex<f32>>
// CHECK-NEXT:    %1 = builtin.unrealized_conversion_cast %0 : memref<4xcomplex<f32>> to memref<4x2xf32>
// CHECK-NEXT:    %2 = bufferization.to_buffer %x read_only : tensor<4xf32> to memref<4xf32>
// CHECK-NEXT:    %3 = memref.alloc() : memref<4xcomplex<f32>>
// CHECK-NEXT:    %4 = builtin.unrealized_conversion_cast %3 : memref<4xcomplex<f32>> to memref<4x2xf32>
// CHECK-NEXT:    %5 = memref.alloc() : memref<complex<f32>>
// CHECK-NEXT:    %6 = builtin.unrealized_conversion_cast %5 : memref<complex<f32>> to memref<2xf32>
// CHECK-NEXT:    func.call @complex_k0(%1, %2, %4, %6) : (memref<4x2xf32>, memref<4xf32>, memref<4x2xf32>, memref<2xf32>) -> ()
// CHECK-NEXT:    %r = bufferization.to_tensor %3 : memref<4xcomplex<f32>> to tensor<4xcomplex<f32>>
// CHECK-NEXT:    %s = bufferization.to_tensor %5 : memref<complex<f32>> to tensor<complex<f32>>
// CHECK-NEXT:    func.return %r, %s
// CHECK-LABEL: func.func @complex_k0(%in0: memref<4x2xf32> {llvm.noalias}, %in1: memref<4xf32> {llvm.noalias}, %out0: memref<4x2xf32> {llvm.noalias}, %out1: memref<2xf32> {llvm.noalias})
// CHECK:         %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    memref.store %[[Z]], %out1[%c0] : memref<2xf32>
// CHECK-NEXT:    %[[ZI:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    memref.store %[[ZI]], %out1[%c1] : memref<2xf32>
// CHECK-NEXT:    scf.for %i0 = %c0 to %c4 step %c1 {
// CHECK-NEXT:      %a_re = memref.load %in0[%i0, %c0] : memref<4x2xf32>
// CHECK-NEXT:      %a_im = memref.load %in0[%i0, %c1] : memref<4x2xf32>
// CHECK-NEXT:      %b = memref.load %in1[%i0] : memref<4xf32>
// CHECK-NEXT:      %c_im = arith.negf %a_im : f32
// CHECK-NEXT:      %w_im = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %[[P:.*]] = arith.mulf %a_re, %b : f32
// CHECK-NEXT:      %[[Q:.*]] = arith.mulf %c_im, %w_im : f32
// CHECK-NEXT:      %m_re = arith.subf %[[P]], %[[Q]] : f32
// CHECK-NEXT:      %[[R:.*]] = arith.mulf %a_re, %w_im : f32
// CHECK-NEXT:      %[[S:.*]] = arith.mulf %c_im, %b : f32
// CHECK-NEXT:      %m_im = arith.addf %[[R]], %[[S]] : f32
// CHECK-NEXT:      memref.store %m_re, %out0[%i0, %c0] : memref<4x2xf32>
// CHECK-NEXT:      memref.store %m_im, %out0[%i0, %c1] : memref<4x2xf32>
// CHECK-NEXT:      %[[T:.*]] = memref.load %out1[%c0] : memref<2xf32>
// CHECK-NEXT:      %[[V:.*]] = memref.load %out1[%c1] : memref<2xf32>
// CHECK-NEXT:      %[[U:.*]] = arith.addf %[[T]], %m_re fastmath<reassoc> : f32
// CHECK-NEXT:      %[[W:.*]] = arith.addf %[[V]], %m_im fastmath<reassoc> : f32
// CHECK-NEXT:      memref.store %[[U]], %out1[%c0] : memref<2xf32>
// CHECK-NEXT:      memref.store %[[W]], %out1[%c1] : memref<2xf32>
func.func @complex(%z: tensor<4xcomplex<f32>>, %x: tensor<4xf32>) -> (tensor<4xcomplex<f32>>, tensor<complex<f32>>) {
  %r, %s = tidu.kernel ins(%z, %x : tensor<4xcomplex<f32>>, tensor<4xf32>) domain [4] maps [[0], [0]] -> [[0], []] {
  ^bb0(%a: complex<f32>, %b: f32):
    %c = tidu.conj %a : complex<f32>
    %w = tidu.to_complex %b : f32
    %m = tidu.mul %c, %w : complex<f32>
    tidu.yield %m, %m : complex<f32>, complex<f32>
  } : tensor<4xcomplex<f32>>, tensor<complex<f32>>
  func.return %r, %s : tensor<4xcomplex<f32>>, tensor<complex<f32>>
}

// -----

// Chunked: the kernel takes rows [lo, hi) of domain dim 0. A result indexed by dim 0
// (a row sum) is zeroed only on the chunk's rows; a result summed over dim 0 (a column
// sum) is a private partial buffer of the chunk, zeroed whole, and listed in
// tidu.partial_outputs of the call.
// CHUNK-LABEL: func.func @rows(%x: tensor<6x5xf64>)
// CHUNK:         %[[LO:.*]] = arith.constant 0 : index
// CHUNK-NEXT:    %[[HI:.*]] = arith.constant 6 : index
// CHUNK-NEXT:    func.call @rows_k0(%0, %1, %2, %[[LO]], %[[HI]]) {tidu.chunk_extent = 6 : i64, tidu.domain_size = 30 : i64, tidu.partial_outputs = [1 : i64]}
// CHUNK-LABEL: func.func @rows_k0(%in0: memref<6x5xf64> {llvm.noalias}, %out0: memref<6xf64> {llvm.noalias}, %out1: memref<5xf64> {llvm.noalias}, %lo: index, %hi: index)
// CHUNK:         scf.for %i0 = %lo to %hi step %c1 {
// CHUNK-NEXT:      %[[Z:.*]] = arith.constant 0.000000e+00 : f64
// CHUNK-NEXT:      memref.store %[[Z]], %out0[%i0] : memref<6xf64>
// CHUNK-NEXT:    }
// CHUNK-NEXT:    scf.for %i0_1 = %c0 to %c5 step %c1 {
// CHUNK-NEXT:      %[[Z2:.*]] = arith.constant 0.000000e+00 : f64
// CHUNK-NEXT:      memref.store %[[Z2]], %out1[%i0_1] : memref<5xf64>
// CHUNK-NEXT:    }
// CHUNK-NEXT:    scf.for %[[I:.*]] = %lo to %hi step %c1 {
// CHUNK-NEXT:      scf.for %[[J:.*]] = %c0 to %c5 step %c1 {
func.func @rows(%x: tensor<6x5xf64>) -> (tensor<6xf64>, tensor<5xf64>) {
  %r, %c = tidu.kernel ins(%x : tensor<6x5xf64>) domain [6, 5] maps [[0, 1]] -> [[0], [1]] {
  ^bb0(%a: f64):
    %e = tidu.exp %a : f64
    tidu.yield %e, %e : f64, f64
  } : tensor<6xf64>, tensor<5xf64>
  func.return %r, %c : tensor<6xf64>, tensor<5xf64>
}

// -----

// A triangle_part in the body selects by the last two iteration indices: the
// element where j - i <= offset (>= when upper), else 0; a complex one on both parts.
// CHECK-LABEL: func.func @triangle_k0(%in0: memref<3x3xf64> {llvm.noalias}, %in1: memref<3x3x2xf64> {llvm.noalias}, %out0: memref<3x3xf64> {llvm.noalias}, %out1: memref<3x3x2xf64> {llvm.noalias})
// CHECK:         %c-1 = arith.constant -1 : index
// CHECK:         scf.for %[[I:.*]] = %c0 to %c3 step %c1 {
// CHECK-NEXT:      scf.for %[[J:.*]] = %c0 to %c3 step %c1 {
// CHECK-NEXT:        %a = memref.load %in0[%[[I]], %[[J]]] : memref<3x3xf64>
// CHECK:             %[[D:.*]] = arith.subi %[[J]], %[[I]] : index
// CHECK-NEXT:        %[[K:.*]] = arith.cmpi sle, %[[D]], %c-1 : index
// CHECK-NEXT:        %[[Z:.*]] = arith.constant 0.000000e+00 : f64
// CHECK-NEXT:        %l = arith.select %[[K]], %a, %[[Z]] : f64
// CHECK:             %[[D2:.*]] = arith.subi %[[J]], %[[I]] : index
// CHECK-NEXT:        %[[K2:.*]] = arith.cmpi sge, %[[D2]], %c1 : index
// CHECK-NEXT:        %[[Z2:.*]] = arith.constant 0.000000e+00 : f64
// CHECK-NEXT:        %u_re = arith.select %[[K2]], %z_re, %[[Z2]] : f64
// CHECK-NEXT:        %[[Z3:.*]] = arith.constant 0.000000e+00 : f64
// CHECK-NEXT:        %u_im = arith.select %[[K2]], %z_im, %[[Z3]] : f64
func.func @triangle(%x: tensor<3x3xf64>, %w: tensor<3x3xcomplex<f64>>) -> (tensor<3x3xf64>, tensor<3x3xcomplex<f64>>) {
  %l, %u = tidu.kernel ins(%x, %w : tensor<3x3xf64>, tensor<3x3xcomplex<f64>>) domain [3, 3] maps [[0, 1], [0, 1]] -> [[0, 1], [0, 1]] {
  ^bb0(%a: f64, %z: complex<f64>):
    %l_1 = tidu.triangle_part %a, offset = -1 : f64 -> f64
    %u_1 = tidu.triangle_part %z, offset = 1 upper : complex<f64> -> complex<f64>
    tidu.yield %l_1, %u_1 : f64, complex<f64>
  } : tensor<3x3xf64>, tensor<3x3xcomplex<f64>>
  func.return %l, %u : tensor<3x3xf64>, tensor<3x3xcomplex<f64>>
}
