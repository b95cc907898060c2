func.func @f32k(%x: memref<?xf32>, %out: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f32
  scf.for %i = %c0 to %n step %c1 {
    %v = memref.load %x[%i] : memref<?xf32>
    %sq = arith.mulf %v, %v : f32
    %nsq = arith.negf %sq : f32
    %e = math.exp %nsq : f32
    %s = math.sin %v : f32
    %c = math.cos %v : f32
    %t = math.tanh %v : f32
    %av = math.absf %v : f32
    %l1 = arith.addf %av, %one : f32
    %l = math.log %l1 : f32
    %es = arith.mulf %e, %s : f32
    %ct = arith.mulf %c, %t : f32
    %sum = arith.addf %es, %ct : f32
    %r = arith.subf %sum, %l : f32
    memref.store %r, %out[%i] : memref<?xf32>
  }
  func.return
}
