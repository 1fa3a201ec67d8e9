"""Start ``causalkg serve`` as a real server process on 127.0.0.1 (for the tests)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path


class ServeProcess:
    """``causalkg serve --port 0`` in a child process; ``url`` once it listens (the command logs
    its address after the socket is listening, so requests made then wait for it, no polling)."""

    def __init__(self, data: Path, *extra: str, cwd: Path | None = None, env: dict[str, str] | None = None,
                 sets: tuple[str, ...] = ()) -> None:
        overrides = [arg for s in sets for arg in ("--set", s)]
        args = [sys.executable, "-m", "causalkg.cli", "--set", f"paths.data={data}", *overrides, "serve", "--port", "0",
                *extra]
        self.proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     cwd=cwd, env={**os.environ, **(env or {})})
        self.lines: list[str] = []
        self.url = ""
        for line in self.proc.stdout:  # type: ignore[union-attr]
            self.lines.append(line)
            m = re.search(r"serving the KG on (http://\S+/)", line)
            if m:
                self.url = m.group(1).rstrip("/")
                break
        if not self.url:
            self.proc.wait()
            raise RuntimeError("causalkg serve did not start:\n" + "".join(self.lines))
        # keep reading what it prints, so a full pipe never blocks it
        self._drain = threading.Thread(target=lambda: self.lines.extend(self.proc.stdout), daemon=True)
        self._drain.start()

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._drain.join(timeout=30)

    def __enter__(self) -> "ServeProcess":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
