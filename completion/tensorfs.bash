# bash completion for tensorfs(1)                                            -*- shell-script -*-
# Commands, their options, mount options after -o (comma lists: NAME, NAME=VALUE), mounted tensorfs folders for
# umount/stats, and tensor names after `tensorfs cat SOURCE ` (read from the source's header by `tensorfs ls`).
# Uses bash-completion's helpers (_init_completion, _filedir), as completions in its folder do.

_tensorfs_commands="mount umount ls info validate cat convert stats diff prefetch status cache csi help"

# Options that take a value (the next word).
_tensorfs_value_options=(-o --cache-size --threads --model --cache-dir --disk-cache-size --timeout --dtype --names
    --tensors --files --older-than --max-size --secrets-fd --endpoint --node-id --state-dir --local-root)

# `-o` options: tensorfs's own (NAME= takes a value), libfuse's, and mount(8)'s that tensorfs accepts.
_tensorfs_mount_options="cache_size= threads= export_dtype= model= cache_dir= disk_cache_size= max_connections=
    readahead= proxy= header= timeout= debug allow_other allow_root auto_unmount default_permissions fsname= subtype=
    max_read= ro rw dev nodev
    suid nosuid exec noexec atime noatime relatime nodiratime sync async dirsync defaults auto noauto user users
    nouser owner group nofail _netdev"

# Bash replaces only the text after the word's last COMP_WORDBREAKS character (`=` and `:` are among them), while
# the candidates are whole words: drop that leading part from each (as __ltrim_colon_completions does for `:`).
_tensorfs_ltrim_wordbreaks()
{
    local word=$1 i
    for ((i = ${#word} - 1; i >= 0; i--)); do
        if [[ $COMP_WORDBREAKS == *"${word:i:1}"* ]]; then
            local prefix=${word:0:i+1} j
            for j in "${!COMPREPLY[@]}"; do
                COMPREPLY[j]=${COMPREPLY[j]#"$prefix"}
            done
            return
        fi
    done
}

# The WORDs that start with CUR, each prefixed with HEAD, added to COMPREPLY.
_tensorfs_matching() # HEAD CUR WORD...
{
    local head=$1 cur=$2 word
    shift 2
    for word in "$@"; do
        [[ $word == "$cur"* ]] && COMPREPLY+=("$head$word")
    done
}

# The mount points of the running tensorfs mounts (fstype fuse.tensorfs); mountinfo writes a space as \040.
_tensorfs_mountpoints()
{
    local line fields
    [[ -r /proc/self/mountinfo ]] || return
    while read -r line; do
        read -ra fields <<<"${line#* - }"
        [[ ${fields[0]} == fuse.tensorfs ]] || continue
        read -ra fields <<<"$line"
        printf '%b\n' "${fields[4]}"
    done </proc/self/mountinfo
}

# -o's value: a comma list, of which only the last item is completed.
_tensorfs_complete_mount_option()
{
    local cur=$1 head="" item=$1
    if [[ $cur == *,* ]]; then
        head=${cur%,*},
        item=${cur##*,}
    fi
    if [[ $item == *=* ]]; then
        local name=${item%%=*} value=${item#*=}
        case $name in
            export_dtype) _tensorfs_matching "$head$name=" "$value" keep bf16 f16 f32 ;;
            cache_dir)
                local dirs dir
                mapfile -t dirs < <(compgen -d -- "$value")
                for dir in "${dirs[@]}"; do COMPREPLY+=("$head$name=$dir/"); done
                compopt -o nospace
                ;;
        esac
        return
    fi
    _tensorfs_matching "$head" "$item" $_tensorfs_mount_options
    [[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == *= ]] && compopt -o nospace
}

# The tensor names of SOURCE, one per line, from `tensorfs ls --json` (each tensor's "name" key sits at
# indentation 4). Names holding a JSON escape other than \" and \\ (control bytes) are left out: nobody types them.
_tensorfs_tensor_names()
{
    timeout 10 "$1" ls --json "${@:2}" 2>/dev/null |
        sed -n '/^    "name": "/{ /\\[^"\\]/d; s/^    "name": "\(.*\)",$/\1/; s/\\\(["\\]\)/\1/g; p; }'
}

_tensorfs_takes_value() # WORD
{
    local option
    for option in "${_tensorfs_value_options[@]}"; do
        [[ $1 == "$option" ]] && return 0
    done
    return 1
}

# The value of OPTION, when OPTION takes one (returns 1 when it does not).
_tensorfs_complete_value() # OPTION
{
    _tensorfs_takes_value "$1" || return 1
    case $1 in
        -o) _tensorfs_complete_mount_option "$cur" ;;
        --cache-dir | --state-dir | --local-root) _filedir -d ;;
        --dtype) _tensorfs_matching "" "$cur" keep bf16 f16 f32 ;;
        --names) _tensorfs_matching "" "$cur" same gguf auto ;;
    esac # the others take sizes, counts, globs or durations: nothing to offer
    return 0
}

_tensorfs()
{
    local cur prev words cword
    _init_completion -n =: || return

    # The command: the first word after tensorfs that is not an option.
    local command="" command_at=0 i
    for ((i = 1; i < cword; i++)); do
        if [[ ${words[i]} != -* ]]; then
            command=${words[i]}
            command_at=$i
            break
        fi
    done

    if _tensorfs_complete_value "$prev"; then
        _tensorfs_ltrim_wordbreaks "$cur"
        return
    fi

    if [[ -z $command ]]; then
        if [[ $cur == -* ]]; then
            _tensorfs_matching "" "$cur" --help --version
        else
            _tensorfs_matching "" "$cur" $_tensorfs_commands
            # `tensorfs SOURCE MOUNTPOINT`, the form mount(8) uses.
            [[ ${#COMPREPLY[@]} -eq 0 ]] && _filedir
        fi
        _tensorfs_ltrim_wordbreaks "$cur"
        return
    fi

    # The words after the command that are neither options nor their values, and the --model, --cache-dir,
    # --disk-cache-size and --timeout given (for `ls` to read the source's header the way the command will).
    local positional=() source_flags=()
    for ((i = command_at + 1; i < cword; i++)); do
        if _tensorfs_takes_value "${words[i]}"; then
            [[ ${words[i]} == --model || ${words[i]} == --cache-dir || ${words[i]} == --disk-cache-size ||
                ${words[i]} == --timeout ]] &&
                source_flags+=("${words[i]}" "${words[i + 1]}")
            ((i++))
        elif [[ ${words[i]} != -* ]]; then
            positional+=("${words[i]}")
        fi
    done

    local source_options="--model --cache-dir --disk-cache-size --timeout -o --help"
    local mount_options="-f -d -s --cache-size --threads --secrets-fd $source_options"
    local options argument=file
    case $command in
        mount)
            options=$mount_options
            [[ ${#positional[@]} -ge 1 ]] && argument=dir
            ;;
        umount | unmount) options="--help" argument=mountpoint ;;
        stats) options="--json --prometheus --help" argument=mountpoint ;;
        ls) options="--json --files $source_options" ;;
        info | validate) options="--json $source_options" ;;
        cat)
            options="--f32 --npy --raw --bf16 --f16 $source_options"
            [[ ${#positional[@]} -ge 1 ]] && argument=tensor
            ;;
        convert) options="--dtype --force $source_options" ;;
        diff) options="--tensors --names --json --csv --quiet $source_options" ;;
        prefetch) options="--tensors --files --quiet --verify $source_options" ;;
        status) options="--json --help" argument=none ;;
        csi) options="--endpoint --node-id --state-dir --cache-dir --disk-cache-size --local-root --help" argument=none ;;
        cache)
            options="--cache-dir --help" argument=none
            if [[ ${#positional[@]} -eq 0 ]]; then
                argument=cache
            elif [[ ${positional[0]} == prune ]]; then
                options="--older-than --max-size --cache-dir --help"
            fi
            ;;
        help)
            options="" argument=none
            [[ ${#positional[@]} -eq 0 ]] && argument=command
            ;;
        *) options=$mount_options argument=dir ;; # `tensorfs SOURCE MOUNTPOINT`
    esac

    if [[ $cur == -* ]]; then
        _tensorfs_matching "" "$cur" $options
    else
        case $argument in
            file) _filedir ;;
            dir) _filedir -d ;;
            mountpoint)
                local mountpoints
                mapfile -t mountpoints < <(_tensorfs_mountpoints)
                _tensorfs_matching "" "$cur" "${mountpoints[@]}"
                [[ ${#COMPREPLY[@]} -eq 0 ]] && _filedir -d
                ;;
            tensor)
                if [[ ${#positional[@]} -eq 1 ]]; then
                    local program=${words[0]} source=${positional[0]} names name
                    __expand_tilde_by_ref program
                    __expand_tilde_by_ref source
                    mapfile -t names < <(_tensorfs_tensor_names "$program" "$source" "${source_flags[@]}")
                    for name in "${names[@]}"; do
                        [[ $name == "$cur"* ]] && COMPREPLY+=("$(printf '%q' "$name")")
                    done
                fi
                ;;
            cache) _tensorfs_matching "" "$cur" ls du prune clear ;;
            command) _tensorfs_matching "" "$cur" $_tensorfs_commands ;;
        esac
    fi
    _tensorfs_ltrim_wordbreaks "$cur"
} &&
    complete -F _tensorfs tensorfs

# ex: filetype=sh
