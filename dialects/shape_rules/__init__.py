"""Shape inference and verification rules, one module per op family (`infer_result_type`)."""
