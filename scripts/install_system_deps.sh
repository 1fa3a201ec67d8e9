#!/usr/bin/env bash
# Install the Debian packages the test suite and METEOR need, when they are missing:
#   wordnet-base         WordNet 3.0 (METEOR's synonyms, read by NLTK offline)
#   virtuoso-opensource  a real SPARQL 1.1 server for the remote-export tests
#   chromium, chromium-driver  a real headless browser for the web UI test (tests/web/test_browser.py)
# Uses sudo when not root. Prints what it would need and fails clearly when it cannot install.
set -euo pipefail
need=()
[ -f /usr/share/wordnet/data.noun ] || need+=(wordnet-base)
command -v virtuoso-t >/dev/null 2>&1 || need+=(virtuoso-opensource)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
[ -x /usr/bin/chromedriver ] || need+=(chromium-driver)
if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
echo "installing Debian packages: ${need[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "error: need root (or sudo) to apt-get install ${need[*]}; install them and run again" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
# Debian's postinst may start Virtuoso listening on every interface; the tests start their own
# on 127.0.0.1, so stop any system instance.
if command -v service >/dev/null 2>&1; then $SUDO service virtuoso-opensource-7 stop >/dev/null 2>&1 || true; fi
echo "installed: ${need[*]}"
