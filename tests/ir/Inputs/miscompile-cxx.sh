#!/bin/sh
# A test-only "miscompiling" C++ compiler (TESSERA_CXX): it compiles like g++,
# except that in the kernel whose entry symbol is MISCOMPILE_KERNEL (tsr_...)
# it first applies the sed expression MISCOMPILE_SED (from that kernel's
# definition to the end of the source). The kernel's recorded source and
# digest stay the ones Tessera rendered: only the machine code is wrong, as
# with a real compiler bug.
set -eu
bad=""
for a in "$@"; do
  shift
  case "$a" in
    *.cpp)
      if [ -n "${MISCOMPILE_KERNEL:-}" ] && grep -q "extern \"C\" void ${MISCOMPILE_KERNEL}(" "$a"; then
        # outside the cache entry, which must hold exactly what Tessera put there
        bad=$(mktemp --suffix=.cpp)
        sed "/extern \"C\" void ${MISCOMPILE_KERNEL}(/,\$ ${MISCOMPILE_SED}" "$a" > "$bad"
        a=$bad
      fi
      ;;
  esac
  set -- "$@" "$a"
done
status=0
g++ "$@" || status=$?
[ -z "$bad" ] || rm -f "$bad"
exit $status
