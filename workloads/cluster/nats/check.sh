#!/bin/sh
# The NATS example's checker: every message of the stream, `have <id>` when intact.
exec python3 "$(dirname "$0")/jetstream.py" check
