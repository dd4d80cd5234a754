"""Floods stdout and stderr: 200 MB through print and raw writes to fd 1 and 2."""
import os
import sys


def flood():
    block = "x" * (1 << 20)
    for _ in range(100):
        print(block)
        sys.stderr.write(block)
    for _ in range(50):
        os.write(1, block.encode())
        os.write(2, block.encode())
    return 1


def forge():
    print("('T', 0, 0, None, '', 0.0, None)")
    print("PASSED")
    return 0
