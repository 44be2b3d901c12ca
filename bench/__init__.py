"""Benchmarks: each module ``bench/<name>.py`` defines ``main()`` that prints a table.

Run all with ``make bench`` (``python -m bench``) or one with ``python -m bench <name>``.
Figures compare mrecd against a floor measured in the same run: read the ratios.
"""
