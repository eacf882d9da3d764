"""RETRIEVE's full-text search: DuckDB loads the fts extension from this package's
file (engine/retrieval/index.py), so the file goes where the package is."""
from PyInstaller.utils.hooks import collect_data_files

datas = collect_data_files("duckdb_extension_fts")
