"""The ``classify`` command line: the click group and its commands (``main``), the options they
share (``options``), ``explain`` and ``evaluate`` (``examining``), ``sweep`` and ``compare``
(``sweeping``) and what a command checks before its slow imports (``startup``). Thin: it
parses and delegates.

It may import every other package.
"""
