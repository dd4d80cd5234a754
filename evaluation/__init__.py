"""Shared core of testgen: records, JSONL I/O, the plugin registry, datasets, the
sandboxed executor and the HumanEval+/MBPP+ evaluator.

Importing this package does no work and imports no heavy dependency.
"""

__version__ = "0.1.0"
