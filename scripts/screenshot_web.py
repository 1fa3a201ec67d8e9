"""Screenshot a page of ``causalkg serve`` for the README (default: the concept page of earthquake).

    .venv/bin/python scripts/screenshot_web.py [--data data] [--path /concept/Q7944] [--out docs/img/concept-page.png]

Starts ``causalkg serve`` on a free loopback port over ``--data`` (the KG of ``make kg``), opens
the page in Debian's headless Chromium (``causalkg.testing.browser``), waits for its main heading,
and saves a PNG of the page's content (at most ``--height`` pixels high).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="data")
    ap.add_argument("--path", default="/concept/Q7944")
    ap.add_argument("--out", default="docs/img/concept-page.png")
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--height", type=int, default=900)
    args = ap.parse_args()

    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    from causalkg.testing.browser import headless_chromium

    proc = subprocess.Popen([sys.executable, "-m", "causalkg.cli", "--set", f"paths.data={args.data}", "serve",
                             "--port", "0", "--judgements", "/dev/null"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = None
        for line in proc.stdout:  # type: ignore[union-attr]
            m = re.search(r"serving the KG on (http://\S+/)", line)
            if m:
                url = m.group(1).rstrip("/")
                break
        if url is None:
            print("causalkg serve did not start", file=sys.stderr)
            return 1
        with headless_chromium(args.width, args.height) as driver:
            driver.get(url + args.path)
            WebDriverWait(driver, 60).until(EC.visibility_of_element_located((By.TAG_NAME, "h1")))
            height = driver.execute_script("return document.body.scrollHeight")
            driver.set_window_size(args.width, min(args.height, int(height) + 20))
            out = Path(args.out)
            out.parent.mkdir(parents=True, exist_ok=True)
            driver.save_screenshot(str(out))
            print(f"wrote {out}")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
