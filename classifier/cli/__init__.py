"""The ``classify`` command line: the click group and its commands (``main``), the options they
share (``options``), ``explain`` and ``evaluate`` (``examining``), ``sweep`` and ``compare``
(``sweeping``), what a command checks before its slow imports (``startup``) and what reaches
the terminal (``terminal``). Thin: it parses and delegates.

It may import every other package.
"""
