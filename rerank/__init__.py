"""Rerankers: pure functions from an outcome matrix to a ranking of solutions.

CodeT (Chen et al., ICLR 2023) and its SG/RW variants (Xiong et al., arXiv 2310.05727),
MBR-exec (Shi et al., 2022), B4 (Chen et al., ASE 2024), random; and the ``rerank`` CLI.
"""

__version__ = "0.1.0"
