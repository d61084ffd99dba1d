#!/bin/sh
# Regenerate openapi.json (from the Python app: hippocampus/server/openapi.py) and src/schema.d.ts (from
# openapi.json, by the pinned openapi-typescript). PYTHON names the interpreter that has hippocampus installed
# (default: the repository's .venv when there is one, else python3). With OUT_DIR set, both files are written
# there instead (the drift test compares them with the committed ones).
set -eu
cd "$(dirname "$0")/.."
if [ -z "${PYTHON:-}" ]; then
  if [ -x ../../.venv/bin/python ]; then PYTHON=../../.venv/bin/python; else PYTHON=python3; fi
fi
OUT="${OUT_DIR:-.}"
mkdir -p "$OUT/src"
"$PYTHON" -m hippocampus.server.openapi "$OUT/openapi.json"
./node_modules/.bin/openapi-typescript "$OUT/openapi.json" --output "$OUT/src/schema.d.ts" >/dev/null
echo "wrote $OUT/openapi.json and $OUT/src/schema.d.ts"
