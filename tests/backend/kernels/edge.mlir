func.func @edge(%x: memref<?xf64>, %oexp: memref<?xf64>, %olog: memref<?xf64>,
                %osin: memref<?xf64>, %ocos: memref<?xf64>, %otanh: memref<?xf64>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %x[%i] : memref<?xf64>
    %e = math.exp %v : f64
    %l = math.log %v : f64
    %s = math.sin %v : f64
    %c = math.cos %v : f64
    %t = math.tanh %v : f64
    memref.store %e, %oexp[%i] : memref<?xf64>
    memref.store %l, %olog[%i] : memref<?xf64>
    memref.store %s, %osin[%i] : memref<?xf64>
    memref.store %c, %ocos[%i] : memref<?xf64>
    memref.store %t, %otanh[%i] : memref<?xf64>
  }
  func.return
}
