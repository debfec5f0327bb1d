// The `hlo` dialect: one operation per HLO opcode, loaded at runtime with irdl.load_dialects.
//
// The single source of truth for opcode names, operand arity and required attributes: the
// importer reads arity and required attributes from here (hlo_mlir.dialects.registry).
//
// IRDL (MLIR 22) binds a constraint variable to one type for all operands of a variadic group, so
// an operand list whose types differ (tuple, concatenate, sort, reduce, call, fusion, collectives,
// ...) cannot be declared here.  Those opcodes are listed at the end as `hlo_v.*` comments: they are
// operations of the unregistered `hlo_v` namespace, checked by the Python verifier instead.
// Op names spell the HLO opcode with '_' for '-'.
irdl.dialect @hlo {
  // The HLO token type (token[]) and opaque type (opaque[]).
  irdl.type @token {}
  irdl.type @opaque {}

  irdl.operation @abs {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @acos {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @acosh {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @add {
    %o0 = irdl.any
    %o1 = irdl.any
    %r = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    irdl.results(result: %r)
  }
  irdl.operation @add_dependency {
    %o0 = irdl.any
    %o1 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0, token: %o1)
    irdl.results(result: %r)
  }
  irdl.operation @after_all {
    %t = irdl.parametric @hlo::@token<>
    %r = irdl.any
    irdl.operands(operands: variadic %t)
    irdl.results(result: %r)
  }
  irdl.operation @all_gather_done {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @all_reduce_done {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @and {
    %o0 = irdl.any
    %o1 = irdl.any
    %r = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    irdl.results(result: %r)
  }
  irdl.operation @asin {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @asinh {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @async_done {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @atan {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @atan2 {
    %o0 = irdl.any
    %o1 = irdl.any
    %r = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    irdl.results(result: %r)
  }
  irdl.operation @atanh {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @batch_norm_grad {
    %o0 = irdl.any
    %o1 = irdl.any
    %o2 = irdl.any
    %o3 = irdl.any
    %o4 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0, scale: %o1, mean: %o2, variance: %o3, grad_output: %o4)
    irdl.results(result: %r)
    %a0 = irdl.any
    %a1 = irdl.any
    irdl.attributes {"epsilon" = %a0, "feature_index" = %a1}
  }
  irdl.operation @batch_norm_inference {
    %o0 = irdl.any
    %o1 = irdl.any
    %o2 = irdl.any
    %o3 = irdl.any
    %o4 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0, scale: %o1, offset: %o2, mean: %o3, variance: %o4)
    irdl.results(result: %r)
    %a0 = irdl.any
    %a1 = irdl.any
    irdl.attributes {"epsilon" = %a0, "feature_index" = %a1}
  }
  irdl.operation @batch_norm_training {
    %o0 = irdl.any
    %o1 = irdl.any
    %o2 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0, scale: %o1, offset: %o2)
    irdl.results(result: %r)
    %a0 = irdl.any
    %a1 = irdl.any
    irdl.attributes {"epsilon" = %a0, "feature_index" = %a1}
  }
  irdl.operation @bitcast {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @bitcast_convert {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @broadcast {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
    %a0 = irdl.any
    irdl.attributes {"dimensions" = %a0}
  }
  irdl.operation @cbrt {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @ceil {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @cholesky {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @clamp {
    %o0 = irdl.any
    %o1 = irdl.any
    %o2 = irdl.any
    %r = irdl.any
    irdl.operands(min: %o0, operand: %o1, max: %o2)
    irdl.results(result: %r)
  }
  irdl.operation @count_leading_zeros {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @collective_permute_done {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @compare {
    %o0 = irdl.any
    %o1 = irdl.any
    %r = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    irdl.results(result: %r)
    %a0 = irdl.any
    irdl.attributes {"direction" = %a0}
  }
  irdl.operation @complex {
    %o0 = irdl.any
    %o1 = irdl.any
    %r = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    irdl.results(result: %r)
  }
  irdl.operation @constant {
    %r = irdl.any
    irdl.results(result: %r)
  }
  irdl.operation @convert {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @convolution {
    %o0 = irdl.any
    %o1 = irdl.any
    %r = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    irdl.results(result: %r)
    %a0 = irdl.any
    irdl.attributes {"dim_labels" = %a0}
  }
  irdl.operation @copy {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @copy_done {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @copy_start {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @cosine {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @cosh {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @divide {
    %o0 = irdl.any
    %o1 = irdl.any
    %r = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    irdl.results(result: %r)
  }
  irdl.operation @domain {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
    %a0 = irdl.any
    irdl.attributes {"domain" = %a0}
  }
  irdl.operation @dot {
    %o0 = irdl.any
    %o1 = irdl.any
    %r = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    irdl.results(result: %r)
  }
  irdl.operation @dynamic_reshape {
    %o0 = irdl.any
    %idx = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0, dims: variadic %idx)
    irdl.results(result: %r)
  }
  irdl.operation @dynamic_slice {
    %o0 = irdl.any
    %idx = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0, start_indices: variadic %idx)
    irdl.results(result: %r)
    %a0 = irdl.any
    irdl.attributes {"dynamic_slice_sizes" = %a0}
  }
  irdl.operation @dynamic_update_slice {
    %o0 = irdl.any
    %o1 = irdl.any
    %idx = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0, update: %o1, start_indices: variadic %idx)
    irdl.results(result: %r)
  }
  irdl.operation @erf {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @exponential {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @exponential_minus_one {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @fft {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
    %a0 = irdl.any
    %a1 = irdl.any
    irdl.attributes {"fft_type" = %a0, "fft_length" = %a1}
  }
  irdl.operation @floor {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @gather {
    %o0 = irdl.any
    %o1 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0, start_indices: %o1)
    irdl.results(result: %r)
    %a0 = irdl.any
    %a1 = irdl.any
    %a2 = irdl.any
    %a3 = irdl.any
    %a4 = irdl.any
    irdl.attributes {"offset_dims" = %a0, "collapsed_slice_dims" = %a1, "start_index_map" = %a2, "index_vector_dim" = %a3, "slice_sizes" = %a4}
  }
  irdl.operation @get_dimension_size {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
    %a0 = irdl.any
    irdl.attributes {"dimensions" = %a0}
  }
  irdl.operation @get_tuple_element {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
    %a0 = irdl.any
    irdl.attributes {"index" = %a0}
  }
  irdl.operation @imag {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @infeed {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @iota {
    %r = irdl.any
    irdl.results(result: %r)
    %a0 = irdl.any
    irdl.attributes {"iota_dimension" = %a0}
  }
  irdl.operation @is_finite {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @log {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @log_plus_one {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @logistic {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @maximum {
    %o0 = irdl.any
    %o1 = irdl.any
    %r = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    irdl.results(result: %r)
  }
  irdl.operation @minimum {
    %o0 = irdl.any
    %o1 = irdl.any
    %r = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    irdl.results(result: %r)
  }
  irdl.operation @mulhi {
    %o0 = irdl.any
    %o1 = irdl.any
    %r = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    irdl.results(result: %r)
  }
  irdl.operation @multiply {
    %o0 = irdl.any
    %o1 = irdl.any
    %r = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    irdl.results(result: %r)
  }
  irdl.operation @negate {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @not {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @opt_barrier {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @or {
    %o0 = irdl.any
    %o1 = irdl.any
    %r = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    irdl.results(result: %r)
  }
  irdl.operation @outfeed {
    %o0 = irdl.any
    %o1 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0, token: %o1)
    irdl.results(result: %r)
  }
  irdl.operation @pad {
    %o0 = irdl.any
    %o1 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0, padding_value: %o1)
    irdl.results(result: %r)
    %a0 = irdl.any
    irdl.attributes {"padding" = %a0}
  }
  irdl.operation @partition_id {
    %r = irdl.any
    irdl.results(result: %r)
  }
  irdl.operation @popcnt {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @power {
    %o0 = irdl.any
    %o1 = irdl.any
    %r = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    irdl.results(result: %r)
  }
  irdl.operation @ragged_all_to_all {
    %o0 = irdl.any
    %o1 = irdl.any
    %o2 = irdl.any
    %o3 = irdl.any
    %o4 = irdl.any
    %o5 = irdl.any
    %r = irdl.any
    irdl.operands(input: %o0, output: %o1, input_offsets: %o2, send_sizes: %o3, output_offsets: %o4, recv_sizes: %o5)
    irdl.results(result: %r)
  }
  irdl.operation @ragged_dot {
    %o0 = irdl.any
    %o1 = irdl.any
    %o2 = irdl.any
    %r = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1, group_sizes: %o2)
    irdl.results(result: %r)
  }
  irdl.operation @real {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @recv {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @recv_done {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @reduce_precision {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
    %a0 = irdl.any
    %a1 = irdl.any
    irdl.attributes {"exponent_bits" = %a0, "mantissa_bits" = %a1}
  }
  irdl.operation @remainder {
    %o0 = irdl.any
    %o1 = irdl.any
    %r = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    irdl.results(result: %r)
  }
  irdl.operation @replica_id {
    %r = irdl.any
    irdl.results(result: %r)
  }
  irdl.operation @reshape {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @reverse {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
    %a0 = irdl.any
    irdl.attributes {"dimensions" = %a0}
  }
  irdl.operation @rng {
    %o0 = irdl.any
    %o1 = irdl.any
    %r = irdl.any
    irdl.operands(a: %o0, b: %o1)
    irdl.results(result: %r)
    %a0 = irdl.any
    irdl.attributes {"distribution" = %a0}
  }
  irdl.operation @rng_bit_generator {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
    %a0 = irdl.any
    irdl.attributes {"algorithm" = %a0}
  }
  irdl.operation @rng_get_and_update_state {
    %r = irdl.any
    irdl.results(result: %r)
  }
  irdl.operation @round_nearest_afz {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @round_nearest_even {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @rsqrt {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @scaled_dot {
    %o0 = irdl.any
    %o1 = irdl.any
    %o2 = irdl.any
    %o3 = irdl.any
    %r = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1, lhs_scale: %o2, rhs_scale: %o3)
    irdl.results(result: %r)
  }
  irdl.operation @select {
    %o0 = irdl.any
    %o1 = irdl.any
    %o2 = irdl.any
    %r = irdl.any
    irdl.operands(pred: %o0, on_true: %o1, on_false: %o2)
    irdl.results(result: %r)
  }
  irdl.operation @select_and_scatter {
    %o0 = irdl.any
    %o1 = irdl.any
    %o2 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0, source: %o1, init_value: %o2)
    irdl.results(result: %r)
    %a0 = irdl.any
    %a1 = irdl.any
    irdl.attributes {"select" = %a0, "scatter" = %a1}
  }
  irdl.operation @send {
    %o0 = irdl.any
    %o1 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0, token: %o1)
    irdl.results(result: %r)
  }
  irdl.operation @send_done {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @set_dimension_size {
    %o0 = irdl.any
    %o1 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0, size: %o1)
    irdl.results(result: %r)
    %a0 = irdl.any
    irdl.attributes {"dimensions" = %a0}
  }
  irdl.operation @shift_left {
    %o0 = irdl.any
    %o1 = irdl.any
    %r = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    irdl.results(result: %r)
  }
  irdl.operation @shift_right_arithmetic {
    %o0 = irdl.any
    %o1 = irdl.any
    %r = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    irdl.results(result: %r)
  }
  irdl.operation @shift_right_logical {
    %o0 = irdl.any
    %o1 = irdl.any
    %r = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    irdl.results(result: %r)
  }
  irdl.operation @sign {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @sine {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @sinh {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @slice {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
    %a0 = irdl.any
    irdl.attributes {"slice" = %a0}
  }
  irdl.operation @sqrt {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @stochastic_convert {
    %o0 = irdl.any
    %o1 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0, random: %o1)
    irdl.results(result: %r)
  }
  irdl.operation @subtract {
    %o0 = irdl.any
    %o1 = irdl.any
    %r = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    irdl.results(result: %r)
  }
  irdl.operation @tan {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @tanh {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
  }
  irdl.operation @topk {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
    %a0 = irdl.any
    irdl.attributes {"k" = %a0}
  }
  irdl.operation @transpose {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
    %a0 = irdl.any
    irdl.attributes {"dimensions" = %a0}
  }
  irdl.operation @triangular_solve {
    %o0 = irdl.any
    %o1 = irdl.any
    %r = irdl.any
    irdl.operands(a: %o0, b: %o1)
    irdl.results(result: %r)
  }
  irdl.operation @while {
    %o0 = irdl.any
    %r = irdl.any
    irdl.operands(operand: %o0)
    irdl.results(result: %r)
    %a0 = irdl.any
    %a1 = irdl.any
    irdl.attributes {"condition" = %a0, "body" = %a1}
  }
  irdl.operation @xor {
    %o0 = irdl.any
    %o1 = irdl.any
    %r = irdl.any
    irdl.operands(lhs: %o0, rhs: %o1)
    irdl.results(result: %r)
  }
}

// Opcodes with heterogeneous variadic operand lists (namespace hlo_v, see above):
//   hlo_v.all_gather
//   hlo_v.all_gather_start
//   hlo_v.all_reduce
//   hlo_v.all_reduce_start
//   hlo_v.all_to_all
//   hlo_v.async_start
//   hlo_v.async_update
//   hlo_v.call
//   hlo_v.collective_broadcast
//   hlo_v.collective_permute
//   hlo_v.collective_permute_start
//   hlo_v.collective_reduce
//   hlo_v.concatenate
//   hlo_v.conditional
//   hlo_v.custom_call
//   hlo_v.fusion
//   hlo_v.map
//   hlo_v.reduce
//   hlo_v.reduce_scatter
//   hlo_v.reduce_window
//   hlo_v.scan
//   hlo_v.scatter
//   hlo_v.sort
//   hlo_v.tuple
