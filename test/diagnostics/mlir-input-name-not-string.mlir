// hlo-dialect MLIR input with hlo.name that is not a string: a located diagnostic, not a traceback.
// RUN: not hlo-opt %s 2>&1 | FileCheck %s
// CHECK: mlir-input-name-not-string.mlir:6:10: error: negate: attribute 'hlo.name' must be a string, got 7 : i64
module {
  func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
    %0 = "hlo.negate"(%arg0) {hlo.name = 7} : (tensor<2xf32>) -> tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}
