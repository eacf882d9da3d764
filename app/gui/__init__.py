"""The PySide6 desktop app: a shell over the same core API the CLI uses.

Qt lives here and nowhere in engine/, importers/ or models/. Nothing in this
package answers questions, parses exports or writes the store by itself; it
calls ``engine.ingest``, ``engine.store`` and the ``QuestionEngine`` from worker
threads and shows what they return.
"""
