# Functions the peer set-up scripts (peers.sh, peers-node.sh, ggml.sh, convert-ref.sh) share.
# Sourced, not run: `. "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"`. Messages start with the
# name of the script that sources it; they go to stderr, since each script's stdout carries only
# the paths it prints last.

# Prints a message on stderr.
note() { echo "${0##*/}: $*" >&2; }

# Prints a message on stderr and exits with status 1.
die() { note "$@"; exit 1; }

# Reads the command line: -h or --help prints the script's header comment (lines 2 to HELP_END)
# and exits; FLAG=VAR sets the variable VAR to 1 when FLAG is given; any other argument is
# refused with the usage line USAGE.
# Usage: parse_args USAGE HELP_END [FLAG=VAR ...] -- "$@"
parse_args() {
    local usage="$1" help_end="$2" arg spec known
    local specs=()
    shift 2
    while [ "$1" != -- ]; do
        specs+=("$1")
        shift
    done
    shift
    for arg in "$@"; do
        case "$arg" in
            -h|--help)
                sed -n "2,${help_end}p" "$0" | sed 's/^# \{0,1\}//' >&2
                exit 0 ;;
        esac
        known=0
        for spec in ${specs[@]+"${specs[@]}"}; do
            if [ "$arg" = "${spec%%=*}" ]; then
                printf -v "${spec#*=}" 1
                known=1
            fi
        done
        [ "$known" = 1 ] || die "unknown argument: $arg (usage: $usage)"
    done
}

# Serialises concurrent runs with flock(1) on "PATH.lock", held until the script exits; makes
# the folder the lock file goes in. Returns 1, taking no lock, where flock is not installed.
# Usage: take_lock PATH
take_lock() {
    local parent
    parent="$(dirname -- "$1")"
    mkdir -p -- "$parent" || die "cannot create $parent"
    command -v flock >/dev/null 2>&1 || return 1
    exec 9>"$1.lock" || die "cannot open lock file $1.lock"
    flock 9 || die "cannot lock $1.lock"
}

# Makes VENV a virtual environment of BASE_PYTHON unless its python already runs. A broken venv
# is made again; a folder that is not empty and holds no venv is left alone and refused, naming
# ENV_VAR, the variable that chooses the place.
# Usage: ensure_venv VENV BASE_PYTHON ENV_VAR
ensure_venv() {
    local venv="$1" base_python="$2" env_var="$3"
    local py="$venv/bin/python"
    if [ ! -x "$py" ] || ! "$py" -c 'import sys' >/dev/null 2>&1; then
        command -v "$base_python" >/dev/null 2>&1 || die "$base_python not found"
        if [ -f "$venv/pyvenv.cfg" ]; then
            note "$venv is a broken venv; recreating it"
            rm -rf -- "$venv" || die "cannot remove broken venv $venv"
        elif [ -e "$venv" ] && [ -n "$(ls -A -- "$venv" 2>/dev/null)" ]; then
            die "$venv exists, is not empty and is not a venv; remove it or set $env_var"
        fi
        "$base_python" -m venv "$venv" \
            || die "'$base_python -m venv $venv' failed (on Debian/Ubuntu: apt-get install python3-venv)"
    fi
    [ -x "$py" ] || die "venv python $py missing after venv creation"
}

# Whether PY runs and has every NAME==VERSION of the rest installed at exactly that version
# (a local version label such as torch's +cpu aside).
# Usage: pins_installed PY PIN...
pins_installed() {
    local py="$1"
    shift
    [ -x "$py" ] || return 1
    "$py" - "$@" >/dev/null 2>&1 <<'PINS'
import sys, importlib.metadata as m
for pin in sys.argv[1:]:
    name, _, version = pin.partition("==")
    assert m.version(name).split("+")[0] == version, pin
PINS
}
