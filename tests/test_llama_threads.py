"""The planner's thread count per pass (models/runtime/llama_threads.py), from the
passes' own times: all threads on an idle machine, one while another program holds
a core, all again once they are faster."""
from __future__ import annotations

from models.runtime.llama_threads import PROBE_EVERY, SLOW_RATIO, ThreadPacer


def _run(pacer: ThreadPacer, seconds_for, passes: int) -> list[int]:
    """Make ``passes`` passes, each taking ``seconds_for(threads)``; the counts used."""
    used = []
    for _ in range(passes):
        n = pacer.threads()
        used.append(n)
        pacer.record(n, seconds_for(n))
    return used


def test_an_idle_machine_keeps_all_threads_through_the_usual_jitter():
    pacer = ThreadPacer(2)
    jitter = iter([0.047, 0.050, 0.062, 0.048, 0.071, 0.046, 0.052] * 20)
    assert set(_run(pacer, lambda _n: next(jitter), 140)) == {2}
    assert pacer.switches == 0


def test_shared_cores_move_to_one_thread_and_probes_bring_all_threads_back():
    pacer = ThreadPacer(2)
    _run(pacer, lambda n: 0.05 if n == 2 else 0.09, 10)  # idle: two threads are fastest
    assert pacer.current == 2
    # another program takes a core: two threads wait on each other, one does not
    busy = _run(pacer, lambda n: 0.05 * (SLOW_RATIO + 1.5) if n == 2 else 0.09, 60)
    assert pacer.current == 1 and busy[-1] == 1
    # a pass with two threads every PROBE_EVERY passes, and it stays at one (still slower)
    probes = busy[busy.index(1):].count(2)
    assert 2 <= probes <= len(busy) // PROBE_EVERY + 1
    # the program ends: the next probe is faster than one thread, and two threads stay
    after = _run(pacer, lambda n: 0.05 if n == 2 else 0.09, PROBE_EVERY + 10)
    assert pacer.current == 2 and after[-10:] == [2] * 10
    assert pacer.switches == 2


def test_one_slow_pass_does_not_switch():
    pacer = ThreadPacer(2)
    _run(pacer, lambda _n: 0.05, 20)
    pacer.record(2, 0.05 * SLOW_RATIO * 1.5)  # one stall (a page fault, a burst elsewhere)
    assert pacer.current == 2


def test_a_single_thread_model_is_never_probed():
    pacer = ThreadPacer(1)
    assert set(_run(pacer, lambda _n: 1.0, 50)) == {1} and pacer.switches == 0
