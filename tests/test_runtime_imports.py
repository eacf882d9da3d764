"""The app at run time needs no training library: torch, transformers and
sentence-transformers are for `hindsight models build` only, and the desktop build
ships without them. A fresh interpreter imports the app's entry points, loads the
libraries the model wrappers load (spaCy too: its thinc imports torch whenever it
can), answers a question through the composition root with fakes, and then must
not have any of them in sys.modules."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TRAINING = ("torch", "transformers", "sentence_transformers")

SCRIPT = r"""
import importlib, importlib.util, json, sys, tempfile
from pathlib import Path

import app.cli, app.assemble, app.cli_app, app.selftest, app.verify
import app.gui.main_window, app.gui.engine_factory
import engine.qa, engine.retrieval.index
import models.registry, models.status, models.paths
from models.runtime import classifiers, encoders, extractor, greedy, onnx_graph, planner, segmenter

loaded = []
for lib in ("onnxruntime", "onnx", "tokenizers", "ctranslate2", "llama_cpp"):
    if importlib.util.find_spec(lib) is not None:
        importlib.import_module(lib)
        loaded.append(lib)
if importlib.util.find_spec(segmenter.SPACY_MODEL) is not None:
    seg = segmenter.SpacySegmenter()
    assert seg.sentences("One here. Two there.") == ["One here.", "Two there."]
    loaded.append("spacy")

from app.assemble import build_engine
from engine.settings import Settings
from engine.store import EventStore
from engine.ingest import import_paths
from tests.test_operators import FakeEmbedder, FakeExtractor, FakePatterns, FakeReranker, FakeSparse
from tests.test_qud import ScriptedLLM

QUESTION = "How many songs by Harbour Lights did I listen to?"


class SameEmbedder(FakeEmbedder):
    dimension = 2

    def embed(self, texts):
        return [[1.0, 0.0] for _ in texts]


PLAN = 'APPLY(l=RETRIEVE(query="Harbour Lights"), fct=len)'


class TunedLLM:  # the fine-tuned planner's role: one call, the whole plan, for the one question
    def complete(self, prompt, *, grammar=None, max_tokens=256, stop=(), temperature=0.0):
        assert grammar and "Question: " + QUESTION in prompt
        return PLAN
    def close(self):
        pass


class Registry:
    def __init__(self, cache):
        self.cache = cache
    def planner(self):
        return ScriptedLLM({QUESTION: [PLAN]})
    def get(self, role):
        assert role == "planner_tuned", role
        return TunedLLM()
    def sparse_encoder(self):
        return FakeSparse()
    def pattern_classifier(self):
        return FakePatterns({})
    def event_classifier(self):
        return FakeReranker("harbour")
    def extractor(self):
        return FakeExtractor("")
    def embedder(self):
        return SameEmbedder()
    def check(self, role):
        pass
    def preload(self, roles):
        return None
    def on_first_use(self, role):
        return None if role == "segmenter" else getattr(self, role)()
    def close(self):
        pass


with tempfile.TemporaryDirectory() as tmp:
    store = EventStore(Path(tmp) / "events.duckdb")
    settings = Settings(home_timezone="UTC")
    import_paths(store, [Path(app.selftest.__file__).parent], context=settings.import_context())
    eng = build_engine(store, settings, Path(tmp), models=Registry(Path(tmp)))
    answer = eng.ask(QUESTION)
    eng.close()
    store.close()
assert answer.ok, answer.answer_text
print(json.dumps({"loaded": loaded, "answer": answer.answer_text,
                  "training": sorted(m for m in sys.modules if m.split(".")[0] in %r)}))
""" % (TRAINING,)


def test_the_runtime_path_imports_no_training_library():
    import importlib.util

    if importlib.util.find_spec("onnxruntime") is None or importlib.util.find_spec("numpy") is None:
        pytest.skip("model requirements not installed (requirements-models.txt)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
               QT_QPA_PLATFORM="offscreen")
    proc = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["training"] == [], f"the runtime imported {result['training'][:10]} (with {result['loaded']})"
    assert result["answer"]


def test_torch_is_hidden_only_while_spacy_loads(monkeypatch):
    import importlib
    import types

    from models.runtime.segmenter import torch_hidden

    monkeypatch.delitem(sys.modules, "torch", raising=False)
    with torch_hidden():
        try:
            importlib.import_module("torch")
            raise AssertionError("torch was importable inside torch_hidden()")
        except ImportError:
            pass
    assert "torch" not in sys.modules  # a later `import torch` (training) is not blocked
    loaded = types.ModuleType("torch")
    monkeypatch.setitem(sys.modules, "torch", loaded)
    with torch_hidden():  # already loaded by training code in this process: left alone
        assert importlib.import_module("torch") is loaded
    assert sys.modules["torch"] is loaded
