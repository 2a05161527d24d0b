"""`python -m piton`: the same as the `piton` command."""

from piton.cli.main import main

main()
