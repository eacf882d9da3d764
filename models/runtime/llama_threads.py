"""How many threads llama.cpp decodes the planner's next pass with.

llama.cpp's CPU threads meet at a barrier after every layer of a pass, hundreds of
times per token. On two cores with another busy program, one of two threads is
always waiting for a core, and the whole pass waits with it: three plans took 16.7 s
with two threads beside a busy loop, 9.5 s with one, 5.2 s with two on an idle
machine (#43). Fewer threads are right only while something else holds a core, so
the choice is made pass by pass from the passes' own times per token (a pass over
six tokens took 282 ms, over one 62 ms: the time grows with the tokens evaluated):

- with all threads, passes taking ``SLOW_RATIO`` times the fastest all-thread pass
  seen so far (typically, per token) mean the cores are shared: the next passes use
  one thread;
- with one thread, every ``PROBE_EVERY``-th pass tries all threads again, and all
  threads stay when that pass was faster than one thread's passes are now.

Times are smoothed (``SMOOTHING``) so that one slow pass (a page fault, a burst of
another program) does not switch. Nothing here knows about llama.cpp; the planner
applies the count.
"""
from __future__ import annotations

#: An all-thread pass this many times slower than the fastest one seen: cores are shared.
SLOW_RATIO = 1.8
#: With one thread, every how many passes all threads are tried again.
PROBE_EVERY = 12
#: Weight of the newest pass in the running time per pass.
SMOOTHING = 0.3


class ThreadPacer:
    """The thread count for each pass of one model, from the times of the passes before."""

    def __init__(self, most: int):
        self.most = max(1, int(most))
        self.fastest: float | None = None  # seconds per token of the fastest pass with all threads
        self.typical: dict[int, float] = {}  # threads -> smoothed seconds per token
        self.current = self.most
        self._since_probe = 0
        self._probing = False
        self.switches = 0  # how often the count changed (for benchmarks and logs)

    def threads(self) -> int:
        """The count for the next pass."""
        if self.current < self.most:
            self._since_probe += 1
            if self._since_probe >= PROBE_EVERY:
                self._since_probe = 0
                self._probing = True
                return self.most
        return self.current

    def record(self, threads: int, seconds: float) -> None:
        """The pass just made with ``threads`` took ``seconds`` per token it evaluated."""
        probing, self._probing = self._probing, False
        if threads == self.most:
            self.fastest = seconds if self.fastest is None else min(self.fastest, seconds)
        before = self.typical.get(threads)
        if probing:
            # a probe: all threads come back if they now beat one thread's passes
            if threads == self.most and (before_one := self.typical.get(self.current)) is not None \
                    and seconds < before_one:
                self.typical[threads] = seconds
                self._switch(self.most)
            return
        self.typical[threads] = seconds if before is None else before + SMOOTHING * (seconds - before)
        if self.most > 1 and threads == self.most and self.fastest is not None \
                and self.typical[threads] > SLOW_RATIO * self.fastest:
            self._switch(1)

    def _switch(self, threads: int) -> None:
        if threads != self.current:
            self.current = threads
            self._since_probe = 0
            self.switches += 1
