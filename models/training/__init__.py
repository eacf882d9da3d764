"""Training-data generators and trainers for the roles we fine-tune here.

The extractor's generator (``extract_data``) is pure Python over ``faker``; the
cross-encoders' (``retrieval_data``) simulates personas with ``synth`` and
reads their exports with the real importers;
the trainers (``seq2seq``, ``cross_encoder``) import torch and transformers
inside their functions. Nothing here runs at import time, and nothing here is used
at run time by the app: only ``models.build`` calls into it.
"""
