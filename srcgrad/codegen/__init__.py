"""Code generation: print generated trees as readable source, and load them."""
