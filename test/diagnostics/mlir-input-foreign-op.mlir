// hlo-dialect MLIR input with an op outside the hlo dialects: a located diagnostic, not a traceback.
// RUN: not hlo-opt %s 2>&1 | FileCheck %s
// CHECK: mlir-input-foreign-op.mlir:6:10: error: 'arith.constant' is not an HLO instruction (hlo.* or hlo_v.* ops only)
module {
  func.func @main() -> tensor<2xf32> {
    %0 = arith.constant dense<1.0> : tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}
