"""Deletes a directory the test created outside the scratch dir (__DECOY__ is substituted)."""
import shutil


def wipe():
    shutil.rmtree("__DECOY__")
    return True
