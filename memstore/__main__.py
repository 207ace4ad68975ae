"""``python -m memstore``."""

from .cli import main

main()
