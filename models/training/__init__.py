"""Training-data generators and trainers for the roles we fine-tune here.

The generators (``extract_data``, ``rerank_data``) are pure Python over ``faker``;
the trainers (``seq2seq``, ``cross_encoder``) import torch and transformers
inside their functions. Nothing here runs at import time, and nothing here is used
at run time by the app: only ``models.build`` calls into it.
"""
