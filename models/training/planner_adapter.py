"""Turn a ``planner_lora`` run into the committed adapter: convert the peft adapter to
the GGUF llama.cpp loads, with ``convert_lora_to_gguf.py`` from the llama-cpp-python
source distribution (the llama.cpp it vendors is the one the runtime links), and
write the manifest that names the file, the base, the data and the figures.

    python -m models.training.planner_adapter --run RUN_DIR --data pairs.jsonl.gz \\
        [--sdist llama_cpp_python-0.3.36.tar.gz]

Without ``--sdist`` the source distribution is fetched with pip (a package
registry, not a model hub) into the user cache.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tarfile
from pathlib import Path

from models.gguf import sha256_file as sha256_of
from models.runtime.planner_adapter import ADAPTER, MANIFEST

LLAMA_CPP_PYTHON = "llama-cpp-python==0.3.36"


def llama_cpp_source(sdist: Path | None, cache: Path) -> Path:
    """The vendored llama.cpp folder of the llama-cpp-python source distribution."""
    if sdist is None:
        cache.mkdir(parents=True, exist_ok=True)
        found = sorted(cache.glob("llama_cpp_python-*.tar.gz"))
        if not found:
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                            LLAMA_CPP_PYTHON, "-d", str(cache)], check=True)
            found = sorted(cache.glob("llama_cpp_python-*.tar.gz"))
        sdist = found[-1]
    root = cache / sdist.name.removesuffix(".tar.gz")
    target = root / "vendor" / "llama.cpp" / "convert_lora_to_gguf.py"
    if not target.exists():
        with tarfile.open(sdist) as tar:
            members = [m for m in tar.getmembers() if "/vendor/llama.cpp/" in m.name
                       and ("/gguf-py/" in m.name or "/conversion/" in m.name or m.name.endswith(".py"))
                       and "/vendor/llama.cpp/vendor/" not in m.name]
            tar.extractall(cache, members=members, filter="data")
    return target.parent


def main(argv: list[str] | None = None) -> None:
    from models.paths import cache_dir

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", type=Path, required=True, help="the planner_lora output folder")
    ap.add_argument("--data", type=Path, required=True, help="the training pairs the run used")
    ap.add_argument("--data-manifest", type=Path, default=None)
    ap.add_argument("--sdist", type=Path, default=None)
    ap.add_argument("--outtype", default="f16")
    args = ap.parse_args(argv)
    adapter_dir = args.run / "adapter"
    report = json.loads((adapter_dir / "training.json").read_text())
    if report["data_sha256"] != sha256_of(args.data):
        raise SystemExit(f"{args.data} is not the data the run was trained on")
    src = llama_cpp_source(args.sdist, cache_dir() / "llama-cpp-source")
    env = {"PYTHONPATH": str(src / "gguf-py")}
    import os

    subprocess.run([sys.executable, str(src / "convert_lora_to_gguf.py"), "--base", str(args.run / "base"),
                    "--outfile", str(ADAPTER), "--outtype", args.outtype, str(adapter_dir)],
                   check=True, env={**os.environ, **env})
    data_manifest = {}
    if args.data_manifest and args.data_manifest.exists():
        data_manifest = json.loads(args.data_manifest.read_text())
    record = {
        "adapter_sha256": sha256_of(ADAPTER), "adapter_bytes": ADAPTER.stat().st_size,
        "base_sha256": report["base_sha256"], "data_sha256": report["data_sha256"],
        "training": report, "data": data_manifest,
        "made_by": ["python -m app.bench.plan_verify", "python -m models.training.plan_data build",
                    "python -m models.training.planner_lora", "python -m models.training.planner_adapter"],
    }
    MANIFEST.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in record.items() if k != "training"}, indent=2))


if __name__ == "__main__":
    main()
