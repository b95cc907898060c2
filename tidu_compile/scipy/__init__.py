"""``tidu_compile.scipy``: scipy's names for the differentiable subset (``special``,
``stats``), as ``tidu_compile.numpy`` is numpy's."""
