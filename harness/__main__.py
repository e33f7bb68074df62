"""``python -m harness`` is the ``headscope`` command (also under accelerate/torchrun)."""

import sys

from harness.cli.main import main

sys.exit(main())
