#!/bin/sh
# Every public header compiles on its own (no other include before it) as
# strict C11 with every warning an error, with each compiler given:
#   compile_alone.sh INCLUDE_DIR CC [CC...]
# A header that needs another one must include it itself. Also checks that
# the umbrella quiver/quiver.h includes every other public header.
set -u
inc=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
n=0
for cc in "$@"; do
  for h in "$inc"/quiver/*.h; do
    name=$(basename "$h")
    printf '#include "quiver/%s"\n#include "quiver/%s" /* twice: include guard */\n' \
      "$name" "$name" > "$tmp/alone.c"
    if ! "$cc" -std=c11 -Wall -Wextra -pedantic -Werror -I"$inc" -c "$tmp/alone.c" \
         -o "$tmp/alone.o" 2> "$tmp/err"; then
      echo "FAIL: $cc: quiver/$name alone:"
      cat "$tmp/err"
      fail=1
    fi
    n=$((n + 1))
  done
done
[ "$n" -gt 0 ] || { echo "no headers found under $inc/quiver"; exit 1; }
# The umbrella header includes every public header.
for h in "$inc"/quiver/*.h; do
  name=$(basename "$h")
  [ "$name" = quiver.h ] && continue
  if ! grep -q "^#include \"quiver/$name\"" "$inc/quiver/quiver.h"; then
    echo "FAIL: quiver/quiver.h does not include quiver/$name"
    fail=1
  fi
done
echo "$n header compilations ($*)"
exit $fail
