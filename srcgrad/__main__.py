"""``python -m srcgrad``: see srcgrad/cli.py."""

import sys

from srcgrad.cli import main

sys.exit(main())
