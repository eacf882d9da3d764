"""Planner decoding speed: the same questions planned with and without drafted tokens;
with ``--busy``, planned with a fixed thread count and with the thread pacer
(``models.runtime.llama_threads``), on an idle machine and beside a busy program.

Each question's first plan step is written once per setting, in turns, with the
question's own tokens evaluated again every time (only the shared instruction prefix
stays cached), so settings differ in decoding alone. Drafting saves forward passes
and keeps the plans, up to rounding: a batched pass rounds differently and can flip
a near tie (``models.runtime.greedy``), so the plans that differ are counted.
"""
from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from models.runtime.greedy import DRAFT_AGREEMENT, DRAFT_AMX, DRAFT_TOKENS

# Our own questions, in the style users ask; none is from a benchmark's test split.
QUESTIONS = (
    "How many times did I go running in 2023?",
    "Which artist did I listen to most while running?",
    "How much did I spend on Amazon last year?",
    "What was my favourite restaurant in 2022?",
    "How often did I eat Italian food after playing football?",
    "On which weekday do I usually go swimming?",
    "How many hours did I spend watching Netflix in March?",
    "Who did I meet most often for coffee?",
    "What did I ask ChatGPT about most this spring?",
    "When was my last trip to Lisbon?",
    "How many emails did I get from Anna last month?",
    "What was the longest bike ride I did?",
)
# (guessed tokens per pass at most, share of the tail's earlier occurrences that must
# agree on a guess): none (the baseline), the default, and the default where
# llama.cpp's AMX kernels make longer passes cheap (the planner picks one by its build)
SETTINGS = ((0, 0.75), (DRAFT_TOKENS, DRAFT_AGREEMENT), DRAFT_AMX)


def key(setting: tuple[int, float]) -> str:
    return f"draft{setting[0]}_agree{round(setting[1] * 100)}"


def label(setting: tuple[int, float]) -> str:
    return "none" if not setting[0] else f"{setting[0]} / {setting[1]:.2f}"


def _prepared(registry, echo: Callable[[str], None]):
    """(the planner model, the question planner over it with its instruction prefix
    evaluated, that prefix's length in tokens)."""
    from engine.qud.planner import QudPlanner

    llm = registry.planner()
    planner = QudPlanner(llm)
    started = time.perf_counter()
    planner.warm_up(state_dir=Path(registry.cache) / "planner-prefix-state")  # the app's, see app.assemble
    echo(f"instruction prefix evaluated in {time.perf_counter() - started:.1f} s")
    return llm, planner, len(llm._llm.tokenize(planner.prefix.encode("utf-8"), add_bos=True, special=True))


def run(registry, *, echo: Callable[[str], None] = lambda _: None, limit: int | None = None) -> dict:
    from models.runtime.planner import instruction_sets

    cpu = sorted(s for s in instruction_sets() if s.startswith(("AVX", "AMX")))
    echo(f"llama.cpp uses {', '.join(cpu) or 'no AVX'}")
    llm, planner, prefix_tokens = _prepared(registry, echo)
    questions = QUESTIONS[:limit] if limit else QUESTIONS
    per: dict[tuple[int, int], list[tuple[float, str, dict]]] = {s: [] for s in SETTINGS}
    saved = llm.draft_tokens, llm.draft_agreement
    try:
        for n, question in enumerate(questions, 1):
            prompt = f"{planner.prefix}Q: {question}\nP:"
            for setting in SETTINGS:
                llm.draft_tokens, llm.draft_agreement = setting
                llm.decode_stats = {}
                llm._llm.n_tokens = min(llm._llm.n_tokens, prefix_tokens - 2)  # the question is evaluated again
                t0 = time.perf_counter()
                text = llm.complete(prompt, grammar=planner.grammar, max_tokens=planner.max_tokens, stop=["\n"])
                per[setting].append((time.perf_counter() - t0, text, dict(llm.decode_stats)))
            echo(f"[{n}/{len(questions)}] {question}: "
                 + ", ".join(f"{label(s)} {per[s][-1][0]:.2f} s" for s in SETTINGS))
    finally:
        llm.draft_tokens, llm.draft_agreement = saved
    base = per[SETTINGS[0]]
    figures: dict = {"questions": len(questions), "llama_cpp_instruction_sets": cpu}
    for s in SETTINGS:
        rows = per[s]
        total = sum(r[0] for r in rows)
        stats = [r[2] for r in rows]
        drafted = sum(x.get("drafted", 0) for x in stats)
        figures[key(s)] = {
            "total_s": round(total, 2), "median_s": round(statistics.median(r[0] for r in rows), 2),
            "vs_none": round(total / sum(r[0] for r in base), 3),
            "passes": sum(x.get("passes", 0) for x in stats),
            "refused": sum(x.get("refused", 0) for x in stats),
            "accepted_share": round(sum(x.get("accepted", 0) for x in stats) / drafted, 3) if drafted else None,
            "same_plans": sum(a[1] == b[1] for a, b in zip(rows, base)),
        }
    return figures


def table(figures: dict) -> str:
    rows = ["| guessed tokens / agreement | total | median | vs none | forward passes | guesses kept "
            "| arg-max refused | same plans |",
            "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for s in SETTINGS:
        f = figures[key(s)]
        kept = "" if f["accepted_share"] is None else f"{f['accepted_share']:.0%}"
        rows.append(f"| {label(s)} | {f['total_s']:.1f} s | {f['median_s']:.2f} s | {f['vs_none']:.2f} | "
                    f"{f['passes']} | {kept} | {f.get('refused', '')} | {f['same_plans']} of {figures['questions']} |")
    return "\n".join(rows)


def _busy_program() -> subprocess.Popen:
    """Another program that keeps one core busy (a loop at the user's priority), as a
    build, a browser tab or a video call does."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def run_threads(registry, *, echo: Callable[[str], None] = lambda _: None, limit: int | None = None) -> dict:
    """Each question's first plan step written with the planner's threads fixed and
    with the pacer choosing them pass by pass, in turns; first on this machine as it
    is, then beside :func:`_busy_program`. The pacer is the planner's own, so it
    learns the idle speed first, as in the app."""
    llm, planner, prefix_tokens = _prepared(registry, echo)
    questions = QUESTIONS[:limit] if limit else QUESTIONS
    pacer, most = llm.pacer, llm.pacer.most
    figures: dict = {"questions": len(questions), "threads": most}
    try:
        for machine in ("idle", "busy"):
            other = _busy_program() if machine == "busy" else None
            per: dict[str, list[tuple[float, str, dict]]] = {"fixed": [], "paced": []}
            try:
                for n, question in enumerate(questions, 1):
                    prompt = f"{planner.prefix}Q: {question}\nP:"
                    for mode in per:
                        llm.pacer = pacer if mode == "paced" else None
                        llm._llm._ctx.set_n_threads(most, most)
                        llm.decode_stats = {}
                        llm._llm.n_tokens = min(llm._llm.n_tokens, prefix_tokens - 2)
                        t0 = time.perf_counter()
                        text = llm.complete(prompt, grammar=planner.grammar, max_tokens=planner.max_tokens,
                                            stop=["\n"])
                        per[mode].append((time.perf_counter() - t0, text, dict(llm.decode_stats)))
                    echo(f"[{machine} {n}/{len(questions)}] {question}: "
                         + ", ".join(f"{m} {per[m][-1][0]:.2f} s" for m in per))
            finally:
                if other is not None:
                    other.kill()
                    other.wait()
            fixed, paced = per["fixed"], per["paced"]
            passes = sum(r[2].get("passes", 0) for r in paced)
            figures[machine] = {
                "fixed_total_s": round(sum(r[0] for r in fixed), 2),
                "fixed_median_s": round(statistics.median(r[0] for r in fixed), 2),
                "paced_total_s": round(sum(r[0] for r in paced), 2),
                "paced_median_s": round(statistics.median(r[0] for r in paced), 2),
                "paced_vs_fixed": round(sum(r[0] for r in paced) / sum(r[0] for r in fixed), 3),
                "one_thread_share": round(sum(r[2].get("one_thread_passes", 0) for r in paced) / passes, 3)
                if passes else 0.0,
                "same_plans": sum(a[1] == b[1] for a, b in zip(fixed, paced)),
            }
    finally:
        llm.pacer = pacer
        llm._llm._ctx.set_n_threads(pacer.current, pacer.current)
    return figures


def threads_table(figures: dict) -> str:
    rows = [f"| machine | {figures['threads']} threads fixed: total | median | paced: total | median "
            "| paced / fixed | passes on one thread | same plans |",
            "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for machine in ("idle", "busy"):
        f = figures[machine]
        rows.append(f"| {machine} | {f['fixed_total_s']:.1f} s | {f['fixed_median_s']:.2f} s | "
                    f"{f['paced_total_s']:.1f} s | {f['paced_median_s']:.2f} s | {f['paced_vs_fixed']:.2f} | "
                    f"{f['one_thread_share']:.0%} | {f['same_plans']} of {figures['questions']} |")
    return "\n".join(rows)
