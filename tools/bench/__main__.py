"""``python -m tidu_compile.tools.bench``: the same as ``tidu-compile bench``."""

import sys

from tidu_compile.tools.bench.main import main

sys.exit(main())
