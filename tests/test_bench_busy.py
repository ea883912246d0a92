"""bench/busy.py: the processes that keep cores busy while ``bench retrieval --busy N`` times."""

from __future__ import annotations

import multiprocessing
import time

from bench.busy import busy_cores


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100  # utime + stime, clock ticks


def test_busy_cores_spins_n_processes_for_the_block_only() -> None:
    # mutations caught: the workers never started -> none alive; not terminated -> still alive
    with busy_cores(2):
        children = multiprocessing.active_children()
        assert len(children) == 2
        time.sleep(1.5)
        assert all(_cpu_seconds(c.pid) > 0.05 for c in children if c.pid)  # spinning, not asleep
    assert all(not c.is_alive() for c in children)
    assert not multiprocessing.active_children()
