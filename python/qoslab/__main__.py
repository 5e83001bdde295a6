"""``python -m qoslab`` = the ``qoslab`` command."""

from qoslab.cli import main

main()
