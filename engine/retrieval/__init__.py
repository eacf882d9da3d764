"""Retrieval over the event store: the verbalised key-value documents RETRIEVE
searches, their full-text and learned-sparse index, kept beside the store."""
