// hlo-dialect MLIR input that breaks an op's IRDL definition: MLIR's diagnostic, same format.
// RUN: not hlo-opt %s 2>&1 | FileCheck --strict-whitespace %s
// CHECK: {{^}}{{.*}}bad-input.mlir:8:10: error: 'hlo.add' op expects exactly 2 operands, but got 1{{$}}
// CHECK-NEXT: {{^}}    %0 = "hlo.add"(%arg0) {hlo.name = "a"} : (tensor<2xf32>) -> tensor<2xf32>{{$}}
// CHECK-NEXT: {{^}}         ^{{$}}
module {
  func.func @main(%arg0: tensor<2xf32>) -> tensor<2xf32> {
    %0 = "hlo.add"(%arg0) {hlo.name = "a"} : (tensor<2xf32>) -> tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}
