"""llamagate's compatibility runner for llama.cpp's convert_hf_to_gguf.py (see README.md beside this file).

    python run_converter.py <path/to/convert_hf_to_gguf.py> <converter arguments...>
    python run_converter.py --probe <path/to/convert_hf_to_gguf.py>

Papers over exactly what is missing on Debian 12 (torch 1.13, no transformers) and nothing that is present:
each stand-in below is installed only when the real thing cannot be found. --probe imports the converter
(without converting) and prints one JSON line: what was papered over, or which module is missing.
"""
import importlib.util
import json
import os
import runpy
import sys
import types

# Torch dtype names that convert_hf_to_gguf.py and conversion/*.py reference at import time (dtype tables,
# `w.dtype in (torch.float8_e4m3fn, ...)`). torch 1.13 has none of them. A placeholder is never equal to a
# real tensor dtype, so tensors are simply never taken for these types; checkpoints stored in float8 or
# unsigned 16/32/64-bit types cannot be converted with torch 1.13 anyway.
TORCH_DTYPES = ("float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "uint16", "uint32", "uint64")


class _MissingDtype:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"<torch.{self.name}: not in this torch, llamagate converter shim>"


class _NoTransformers:
    """`AutoConfig` / `AutoTokenizer` of the stand-in `transformers` module: loading always fails."""

    what = "a Hugging Face class"

    @classmethod
    def from_pretrained(cls, path, *args, **kwargs):
        raise OSError(f"{cls.what} is needed for {path}, but transformers is not installed (llamagate converter shim): "
                      "install the converter's requirements in a virtual environment (npm run setup:converter)")


class _AutoConfig(_NoTransformers):
    # convert_hf_to_gguf.py catches this failure and reads config.json itself, which is all it needs.
    what = "transformers.AutoConfig"


class _AutoTokenizer(_NoTransformers):
    # Only reached for models without a SentencePiece tokenizer.model (BPE tokenizer.json models): those
    # really need transformers, and the converter then fails with this message.
    what = "a Hugging Face tokenizer (tokenizer.json, read with transformers.AutoTokenizer)"


def install_stand_ins():
    papered = []
    import torch  # a missing torch is a real failure: reported by the caller
    for name in TORCH_DTYPES:
        if not hasattr(torch, name):
            setattr(torch, name, _MissingDtype(name))
            papered.append(f"torch.{name}")
    if importlib.util.find_spec("transformers") is None:
        stub = types.ModuleType("transformers")
        stub.__doc__ = "llamagate converter shim: transformers is not installed"
        stub.AutoConfig = _AutoConfig
        stub.AutoTokenizer = _AutoTokenizer
        sys.modules["transformers"] = stub
        papered.append("transformers")
    return papered


def main():
    args = sys.argv[1:]
    probe = args[:1] == ["--probe"]
    if probe:
        args = args[1:]
    if not args:
        sys.exit("usage: run_converter.py [--probe] <convert_hf_to_gguf.py> [arguments...]")
    script = os.path.abspath(args[0])
    try:
        papered = install_stand_ins()
    except ImportError as err:
        if not probe:
            raise
        print(json.dumps({"ok": False, "missing": err.name, "error": str(err)}))
        return
    if papered and not probe:
        print(f"llamagate converter shim: standing in for {', '.join(papered)}", file=sys.stderr)
    # As if the script were run itself: its folder first on sys.path (it imports its `conversion` package).
    sys.path[0] = os.path.dirname(script)
    sys.argv = [script, *args[1:]]
    if not probe:
        runpy.run_path(script, run_name="__main__")
        return
    try:
        runpy.run_path(script, run_name="llamagate_probe")
    except ImportError as err:
        print(json.dumps({"ok": False, "missing": err.name, "error": str(err), "papered": papered}))
        return
    except Exception as err:  # noqa: BLE001 - any import-time failure makes the converter unusable
        print(json.dumps({"ok": False, "missing": None, "error": f"{type(err).__name__}: {err}", "papered": papered}))
        return
    import numpy
    import torch
    print(json.dumps({"ok": True, "papered": papered, "python": sys.version.split()[0],
                      "torch": torch.__version__, "numpy": numpy.__version__}))


if __name__ == "__main__":
    main()
