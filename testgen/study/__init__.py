"""``testgen study``: the whole study of Xiong, Guo, Chen (arXiv 2310.05727) from one TOML spec
(``docs/study.md``). Nothing is imported here, so ``import testgen.study`` stays cheap.
"""
