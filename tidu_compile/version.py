"""The project's version, in a module of its own at the bottom of the layers: the code
generator's cache keys read it (``compiler.native.code_fingerprint``)."""

__version__ = "0.1.0"
