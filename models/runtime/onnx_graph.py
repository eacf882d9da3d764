"""onnxruntime sessions for our BERT-style encoders, and one exact simplification of
the graphs torch exported them as.

torch's export of scaled-dot-product attention guards every softmax against rows
whose keys are all masked: ``Where(IsNaN(softmax), 0, softmax)``. Such a row never
reaches these models: every input starts with [CLS], attention masks only keys, so
each row has at least one key and its softmax is finite. The guard then only copies
the [batch, heads, tokens, tokens] tensor, elementwise and unvectorised: 21% of the
event classifier's time on a batch of 64 pairs of 48 tokens (ORT's profiler), and
removing it gave bit-identical logits on 256 padded p5-like pairs (760 -> 600 ms).
"""
from __future__ import annotations

from pathlib import Path

from engine.heap import give_back_free_pages


def without_nan_guards(model) -> int:
    """Remove, in place, each ``Where(IsNaN(x), c, x)`` of ``model`` (an
    ``onnx.ModelProto``) whose result is not a graph output, passing ``x`` on to its
    readers, and the nodes and initializers left unread; returns how many were removed."""
    graph = model.graph
    made_by = {out: node for node in graph.node for out in node.output}
    outputs = {o.name for o in graph.output}
    passed_on: dict[str, str] = {}
    for node in graph.node:
        if node.op_type != "Where" or len(node.input) != 3 or node.output[0] in outputs:
            continue
        test = made_by.get(node.input[0])
        if test is not None and test.op_type == "IsNaN" and test.input[0] == node.input[2]:
            passed_on[node.output[0]] = node.input[2]
    if not passed_on:
        return 0
    kept = [n for n in graph.node if not (n.op_type == "Where" and n.output[0] in passed_on)]
    for node in kept:
        for i, name in enumerate(node.input):
            if name in passed_on:
                node.input[i] = passed_on[name]
    # drop what nothing reads any more (the IsNaN tests, the zeros they chose), last first
    while True:
        read = {name for n in kept for name in n.input} | outputs
        unread = [n for n in kept if n.op_type in ("IsNaN", "Constant") and not any(o in read for o in n.output)]
        if not unread:
            break
        gone = {id(n) for n in unread}  # by identity: protobuf messages compare by content
        kept = [n for n in kept if id(n) not in gone]
    read = {name for n in kept for name in n.input} | outputs
    initializers = [t for t in graph.initializer if t.name in read]
    del graph.node[:]
    graph.node.extend(kept)
    del graph.initializer[:]
    graph.initializer.extend(initializers)
    return len(passed_on)


def onnxruntime():
    """The onnxruntime module with its telemetry off (see ``models/__init__``, which
    sets ``ORT_DISABLE_TELEMETRY`` before it loads; this also turns the events off
    through the API, for a build that reads another variable)."""
    import onnxruntime as ort

    ort.disable_telemetry_events()
    return ort


#: Whether onnxruntime's worker threads spin after a run, waiting for the next. On 2
#: cores a spinning worker takes a core from what runs between two model calls (spaCy,
#: numpy's BLAS, the planner): a chat turn's insert took 40.4-41.7 ms with it and
#: 31.2-31.5 ms without (MixMC dev, two runs each, taking turns); embedding 1,500
#: short texts in a row took 3.1-3.2 s with it and 3.3 s without.
SPIN_WAIT = False


def session(path: Path, threads: int):
    """An onnxruntime CPU session over the model at ``path``, its softmax guards
    removed (:func:`without_nan_guards`), on ``threads`` threads."""
    import onnx

    ort = onnxruntime()
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.enable_cpu_mem_arena = False  # small models: the arena's slack costs more RSS than it saves time
    if not SPIN_WAIT:
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    model = onnx.load(str(path))
    if not without_nan_guards(model):
        return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    data = model.SerializeToString()
    del model
    made = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
    del data
    # glibc keeps the pages the graph's copies were freed from: loading the four
    # encoders this way left 150 MB more resident than loading them from their
    # files, 34 MB after giving them back
    give_back_free_pages()
    return made
