"""Write a generated world (dump + index + Wikidata N-Triples) into a folder you name.

    python scripts/make_world.py /tmp/world-1k --events 1000 --others 4000

See causalkg/testing/world.py for what is in it.
"""

import sys

from causalkg.testing.world import main

if __name__ == "__main__":
    sys.exit(main())
