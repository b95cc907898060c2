// RUN: xdsl-opt -p tidu-lower-linalg %s --split-input-file | filecheck %s

// A GP's factor and solves: each op becomes a call of a LAPACK kernel with two
// workspaces (i32 words, word 0 the status; elements), the status named on the call;
// two equal solves share one kernel. A row-major lower Cholesky is potrf('U') (85) of
// the same memory, its strict upper triangle zeroed; a solve of one right-hand side is
// trsv (uplo 'U', 'T' = 84: LAPACK holds Aᵀ), of two trsm from the right ('R' = 82,
// uplo 'U', 'N', 'N', m = k = 2, n = 3, alpha = 1.0 in %fws).
// CHECK-LABEL: func.func @gp(%k: tensor<3x3xf64>, %y: tensor<3x1xf64>, %v: tensor<3x2xf64>)
// CHECK-NEXT:    %0 = bufferization.to_buffer %k read_only : tensor<3x3xf64> to memref<3x3xf64>
// CHECK-NEXT:    %1 = memref.alloc() : memref<3x3xf64>
// CHECK-NEXT:    %2 = memref.alloc() : memref<5xi32>
// CHECK-NEXT:    %3 = memref.alloc() : memref<1xf64>
// CHECK-NEXT:    func.call @gp_lapack0(%0, %1, %2, %3) {tidu.status_output = 1 : i64, tidu.status_error = "cholesky: the matrix is not positive definite (LAPACK potrf info {info})"}
// CHECK-NEXT:    %l = bufferization.to_tensor %1 : memref<3x3xf64> to tensor<3x3xf64>
// CHECK:         func.call @gp_lapack1(%{{.*}}) {tidu.status_output = 1 : i64, tidu.status_error = "singular matrix: resolution failed at diagonal {diagonal}"}
// CHECK:         func.call @gp_lapack1(%{{.*}}) {tidu.status_output = 1 : i64
// CHECK:         func.call @gp_lapack2(%{{.*}}) {tidu.status_output = 1 : i64
// CHECK-NOT:     func.call
// CHECK:       func.func @gp_lapack0(%in0: memref<3x3xf64>, %out0: memref<3x3xf64>, %iws: memref<5xi32>, %fws: memref<1xf64>) attributes {tidu.kernel}
// CHECK:         %[[U:.*]] = arith.constant 85 : i32
// CHECK:         %[[WORDS:.*]] = ptr_xdsl.to_ptr %iws : memref<5xi32> -> !ptr_xdsl.ptr
// CHECK:         ptr_xdsl.store %[[U]], %{{.*}} : i32, !ptr_xdsl.ptr
// CHECK:         scf.for
// CHECK:           ptr_xdsl.load %{{.*}} : !ptr_xdsl.ptr -> f64
// CHECK:         func.call @tidu_lapack_lp64_dpotrf(
// CHECK:         arith.select
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK:             ptr_xdsl.store %{{.*}} : f64, !ptr_xdsl.ptr
// CHECK:       func.func @gp_lapack1(%in0: memref<3x3xf64>, %in1: memref<3x1xf64>, %out0: memref<3x1xf64>, %iws: memref<9xi32>, %fws: memref<1xf64>) attributes {tidu.kernel}
// CHECK-DAG:     arith.constant 84 : i32
// CHECK-DAG:     arith.constant 85 : i32
// CHECK:         arith.cmpf oeq
// CHECK:         func.call @tidu_lapack_lp64_dtrsv(
// CHECK:       func.func @gp_lapack2(%in0: memref<3x3xf64>, %in1: memref<3x2xf64>, %out0: memref<3x2xf64>, %iws: memref<9xi32>, %fws: memref<1xf64>) attributes {tidu.kernel}
// CHECK-DAG:     arith.constant 82 : i32
// CHECK-DAG:     arith.constant 1.000000e+00 : f64
// CHECK:         arith.cmpf oeq
// CHECK:         func.call @tidu_lapack_lp64_dtrsm(
// CHECK-NOT:   func.func @gp_lapack3
// CHECK:       func.func private @tidu_lapack_lp64_dpotrf(!ptr_xdsl.ptr, !ptr_xdsl.ptr, !ptr_xdsl.ptr, !ptr_xdsl.ptr, !ptr_xdsl.ptr) -> ()
// CHECK:       func.func private @tidu_lapack_lp64_dtrsv(
// CHECK:       func.func private @tidu_lapack_lp64_dtrsm(
func.func @gp(%k: tensor<3x3xf64>, %y: tensor<3x1xf64>, %v: tensor<3x2xf64>) -> (tensor<3x1xf64>, tensor<3x1xf64>, tensor<3x2xf64>) {
  %l = tidu.cholesky %k : tensor<3x3xf64> -> tensor<3x3xf64>
  %z = tidu.triangular_solve %l, %y : tensor<3x3xf64>, tensor<3x1xf64> -> tensor<3x1xf64>
  %w = tidu.triangular_solve %l, %y : tensor<3x3xf64>, tensor<3x1xf64> -> tensor<3x1xf64>
  %u = tidu.triangular_solve %l, %v : tensor<3x3xf64>, tensor<3x2xf64> -> tensor<3x2xf64>
  func.return %z, %w, %u : tensor<3x1xf64>, tensor<3x1xf64>, tensor<3x2xf64>
}

// -----

// f32 routines (s*); a batch of two matrices is a loop calling getrf twice; slogdet has
// no status (a singular matrix is sign 0, -inf, as numpy), solve has one (getrf's info)
// and a workspace for the LU copy and B in column-major order (4 + 4x2 elements).
// CHECK-LABEL: func.func @lu(%a: tensor<2x2x2xf32>, %b: tensor<2x2x2xf32>)
// CHECK:         func.call @lu_lapack0(%{{.*}}) : (memref<2x2x2xf32>, memref<2xf32>, memref<2xf32>, memref<6xi32>, memref<4xf32>) -> ()
// CHECK:         func.call @lu_lapack1(%{{.*}}) {tidu.status_output = 1 : i64, tidu.status_error = "Singular matrix"} : (memref<2x2x2xf32>, memref<2x2x2xf32>, memref<2x2x2xf32>, memref<9xi32>, memref<8xf32>) -> ()
// CHECK:       func.func @lu_lapack0(
// CHECK:         scf.for
// CHECK:           func.call @tidu_lapack_lp64_sgetrf(
// CHECK:             math.log
// CHECK:       func.func @lu_lapack1(
// CHECK:           func.call @tidu_lapack_lp64_sgetrf(
// CHECK:           func.call @tidu_lapack_lp64_sgetrs(
func.func @lu(%a: tensor<2x2x2xf32>, %b: tensor<2x2x2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2x2x2xf32>) {
  %s, %d = tidu.slogdet %a : tensor<2x2x2xf32> -> (tensor<2xf32>, tensor<2xf32>)
  %x = tidu.solve %a, %b : tensor<2x2x2xf32>, tensor<2x2x2xf32> -> tensor<2x2x2xf32>
  func.return %s, %d, %x : tensor<2xf32>, tensor<2xf32>, tensor<2x2x2xf32>
}

// -----

// eigh: syevd('V' = 86, 'U') of a copy in %fws (n² + the fixed workspace 1 + 6n + 2n²,
// two slots for the sign rule), iwork 3 + 5n words after the 8 arguments; each
// eigenvector column written out transposed with its largest entry made positive.
// CHECK-LABEL: func.func @spectrum(%a: tensor<2x2xf64>)
// CHECK:         func.call @spectrum_lapack0(%{{.*}}) {tidu.status_output = 2 : i64, tidu.status_error = "Eigenvalues did not converge"} : (memref<2x2xf64>, memref<2xf64>, memref<2x2xf64>, memref<21xi32>, memref<27xf64>) -> ()
// CHECK:       func.func @spectrum_lapack0(
// CHECK:         arith.constant 86 : i32
// CHECK:         func.call @tidu_lapack_lp64_dsyevd(
// CHECK:         scf.for
// CHECK:           math.absf
// CHECK:           arith.cmpf ogt
// CHECK:         func.func private @tidu_lapack_lp64_dsyevd(
func.func @spectrum(%a: tensor<2x2xf64>) -> (tensor<2xf64>, tensor<2x2xf64>) {
  %w, %v = tidu.eigh %a : tensor<2x2xf64> -> (tensor<2xf64>, tensor<2x2xf64>)
  func.return %w, %v : tensor<2xf64>, tensor<2x2xf64>
}

// -----

// Complex qr: zgeqrf + zungqr on pairs of reals. The complex buffers pass as pairs
// through casts, %fws holds 2 x (mn + k + 64 max(m, n)) reals, and each element copied
// in or out (R's lower part zeroed) is its real then its imaginary part, 8 bytes on.
// CHECK-LABEL: func.func @factor(%a: tensor<3x2xcomplex<f64>>)
// CHECK:         %[[A:.*]] = builtin.unrealized_conversion_cast %{{.*}} : memref<3x2xcomplex<f64>> to memref<3x2x2xf64>
// CHECK:         func.call @factor_lapack0(%[[A]], %{{.*}}) : (memref<3x2x2xf64>, memref<3x2x2xf64>, memref<2x2x2xf64>, memref<7xi32>, memref<400xf64>) -> ()
// CHECK:       func.func @factor_lapack0(
// CHECK:         scf.for
// CHECK:           ptr_xdsl.load %{{.*}} : !ptr_xdsl.ptr -> f64
// CHECK:           ptr_xdsl.ptradd %{{.*}}, %{{.*}} : (!ptr_xdsl.ptr, index) -> !ptr_xdsl.ptr
// CHECK:           ptr_xdsl.load %{{.*}} : !ptr_xdsl.ptr -> f64
// CHECK:         func.call @tidu_lapack_lp64_zgeqrf(
// CHECK:             arith.select
// CHECK:             arith.select
// CHECK:         func.call @tidu_lapack_lp64_zungqr(
// CHECK:       func.func private @tidu_lapack_lp64_zgeqrf(
// CHECK:       func.func private @tidu_lapack_lp64_zungqr(
func.func @factor(%a: tensor<3x2xcomplex<f64>>) -> (tensor<3x2xcomplex<f64>>, tensor<2x2xcomplex<f64>>) {
  %q, %r = tidu.qr %a : tensor<3x2xcomplex<f64>> -> (tensor<3x2xcomplex<f64>>, tensor<2x2xcomplex<f64>>)
  func.return %q, %r : tensor<3x2xcomplex<f64>>, tensor<2x2xcomplex<f64>>
}

// -----

// A Cholesky factor's products with a matrix, Lᵀ X and L X: trmm kernels (no
// status), from the right ('R' = 82) on LAPACK's upper-triangular Lᵀ ('U' = 85),
// transposed ('T' = 84) or not ('N' = 78), m = k = 3, n = 4; X L stays a contraction.
// CHECK-LABEL: func.func @products(%a: tensor<4x4xf64>, %x: tensor<4x3xf64>)
// CHECK:         func.call @products_lapack2(%{{.*}}) {tidu.status_output = 1 : i64
// CHECK:         func.call @products_lapack0(%{{.*}}) : (memref<4x4xf64>, memref<4x3xf64>, memref<4x3xf64>, memref<9xi32>, memref<1xf64>) -> ()
// CHECK-NEXT:    %p = bufferization.to_tensor
// CHECK:         func.call @products_lapack1(%{{.*}}) : (memref<4x4xf64>, memref<4x3xf64>, memref<4x3xf64>, memref<9xi32>, memref<1xf64>) -> ()
// CHECK-NEXT:    %q = bufferization.to_tensor
// CHECK-NEXT:    %r = tidu.dot_general %x, %l
// CHECK:       func.func @products_lapack0(
// CHECK-DAG:     arith.constant 84 : i32
// CHECK-DAG:     arith.constant 85 : i32
// CHECK-DAG:     arith.constant 82 : i32
// CHECK:         func.call @tidu_lapack_lp64_dtrmm(
// CHECK:       func.func @products_lapack1(
// CHECK-NOT:     arith.constant 84 : i32
// CHECK:         func.call @tidu_lapack_lp64_dtrmm(
func.func @products(%a: tensor<4x4xf64>, %x: tensor<4x3xf64>) -> (tensor<4x3xf64>, tensor<4x3xf64>, tensor<3x4xf64>) {
  %l = tidu.cholesky %a : tensor<4x4xf64> -> tensor<4x4xf64>
  %p = tidu.dot_general %l, %x, batch = [] x [], contracting = [0] x [0] : tensor<4x4xf64>, tensor<4x3xf64> -> tensor<4x3xf64>
  %q = tidu.dot_general %l, %x, batch = [] x [], contracting = [1] x [0] : tensor<4x4xf64>, tensor<4x3xf64> -> tensor<4x3xf64>
  %r = tidu.dot_general %x, %l, batch = [] x [], contracting = [0] x [0] : tensor<4x3xf64>, tensor<4x4xf64> -> tensor<3x4xf64>
  func.return %p, %q, %r : tensor<4x3xf64>, tensor<4x3xf64>, tensor<3x4xf64>
}

// -----

// Past SOLVE_BLOCK (64) a solve is split in halves: trsm on each diagonal block, a gemm
// update between them (alpha -1.0 in %fws[1]); 130 = 65 + 65, each half 32 + 33.
// CHECK-LABEL: func.func @blocked_lapack0(
// CHECK:         arith.constant -1.000000e+00 : f64
// CHECK:         func.call @tidu_lapack_lp64_dtrsm(
// CHECK:         func.call @tidu_lapack_lp64_dgemm(
// CHECK:         func.call @tidu_lapack_lp64_dtrsm(
// CHECK:         func.call @tidu_lapack_lp64_dgemm(
// CHECK:         func.call @tidu_lapack_lp64_dtrsm(
// CHECK:         func.call @tidu_lapack_lp64_dgemm(
// CHECK:         func.call @tidu_lapack_lp64_dtrsm(
// CHECK-NOT:     func.call
// CHECK:         func.return
func.func @blocked(%l: tensor<130x130xf64>, %b: tensor<130x2xf64>) -> tensor<130x2xf64> {
  %x = tidu.triangular_solve %l, %b unit_diagonal : tensor<130x130xf64>, tensor<130x2xf64> -> tensor<130x2xf64>
  func.return %x : tensor<130x2xf64>
}
