"""Build HLO modules op by op, in the spirit of XlaBuilder, with XLA's broadcasting semantics.

```python
from hlo_mlir import builder as xb
b = xb.Builder("axpy")
x = b.parameter(0, "f32[2,3]", "x")
v = b.parameter(1, "f32[3]", "v")
m = b.build(xb.add(x * 2.0, v, broadcast_dimensions=(1,)))   # an hlo_mlir.Module
```

Every op takes its result type from the shape rules (`hlo_mlir.dialects.shape_rules`); a broken
rule or broadcasting error is an `HloError` at the user's call site, named after the op.
Send/recv (`channels`) and the asynchronous start/done ops (`async_ops`) come out as XlaBuilder
emits them.
"""

from types import ModuleType

from hlo_mlir.builder.async_ops import (
    all_gather_done, all_gather_start, all_reduce_done, all_reduce_start, async_done, async_start, async_update,
    collective_permute_done, collective_permute_start, copy_done, copy_start,
)
from hlo_mlir.builder.broadcasting import BroadcastError, broadcast_shape
from hlo_mlir.builder.channels import recv, recv_from_host, recv_with_token, send, send_to_host, send_with_token
from hlo_mlir.builder.compute import (
    conv, conv_general_dilated, conv_with_general_padding, dot, dot_general, gather, make_padding, map_,
    ragged_dot, reduce, reduce_window, scatter, select_and_scatter, sort, top_k,
)
from hlo_mlir.builder.control import (
    after_all, all_gather, all_reduce, all_to_all, all_to_all_tuple, batch_norm_grad, batch_norm_inference,
    batch_norm_training, call, cholesky, collective_broadcast, collective_permute, composite_call, conditional,
    cross_replica_sum, custom_call, fft, indexed_conditional, infeed, optimization_barrier, outfeed, partition_id,
    ragged_all_to_all, reduce_scatter, replica_id, rng_bit_generator, rng_normal, rng_uniform, set_dimension_size,
    triangular_solve, while_loop,
)
from hlo_mlir.builder.core import Builder, ChannelHandle, Computation, Value
from hlo_mlir.builder.elementwise import (
    abs_, add, and_, atan2, binary, bitcast_convert_type, cbrt, ceil, clamp, clz, compare, complex_,
    convert_element_type, copy, cos, div, eq, erf, exp, expm1, floor, ge, gt, imag, is_finite, le, log, log1p,
    logistic, lt, max_, min_, mul, ne, neg, not_, or_, popcnt, population_count, pow_, real, reduce_precision, rem,
    round_, round_nearest_even, rsqrt, select, shift_left, shift_right_arithmetic, shift_right_logical, sign, sin,
    sqrt, stochastic_convert_type, sub, tan, tanh, xor,
)
from hlo_mlir.builder.shape_ops import (
    broadcast, broadcast_in_dim, collapse, concat_in_dim, dynamic_reshape, dynamic_slice, dynamic_update_slice,
    get_dimension_size, get_tuple_element, iota, pad, reshape, rev, slice_, slice_in_dim, transpose, tuple_,
)

__all__ = [name for name, value in dict(globals()).items()
           if not name.startswith("_") and not isinstance(value, ModuleType)]
