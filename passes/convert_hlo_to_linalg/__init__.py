"""Lowering of the `hlo` dialect to linalg/tensor/arith/math/scf on tensors: a rule table keyed by op name."""
