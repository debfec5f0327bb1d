// hlo-dialect MLIR input with a parameter of a non-HLO type: a located diagnostic, not a traceback.
// RUN: not hlo-opt %s 2>&1 | FileCheck %s
// CHECK: mlir-input-foreign-type.mlir:5:3: error: parameter 0 of computation 'main' has type memref<2xf32>, which is not an HLO type (a tensor of an HLO element type, a tuple or !hlo.token)
module {
  func.func @main(%arg0: memref<2xf32>) -> memref<2xf32> {
    return %arg0 : memref<2xf32>
  }
}
