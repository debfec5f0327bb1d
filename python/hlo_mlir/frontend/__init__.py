"""HLO text <-> MLIR `hlo` dialect: grammar, parser, importer (ir_gen) and exporter."""
