"""The frozen app's entry point (PyInstaller runs this file): the ``hindsight`` command."""
import multiprocessing
import sys

if __name__ == "__main__":
    multiprocessing.freeze_support()
    from app.cli import main

    sys.exit(main())
