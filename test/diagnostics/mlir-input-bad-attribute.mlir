// hlo-dialect MLIR input with an HLO attribute that does not decode as its kind: a located diagnostic, not a traceback.
// RUN: not hlo-opt %s 2>&1 | FileCheck --strict-whitespace %s
// CHECK: {{^}}{{.*}}mlir-input-bad-attribute.mlir:8:10: error: broadcast: attribute 'dimensions' must be a list of integers like {0,1}, got @nosuch{{$}}
// CHECK-NEXT: {{^}}    %0 = "hlo.broadcast"(%arg0) {dimensions = @nosuch, hlo.name = "b"} : (tensor<2xf32>) -> tensor<3x2xf32>{{$}}
// CHECK-NEXT: {{^}}         ^{{$}}
module {
  func.func @main(%arg0: tensor<2xf32> {hlo.name = "p"}) -> tensor<3x2xf32> {
    %0 = "hlo.broadcast"(%arg0) {dimensions = @nosuch, hlo.name = "b"} : (tensor<2xf32>) -> tensor<3x2xf32>
    return %0 : tensor<3x2xf32>
  }
}
