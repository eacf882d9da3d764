"""onnxruntime (encoders and classifiers): the C++ library and the shared-provider
library beside its Python extension."""
from PyInstaller.utils.hooks import collect_dynamic_libs

binaries = collect_dynamic_libs("onnxruntime")
hiddenimports = ["onnxruntime.capi._pybind_state"]
excludedimports = ["torch", "onnxruntime.transformers", "onnxruntime.quantization", "onnxruntime.tools"]
