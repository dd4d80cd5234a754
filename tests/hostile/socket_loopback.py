"""Connects to a TCP listener on the host's loopback (__PORT__ is substituted)."""
import socket


def call_home():
    s = socket.create_connection(("127.0.0.1", __PORT__), timeout=2)
    s.sendall(b"leak")
    return True
