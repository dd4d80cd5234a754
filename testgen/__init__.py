"""testgen: measure how well LLMs write tests (Xiong, Guo, Chen, arXiv 2310.05727).

Generation of tests and code (settings, prompts, backends, extraction), the test metrics
(P, P', coverage), reports, and the ``testgen`` CLI. Importing it does no work."""

__version__ = "0.1.0"
