# llamagate converter shim: see README.md beside this file. Only used when transformers is missing.
class AutoConfig:
    @staticmethod
    def from_pretrained(*args, **kwargs):
        raise OSError("transformers is not installed: llamagate's shim makes the converter read config.json itself")

class AutoTokenizer:
    @staticmethod
    def from_pretrained(*args, **kwargs):
        raise OSError("transformers is not installed (llamagate shim)")
