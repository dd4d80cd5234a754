"""``testgen study``: the whole study of Xiong, Guo, Chen (arXiv 2310.05727) from one TOML spec.

:mod:`testgen.study.spec` parses the spec into frozen dataclasses, :mod:`testgen.study.plan`
builds the step graph keyed by configuration hashes, :mod:`testgen.study.runner` runs it
(resumable, kill-safe, ``--jobs``), :mod:`testgen.study.tables` writes the paper's tables and
figures. Nothing is imported here, so ``import testgen.study`` stays cheap.
"""
