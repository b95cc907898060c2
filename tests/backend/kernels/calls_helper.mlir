func.func private @helper(%v: f64) -> f64 {
  %e = math.exp %v : f64
  %one = arith.constant 1.0 : f64
  %r = arith.addf %e, %one : f64
  func.return %r : f64
}
func.func @calls_helper(%x: memref<?xf64>, %y: memref<?xf64>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %x[%i] : memref<?xf64>
    %w = func.call @helper(%v) : (f64) -> f64
    memref.store %w, %y[%i] : memref<?xf64>
  }
  func.return
}
