"""A worker object for the interrupt tests of ``causalkg.core.processes`` (not collected: its name
does not start with test_). ``Blocker.run(i)`` returns ``i`` at once, or, for the items in
``hold``, marks that it started and then waits until the file ``release`` exists (for ever, in
the signal test). Run as a script it is the parent that the test signals:
``python -m tests.causalkg.pool_blocker FOLDER`` runs a two-worker pool on items 0 and 1, both
held, inside ``stop_on_signals``, and exits the way the CLI does on an interrupt."""

from __future__ import annotations

import sys
import time
from pathlib import Path


class Blocker:
    def __init__(self, folder: str, hold: tuple[int, ...]):
        self.folder = Path(folder)
        self.hold = set(hold)

    def run(self, i: int) -> int:
        if i in self.hold:
            (self.folder / f"started-{i}").write_text("")
            while not (self.folder / "release").exists():
                time.sleep(0.05)
        return i


def main(folder: str) -> int:
    from causalkg.core.interrupts import Interrupted, stop_on_signals
    from causalkg.core.processes import WorkerPool

    with stop_on_signals():
        pool = WorkerPool(Blocker, (folder, (0, 1)), 2, threads=1)
        try:
            for item, _ in pool.map_ordered("run", iter([0, 1]), lambda i: (i,)):
                print(item)
        except KeyboardInterrupt as exc:
            pool.stop()
            stop = Interrupted.of(exc, "the pool was stopped")
            print(stop.line(), file=sys.stderr)
            return stop.exit_code
        finally:
            pool.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
