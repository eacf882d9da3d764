"""CTranslate2 (the extractor): its extension, its bundled libraries (ctranslate2.libs,
OpenMP), never its converters' training-side imports."""
from PyInstaller.utils.hooks import collect_dynamic_libs

binaries = collect_dynamic_libs("ctranslate2")
hiddenimports = ["ctranslate2._ext"]
excludedimports = ["transformers", "torch", "tensorflow", "fairseq", "opennmt", "sentencepiece"]
