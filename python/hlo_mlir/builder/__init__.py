"""Build HLO modules op by op, in the spirit of XlaBuilder, with XLA's broadcasting semantics."""
