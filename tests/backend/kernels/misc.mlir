func.func @misc(%a: memref<?xf64>, %b: memref<?xf64>, %mx: memref<?xf64>, %mn: memref<?xf64>,
                %tr: memref<?xf64>, %ab: memref<?xf64>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f64
  %yes = arith.constant true
  scf.for %i = %c0 to %n step %c1 {
    %av = memref.load %a[%i] : memref<?xf64>
    %bv = memref.load %b[%i] : memref<?xf64>
    %max = arith.maximumf %av, %bv : f64
    %min = arith.minimumf %av, %bv : f64
    %k = arith.fptosi %av : f64 to i32
    %kw = arith.extsi %k : i32 to i64
    %kf = arith.sitofp %kw : i64 to f64
    %neg = arith.cmpf olt, %av, %zero : f64
    %na = arith.negf %av : f64
    %abs = arith.select %neg, %na, %av : f64
    %keep = arith.select %yes, %abs, %zero : f64
    memref.store %max, %mx[%i] : memref<?xf64>
    memref.store %min, %mn[%i] : memref<?xf64>
    memref.store %kf, %tr[%i] : memref<?xf64>
    memref.store %keep, %ab[%i] : memref<?xf64>
  }
  func.return
}
