"""`python -m ragen_torch`: start the worker (src/engine/torch.ts does this)."""

import sys

from .worker import main

sys.exit(main())
