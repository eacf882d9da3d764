"""Importers turn the files that services export into Hindsight events.

One module per export format, each registering an :class:`~importers.base.Importer`
in :data:`~importers.registry.REGISTRY`. Importers read and yield; they never touch
the store (the ingest pipeline in ``engine.ingest`` owns walking archives, dispatching
and writing). Nothing here imports Qt.
"""
