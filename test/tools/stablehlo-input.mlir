// RUN: hlo-opt %s | FileCheck %s
// StableHLO as JAX prints it, read by the built-in reader (no jaxlib): private functions become called
// computations, `applies` reductions get a reducer, splat constants a scalar and a broadcast.

module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x4xf32>, %arg1: tensor<4x3xf32>) -> (tensor<2x3xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.maximum across dimensions = [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [0] : (tensor<2xf32>) -> tensor<2x3xf32>
    %3 = call @relu(%2) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %cst_0 = stablehlo.constant dense<2.000000e+00> : tensor<2x3xf32>
    %4 = stablehlo.multiply %3, %cst_0 : tensor<2x3xf32>
    %5 = stablehlo.slice %4 [0:2, 0:3:1] : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %6 = stablehlo.compare GT, %5, %0, FLOAT : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
    %7 = stablehlo.select %6, %5, %0 : tensor<2x3xi1>, tensor<2x3xf32>
    return %7 : tensor<2x3xf32>
  }
  func.func private @relu(%arg0: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<2x3xf32>
    return %1 : tensor<2x3xf32>
  }
}

// CHECK:      HloModule jit_f
// CHECK:      %reducer_maximum_0 (a: f32[], b: f32[]) -> f32[] {
// CHECK:        ROOT %r = f32[] maximum(f32[] %a, f32[] %b)
// CHECK:      %relu (arg0: f32[2,3]) -> f32[2,3] {
// CHECK:        ROOT %v1 = f32[2,3] maximum(f32[2,3] %arg0, f32[2,3] %v0)
// CHECK:      ENTRY %main (arg0: f32[2,4], arg1: f32[4,3]) -> f32[2,3] {
// CHECK:        %v0 = f32[2,3] dot(f32[2,4] %arg0, f32[4,3] %arg1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
// CHECK-NEXT:   %cst = f32[] constant(-inf)
// CHECK-NEXT:   %v1 = f32[2] reduce(f32[2,3] %v0, f32[] %cst), dimensions={1}, to_apply=%reducer_maximum_0
// CHECK-NEXT:   %v2 = f32[2,3] broadcast(f32[2] %v1), dimensions={0}
// CHECK-NEXT:   %v3 = f32[2,3] call(f32[2,3] %v2), to_apply=%relu
// CHECK-NEXT:   %cst_0.splat = f32[] constant(2)
// CHECK-NEXT:   %cst_0 = f32[2,3] broadcast(f32[] %cst_0.splat), dimensions={}
// CHECK-NEXT:   %v4 = f32[2,3] multiply(f32[2,3] %v3, f32[2,3] %cst_0)
// CHECK-NEXT:   %v5 = f32[2,3] slice(f32[2,3] %v4), slice={[0:2], [0:3]}
// CHECK-NEXT:   %v6 = pred[2,3] compare(f32[2,3] %v5, f32[2,3] %v0), direction=GT
// CHECK-NEXT:   ROOT %v7 = f32[2,3] select(pred[2,3] %v6, f32[2,3] %v5, f32[2,3] %v0)
