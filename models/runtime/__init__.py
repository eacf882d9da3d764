"""Run-time wrappers for each model role, satisfying ``engine.protocols``.

Each module imports its heavy library (llama_cpp, onnxruntime, ctranslate2, spacy,
tokenizers) inside the class constructor, never at import time. Nothing here
trains or downloads anything.
"""
