// hlo-dialect MLIR input with a computation without func.return: a located diagnostic, not a traceback.
// (MLIR cannot tell: an unregistered hlo_v op might be a terminator.)
// RUN: not hlo-opt %s 2>&1 | FileCheck %s
// CHECK: mlir-input-no-return.mlir:6:3: error: computation 'main' has no ROOT: its body must end in func.return
module {
  func.func @main(%arg0: tensor<2xf32>) -> tuple<tensor<2xf32>> {
    %0 = "hlo_v.tuple"(%arg0) {hlo.name = "t"} : (tensor<2xf32>) -> tuple<tensor<2xf32>>
  }
}
