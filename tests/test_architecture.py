"""The architecture, checked: the core never imports Qt, layers only point down,
and no product code evaluates text."""
from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("app", "engine", "importers", "models")


def test_import_linter_contracts_hold():
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert exe, "import-linter is a dev dependency: run 'make test'"
    out = subprocess.run([exe, "--config", str(ROOT / "pyproject.toml")], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "3 kept, 0 broken" in out.stdout


def _product_files():
    for pkg in PRODUCT:
        yield from (ROOT / pkg).rglob("*.py")


def test_no_eval_or_exec_in_product_code():
    offenders = []
    for path in _product_files():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("eval", "exec", "compile"):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.func.id}()")
    assert not offenders, offenders


def test_core_modules_do_not_import_heavy_libraries_at_import_time():
    """Importing the core must stay cheap: models load lazily."""
    code = ("import sys, importlib, pkgutil\n"
            "import engine, importers, models\n"
            "for pkg in (engine, importers):\n"
            "    for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
            "        importlib.import_module(m.name)\n"
            "heavy = [m for m in ('torch', 'transformers', 'llama_cpp', 'onnxruntime', 'ctranslate2', 'spacy', 'PySide6') if m in sys.modules]\n"
            "print(','.join(heavy))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "", f"heavy libraries imported eagerly: {out.stdout.strip()}"
