"""Spins forever: the deadline must be enforced from outside."""


def spin(x):
    while True:
        x += 1
