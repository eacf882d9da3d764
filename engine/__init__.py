"""The core: the event store, the import pipeline, and (later) planning, operators,
retrieval, chat trees and aggregative QA. Nothing here imports Qt; real models
come in through Protocols, constructed by the shells in ``app``."""
