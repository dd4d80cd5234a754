"""Tries to allocate far more memory than the address-space limit allows."""


def huge():
    return len(bytearray(1 << 40))


def grow():
    chunks = []
    while True:
        chunks.append(bytearray(64 << 20))
