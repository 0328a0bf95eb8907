#!/usr/bin/env python3
"""A tiny Redis client for the 3-node Redis example (docs/cluster.md).

Debian ships redis-cli, but a commit must be acked only after `WAIT 2` answered on the very
connection that sent its SET (WAIT counts the replicas that acknowledged this connection's
writes), and the ack must be written between two commands: one connection kept open, speaking
RESP over TCP to the master (node 1, the first of POWERCUT_NODE_ADDRS).

  resp.py publish COUNT [WAIT]   wait (at most WAIT seconds) until the master has 2 replicas
                                 online, then SET commit:I "value I" and WAIT 2 for I in
                                 1..COUNT, acking I on POWERCUT_ACK_FD once WAIT answered 2;
                                 a connection the master lost (its power was cut) is made again
                                 and the commit sent again
  resp.py check                  wait until the master answers (it is loading its AOF), then
                                 print `have <id>` for every commit:<id> whose value is intact
                                 (`corrupt <id>` otherwise); the launcher's --checker-timeout
                                 ends it when the master never answers
"""
import os
import socket
import sys
import time

PORT = 6379
WAIT_MS = 30000  # WAIT's own timeout: an answer below 2 after it is the workload's error


class Redis:
    """One connection; commands are sent one at a time and wait for their reply."""

    def __init__(self, address, timeout):
        self.sock = socket.create_connection((address, PORT), timeout=timeout)
        self.buf = b""

    def line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("the server closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def reply(self):
        line = self.line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RuntimeError(rest.decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise ConnectionError("the server closed the connection")
                self.buf += chunk
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data.decode(errors="replace")
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.reply() for _ in range(n)]
        raise ConnectionError(f"not RESP: {line!r}")

    def call(self, *words):
        out = [f"*{len(words)}\r\n".encode()]
        for w in words:
            b = str(w).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(b), b))
        self.sock.sendall(b"".join(out))
        return self.reply()


def master():
    return os.environ["POWERCUT_NODE_ADDRS"].split(",")[0]


def connect_with_replicas(deadline, wait):
    """A connection to the master once it has 2 replicas online (polling until `deadline`)."""
    last = "no answer"
    while True:  # polling with a deadline: the nodes are starting, the replicas syncing
        try:
            conn = Redis(master(), timeout=5)
            info = conn.call("INFO", "replication")
            online = sum(1 for l in info.splitlines() if l.startswith("slave") and "state=online" in l)
            if online >= 2:
                conn.sock.settimeout(WAIT_MS / 1000 + 30)
                return conn
            last = f"{online} replica(s) online"
        except (OSError, RuntimeError) as e:
            last = str(e)
        if time.monotonic() >= deadline:
            sys.exit(f"redis on {master()} had no 2 replicas online within {wait} s: {last}")
        time.sleep(0.2)


def publish(count, wait):
    ack_fd = int(os.environ["POWERCUT_ACK_FD"])
    conn = connect_with_replicas(time.monotonic() + wait, wait)
    i = 1
    while i <= count:
        try:
            if conn.call("SET", f"commit:{i}", f"value {i}") != "OK":
                sys.exit(f"SET commit:{i} was not OK")
            replicas = conn.call("WAIT", 2, WAIT_MS)
        except OSError:
            # The master lost its power (`--node-cuts`): once it is back with both replicas, the
            # same SET again (same key, same value: harmless if the first one took), then WAIT.
            conn = connect_with_replicas(time.monotonic() + wait, wait)
            continue
        if replicas < 2:
            sys.exit(f"WAIT 2 after SET commit:{i}: only {replicas} replica(s) acknowledged")
        os.write(ack_fd, f"ack {i}\n".encode())
        i += 1


def check():
    while True:  # the launcher's --checker-timeout ends it
        try:
            conn = Redis(master(), timeout=5)
            keys = conn.call("KEYS", "commit:*")
            break
        except (OSError, RuntimeError):  # not started yet, or LOADING its AOF
            time.sleep(0.2)
    for key in sorted(keys):
        value = conn.call("GET", key)
        ident = key[len("commit:"):]
        print(("have " if value == f"value {ident}" else "corrupt ") + ident, flush=True)


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "publish":
        publish(int(sys.argv[2]), float(sys.argv[3]) if len(sys.argv) > 3 else 180)
    elif len(sys.argv) == 2 and sys.argv[1] == "check":
        check()
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
