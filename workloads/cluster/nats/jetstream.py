#!/usr/bin/env python3
"""A tiny NATS JetStream client for the 3-node NATS example (docs/cluster.md).

Debian 12 ships nats-server but no NATS client program and no Python library (only Go sources),
so this speaks NATS's text protocol itself over TCP on the nodes' loopback addresses: INFO,
CONNECT, PING/PONG, SUB, PUB and MSG/HMSG, and JetStream's request/reply API ($JS.API.*).

  jetstream.py publish COUNT [WAIT]   create stream POWERCUT (file storage, 3 replicas, every
                                      other setting the default), then publish commit.1 ..
                                      commit.COUNT, acking each id on POWERCUT_ACK_FD once its
                                      PubAck arrived (the stream's quorum stored it)
  jetstream.py check                  read every message back (stream info, then each sequence):
                                      `have <id>` per message whose payload is intact; retries
                                      until the stream's leader answers (the launcher's
                                      --timeout ends it: no quorum)
"""
import base64
import json
import os
import socket
import sys
import time

STREAM = "POWERCUT"


class Nats:
    """One connection: requests are sent one at a time and wait for their reply."""

    def __init__(self, address, timeout):
        self.sock = socket.create_connection((address, 4222), timeout=timeout)
        self.buf = b""
        self.inbox = "_INBOX.powercut"
        self.next_reply = 0
        self.read_line()  # INFO {...}
        self.send(b'CONNECT {"verbose":false,"pedantic":false,"headers":true,'
                  b'"no_responders":true}\r\nPING\r\n')
        while self.read_line() != b"PONG":
            pass
        self.send(f"SUB {self.inbox}.* 1\r\n".encode())

    def send(self, data):
        self.sock.sendall(data)

    def read_line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("the server closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        if line == b"PING":
            self.send(b"PONG\r\n")
            return self.read_line()
        if line.startswith(b"-ERR"):
            raise ConnectionError(line.decode(errors="replace"))
        return line

    def read_bytes(self, n):
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("the server closed the connection")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def request(self, subject, payload):
        """The reply's payload; None for 'no responders' (no leader yet)."""
        self.next_reply += 1
        reply = f"{self.inbox}.{self.next_reply}"
        self.send(f"PUB {subject} {reply} {len(payload)}\r\n".encode() + payload + b"\r\n")
        while True:
            words = self.read_line().split()
            if words[0] == b"MSG":  # MSG subject sid [reply] bytes
                data = self.read_bytes(int(words[-1]))
                if words[1].decode() == reply:
                    return data
            elif words[0] == b"HMSG":  # HMSG subject sid [reply] header_bytes total_bytes
                data = self.read_bytes(int(words[-1]))
                if words[1].decode() == reply:
                    headers = data[:int(words[-2])]
                    if b" 503" in headers.split(b"\r\n", 1)[0]:
                        return None
                    return data[int(words[-2]):]


def connect(timeout):
    """A connection to the first node that accepts one."""
    errors = []
    for address in os.environ["POWERCUT_NODE_ADDRS"].split(","):
        try:
            return Nats(address, timeout)
        except OSError as e:
            errors.append(f"{address}: {e}")
    raise ConnectionError("; ".join(errors))


def api(subject, body, deadline, what):
    """A JetStream API call, retried (new connection, new try) until it answers without an
    error or `deadline` passes."""
    last = "no answer"
    while time.monotonic() < deadline:
        try:
            conn = connect(timeout=5)
            while time.monotonic() < deadline:
                reply = conn.request(subject, json.dumps(body).encode())
                if reply is None:
                    last = "no responders"
                else:
                    answer = json.loads(reply)
                    if "error" not in answer:
                        return answer
                    last = json.dumps(answer["error"])
                    # No message at that sequence, no such stream: answers, not waits.
                    if answer["error"].get("err_code") in (10037, 10059):
                        return answer
                time.sleep(0.2)  # polling with a deadline: the meta leader is being elected
        except (OSError, ValueError) as e:
            last = str(e)
            time.sleep(0.2)
    raise TimeoutError(f"{what}: {last}")


def publish(count, wait):
    ack_fd = int(os.environ["POWERCUT_ACK_FD"])
    deadline = time.monotonic() + wait
    api(f"$JS.API.STREAM.CREATE.{STREAM}",
        {"name": STREAM, "subjects": ["commit.>"], "storage": "file", "num_replicas": 3},
        deadline, "creating the stream")
    conn = connect(timeout=30)
    for i in range(1, count + 1):
        ack = conn.request(f"commit.{i}", f"value {i}".encode())
        answer = json.loads(ack) if ack is not None else {"error": "no responders"}
        if "error" in answer or answer.get("stream") != STREAM:
            sys.exit(f"publish commit.{i}: {answer}")
        os.write(ack_fd, f"ack {i}\n".encode())


def check():
    deadline = time.monotonic() + 1e9  # the launcher's --timeout ends it
    info = api(f"$JS.API.STREAM.INFO.{STREAM}", {}, deadline, "stream info")
    if "error" in info:
        return  # no stream: nothing was kept
    state = info["state"]
    for seq in range(state.get("first_seq", 1), state.get("last_seq", 0) + 1):
        got = api(f"$JS.API.STREAM.MSG.GET.{STREAM}", {"seq": seq}, deadline, f"message {seq}")
        if "error" in got:
            continue
        message = got["message"]
        key = message["subject"][len("commit."):]
        data = base64.b64decode(message.get("data", "")).decode(errors="replace")
        print(("have " if data == f"value {key}" else "corrupt ") + key, flush=True)


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "publish":
        publish(int(sys.argv[2]), float(sys.argv[3]) if len(sys.argv) > 3 else 180)
    elif len(sys.argv) == 2 and sys.argv[1] == "check":
        check()
    else:
        sys.exit(2)


if __name__ == "__main__":
    main()
