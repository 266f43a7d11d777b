#!/usr/bin/env bash
# Fails, naming them, when files under src/ are missing from the code map
# in docs/ARCHITECTURE.md: a file is mapped when its path, or the path of a
# folder below src/ holding it (with its trailing slash), is written there in
# backquotes.
set -euo pipefail
cd "$(dirname "$0")/.."
map=docs/ARCHITECTURE.md
missing=()
while IFS= read -r file; do
  mapped=
  path=$file
  while [ "$path" != "src" ] && [ "$path" != "." ]; do
    if [ "$path" = "$file" ]; then quoted="\`$path\`"; else quoted="\`$path/\`"; fi
    if grep -qF -- "$quoted" "$map"; then mapped=yes; break; fi
    path=$(dirname "$path")
  done
  [ -n "$mapped" ] || missing+=("$file")
done < <(git ls-files --cached --others --exclude-standard src)
if [ ${#missing[@]} -gt 0 ]; then
  echo "docs/ARCHITECTURE.md's code map misses ${#missing[@]} file(s) under src/; add a row for each:" >&2
  printf '  %s\n' "${missing[@]}" >&2
  exit 1
fi
echo "code map: every file under src/ is in docs/ARCHITECTURE.md"
