func.func @w1(%x: memref<?xf64>, %y: memref<?xf64>, %dx: memref<?xf64>, %dy: memref<?xf64>,
              %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f64
  scf.for %i = %c0 to %n step %c1 {
    %xv = memref.load %x[%i] : memref<?xf64>
    %yv = memref.load %y[%i] : memref<?xf64>
    %nx = arith.negf %xv : f64
    %e = math.exp %nx : f64
    %xy = arith.mulf %xv, %yv : f64
    %a = arith.addf %xy, %e : f64
    %t = math.tanh %a : f64
    %tt = arith.mulf %t, %t : f64
    %om = arith.subf %one, %tt : f64
    %ds = arith.mulf %yv, %om : f64
    %p = arith.mulf %ds, %yv : f64
    %q = arith.mulf %ds, %e : f64
    %dxv = arith.subf %p, %q : f64
    %r = arith.mulf %ds, %xv : f64
    %dyv = arith.addf %r, %t : f64
    memref.store %dxv, %dx[%i] : memref<?xf64>
    memref.store %dyv, %dy[%i] : memref<?xf64>
  }
  func.return
}
