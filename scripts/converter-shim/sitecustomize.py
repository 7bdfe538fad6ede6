# llamagate converter shim: see README.md beside this file. Adds the torch dtype names that torch 1.13
# lacks, so that convert_hf_to_gguf.py can be imported; it does not make such tensors convertible.
try:
    import torch
    for name in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "uint16", "uint32", "uint64"):
        if not hasattr(torch, name):
            setattr(torch, name, object())
except ImportError:
    pass
