// RUN: xdsl-opt -p cse %s | filecheck %s --check-prefix=CSE
// RUN: xdsl-opt -p dce %s | filecheck %s --check-prefix=DCE
// The stock cse and dce passes work on tidu ops: they are all Pure.

// CSE-LABEL: func.func @node(%x: tensor<4xf64>, %y: tensor<4xf64>)
// CSE-NEXT:    %a = tidu.mul %x, %y : tensor<4xf64>
// CSE-NEXT:    %e = tidu.exp %a : tensor<4xf64>
// CSE-NEXT:    %p = tidu.pow %x, 2.000000e+00 : tensor<4xf64>
// CSE-NEXT:    %q = tidu.pow %x, 3.000000e+00 : tensor<4xf64>
// CSE-NEXT:    %s = tidu.add %e, %e : tensor<4xf64>
// CSE-NEXT:    %t = tidu.add %p, %q : tensor<4xf64>
// CSE-NEXT:    func.return %s, %t

// DCE-LABEL: func.func @node(%x: tensor<4xf64>, %y: tensor<4xf64>)
// DCE-NEXT:    %a = tidu.mul %x, %y : tensor<4xf64>
// DCE-NEXT:    %b = tidu.mul %x, %y : tensor<4xf64>
// DCE-NOT:     tidu.tanh
// DCE:         func.return %s, %t
func.func @node(%x: tensor<4xf64>, %y: tensor<4xf64>) -> (tensor<4xf64>, tensor<4xf64>) {
  %a = tidu.mul %x, %y : tensor<4xf64>
  %b = tidu.mul %x, %y : tensor<4xf64>
  %e = tidu.exp %a : tensor<4xf64>
  %f = tidu.exp %b : tensor<4xf64>
  %p = tidu.pow %x, 2.000000e+00 : tensor<4xf64>
  %q = tidu.pow %x, 3.000000e+00 : tensor<4xf64>
  %s = tidu.add %e, %f : tensor<4xf64>
  %t = tidu.add %p, %q : tensor<4xf64>
  %dead = tidu.tanh %s : tensor<4xf64>
  func.return %s, %t : tensor<4xf64>, tensor<4xf64>
}
