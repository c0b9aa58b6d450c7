# bash completion for gpubind. Commands and flags come from the binary's own help, so they
# never drift from it. Installed as /usr/share/bash-completion/completions/gpubind.
_gpubind() {
  local bin=${COMP_WORDS[0]} cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} cmd=${COMP_WORDS[1]:-}
  COMPREPLY=()
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "$("$bin" help 2>/dev/null | awk '/^  [a-z]/{print $1}') help --help --version" -- "$cur"))
    return
  fi
  # After "--" (exec, launch) complete the command to run.
  local i
  for ((i = 2; i < COMP_CWORD; i++)); do
    if [ "${COMP_WORDS[i]}" = "--" ]; then
      COMPREPLY=($(compgen -c -- "$cur"))
      return
    fi
  done
  local help
  if [ "$cmd" = slurm ] || [ "$cmd" = k8s ]; then
    local sub=gres-conf
    [ "$cmd" = k8s ] && sub=check
    [ "$COMP_CWORD" -eq 2 ] && { COMPREPLY=($(compgen -W "$sub" -- "$cur")); return; }
    help=$("$bin" "$cmd" "$sub" --help 2>/dev/null)
  else
    help=$("$bin" "$cmd" --help 2>/dev/null)
  fi
  case $prev in
    --topology)
      COMPREPLY=($(compgen -f -- "$cur") $(compgen -W "$(echo "$help" | grep -o 'example:NAME' >/dev/null &&
        "$bin" topo --topology example:none 2>&1 | sed -n 's/.*(built in: \(.*\))/\1/p' | tr -d ',' | sed 's/[^ ]*/example:&/g')" -- "$cur"))
      return ;;
    --format|--policy|--mem)
      # The choices CLI11 prints as TEXT:{a,b,c}.
      local choices
      choices=$(echo "$help" | grep -- "$prev " | sed -n 's/.*{\(.*\)}.*/\1/p' | tr ',' ' ')
      COMPREPLY=($(compgen -W "$choices" -- "$cur"))
      return ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$(echo "$help" | grep -oE -- '--[a-z][-a-z_]*' | sort -u)" -- "$cur"))
    return
  fi
  COMPREPLY=($(compgen -f -- "$cur"))
}
complete -F _gpubind gpubind
