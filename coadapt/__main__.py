"""`python -m coadapt`: the same as the `coadapt` command."""

from coadapt.cli import main

main()
