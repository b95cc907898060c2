func.func @colsum(%X: memref<64x32xf64>, %b: memref<32xf64>, %s: memref<32xf64>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f64
  scf.for %j = %c0 to %c32 step %c1 {
    %bj = memref.load %b[%j] : memref<32xf64>
    %acc = scf.for %i = %c0 to %c64 step %c1 iter_args(%a = %zero) -> (f64) {
      %x = memref.load %X[%i, %j] : memref<64x32xf64>
      %h = arith.addf %x, %bj : f64
      %t = math.tanh %h : f64
      %a2 = arith.addf %a, %t : f64
      scf.yield %a2 : f64
    }
    memref.store %acc, %s[%j] : memref<32xf64>
  }
  func.return
}
