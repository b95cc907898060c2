func.func private @tidu_no_such_symbol(f64) -> f64
func.func @calls_missing(%p: memref<4xf64>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %p[%c0] : memref<4xf64>
  %r = func.call @tidu_no_such_symbol(%v) : (f64) -> f64
  memref.store %r, %p[%c0] : memref<4xf64>
  func.return
}
