#!/usr/bin/env bash
# Writes gpubind's man pages from the CLI's own help, so the two cannot drift:
#   gpubind.1            from `gpubind help` (the command table)
#   gpubind-COMMAND.1    from `gpubind COMMAND --help` (flags, examples)
# Usage: gen-man.sh PATH_TO_GPUBIND OUTDIR
set -euo pipefail
GPUBIND=$1
OUT=$2
mkdir -p "$OUT"
version=$("$GPUBIND" --version | awk '{print $2}')

# roff: backslashes, leading dots/quotes, and '-' as \- so options copy and paste correctly.
escape() { sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/" -e 's/-/\\-/g'; }

page() {  # page NAME SUMMARY TEXT_FILE SEE_ALSO
  local name=$1 summary=$2 text=$3 see=$4 upper
  upper=$(echo "$name" | tr '[:lower:]' '[:upper:]')
  {
    echo ".TH $upper 1 \"\" \"gpubind $version\" \"gpubind manual\""
    echo ".SH NAME"
    echo "$name \\- $(echo "$summary" | escape)"
    echo ".SH DESCRIPTION"
    echo ".nf"
    escape <"$text"
    echo ".fi"
    echo ".SH EXIT STATUS"
    echo "0 success; 1 runtime error; 2 usage error; 3 check or watch found problems; rebind: 4 refused, 5 no permission;"
    echo "exec: 125 gpubind failed, 126 not executable, 127 not found, else the command's own status."
    echo ".SH SEE ALSO"
    echo "$see"
  } >"$OUT/$name.1"
}

tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
"$GPUBIND" help >"$tmp"
commands=$(awk '/^  [a-z]/{print $1}' "$tmp")
see=$(for c in $commands; do printf '.BR gpubind\\-%s (1),\n' "$c"; done | sed '$ s/,$//')
page gpubind "bind GPU workers to the CPUs, memory and NIC nearest their GPU" "$tmp" "$see"
for c in $commands; do
  summary=$(awk -v c="$c" '$1 == c { $1 = ""; sub(/^ +/, ""); print }' "$tmp")
  # Commands made of subcommands: the command's help, then its subcommand's.
  if [ "$c" = slurm ] || [ "$c" = k8s ]; then
    sub=$([ "$c" = slurm ] && echo gres-conf || echo check)
    { "$GPUBIND" "$c" --help; echo; "$GPUBIND" "$c" "$sub" --help; } >"$tmp.c" || true
  else
    "$GPUBIND" "$c" --help >"$tmp.c" 2>&1 || true
  fi
  page "gpubind-$c" "$summary" "$tmp.c" ".BR gpubind (1)"
done
rm -f "$tmp.c"
# Each page also compressed, as installed (Debian policy): gzip -9n keeps no name or time stamp,
# so the package is reproducible.
for f in "$OUT"/*.1; do gzip -9nkf "$f"; done
