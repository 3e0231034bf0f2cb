# bash completion for orchctl; installed as share/bash-completion/completions/orchctl.
# Worker ids and model names come from the running orchd ('orchctl ps'),
# through the --socket given on the line when there is one.

_orchctl_ps_column() { # $1: 1 = worker ids, 2 = model names
	local sock=() i
	for ((i = 1; i < ${#COMP_WORDS[@]} - 1; i++)); do
		[[ ${COMP_WORDS[i]} == --socket ]] && sock=(--socket "${COMP_WORDS[i + 1]}")
	done
	orchctl ps "${sock[@]}" 2>/dev/null | awk -v c="$1" 'NR > 1 { print $c }' | sort -u
}

_orchctl() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
	local cmds="status ps load unload rm attach logs inspect pull models version --help --version --json --socket"
	COMPREPLY=()
	if ((COMP_CWORD == 1)); then
		mapfile -t COMPREPLY < <(compgen -W "$cmds" -- "$cur")
		return
	fi
	case $prev in
	--socket | --token-file)
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
		return ;;
	--model-dir)
		mapfile -t COMPREPLY < <(compgen -d -- "$cur")
		return ;;
	--topic)
		mapfile -t COMPREPLY < <(compgen -W "log step" -- "$cur")
		return ;;
	--device)
		mapfile -t COMPREPLY < <(compgen -W "cpu cuda:0 cuda:1 cuda:2 cuda:3" -- "$cur")
		return ;;
	--tokenizer)
		mapfile -t COMPREPLY < <(compgen -W "gguf hf-json" -- "$cur")
		return ;;
	--kv-block-tokens)
		mapfile -t COMPREPLY < <(compgen -W "8 16 32 64 128 256" -- "$cur")
		return ;;
	--slots | --context | --replicas | --count | --timeout-ms | --lines | -n | --kv-cache-mib | --endpoint)
		return ;;
	esac
	local opts words=() cmd= i
	for ((i = 1; i < COMP_CWORD; i++)); do # the command: the first word not a global option
		case ${COMP_WORDS[i]} in
		--socket) ((i++)) ;;
		-*) ;;
		*) cmd=${COMP_WORDS[i]}; break ;;
		esac
	done
	if [[ -z $cmd ]]; then
		mapfile -t COMPREPLY < <(compgen -W "$cmds" -- "$cur")
		return
	fi
	case $cmd in
	status | ps) opts="--json --socket" ;;
	load)
		opts="--device --slots --context --replicas --tokenizer --kv-cache-mib --kv-cache-fraction --kv-block-tokens --no-prefix-cache --pull --token-file --no-wait --json --socket"
		mapfile -t words < <(_orchctl_ps_column 2) ;;
	unload | rm)
		opts="--json --socket"
		mapfile -t words < <(_orchctl_ps_column 2) ;;
	attach)
		opts="--dump --gdb --topic --count --timeout-ms --json --socket"
		mapfile -t words < <(_orchctl_ps_column 1) ;;
	logs)
		opts="--lines --follow --json --socket"
		mapfile -t words < <(_orchctl_ps_column 1; _orchctl_ps_column 2) ;;
	inspect) opts="--json --tensors --context --slots --kv-cache-mib --kv-cache-fraction --kv-block-tokens" ;;
	pull) opts="--model-dir --token-file --endpoint --offline --json" ;;
	models) opts="--model-dir --json" ;;
	esac
	if [[ $cur == -* ]]; then
		mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
	elif [[ $cmd == inspect || ($cmd == load && $i -lt $((COMP_CWORD - 1))) ]]; then
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
	else
		mapfile -t COMPREPLY < <(compgen -W "${words[*]}" -- "$cur")
	fi
}
complete -F _orchctl orchctl
