#!/bin/sh
# The Redis example's checker: every commit: key on the restarted master, `have <id>` when intact.
exec python3 "$(dirname "$0")/resp.py" check
