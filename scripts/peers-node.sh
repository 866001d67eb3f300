#!/usr/bin/env bash
# Create or reuse the npm install of the JavaScript GGUF reader
# `@huggingface/gguf` (pinned to 0.4.6, its one dependency `@huggingface/tasks`
# pinned to 0.21.54, both by version and by the integrity hash npm checks) used
# by the read-only peer adapter conform/peers/hf_gguf_peer.mjs.
#
# Usage: scripts/peers-node.sh
#
# Environment:
#   GGUFRW_PEERS_NODE_DIR  install directory (holds package.json,
#                          package-lock.json, node_modules/)
#                          (default: $HOME/.cache/ggufrw/peers-hf-gguf-0.4.6)
#   NODE                   node binary (default: node; needs Node.js >= 20)
#   NPM                    npm binary (default: npm)
#
# Output: one line on stdout, two absolute paths separated by one space: the
# node binary and the install directory. Run the adapter with them:
#
#   read -r NODE DIR <<<"$(scripts/peers-node.sh)"
#   "$NODE" conform/peers/hf_gguf_peer.mjs --modules "$DIR" --serve
#
# Everything else (npm output, errors) goes to stderr; non-zero exit on
# failure. npm runs only when the pinned packages are missing; concurrent runs
# are serialised with flock(1) on "$GGUFRW_PEERS_NODE_DIR.lock".
set -euo pipefail

HF_GGUF_VERSION="0.4.6"
HF_GGUF_INTEGRITY="sha512-+S4ysHzzNN77rU0gBcuuGN+x1TYNP4M7EgOEZ2rKaTz8dZ8o2N92qapQaeTjnPPNiWSc23iCV9E8u2A9VvK+rg=="
HF_TASKS_VERSION="0.21.54"
HF_TASKS_INTEGRITY="sha512-OVFpVlLV6SSjG67Vdo98+qLvs/5yki0Ni1EWzbLrlBfZ+N6t4kM6aAeJLkFhikYYOZQyVNcWUN8UtPTs3Km05g=="

. "$(dirname -- "${BASH_SOURCE[0]}")/lib.sh"
parse_args "scripts/peers-node.sh" 26 -- "$@"

dir="${GGUFRW_PEERS_NODE_DIR:-${HOME:?HOME is not set}/.cache/ggufrw/peers-hf-gguf-${HF_GGUF_VERSION}}"
case "$dir" in /*) ;; *) dir="$PWD/$dir" ;; esac
case "$dir" in *[[:space:]]*) die "the install directory must not contain whitespace: '$dir'" ;; esac

# stdout is reserved for the final line: send everything else to stderr.
exec 3>&1 1>&2

node_bin="${NODE:-node}"
npm_bin="${NPM:-npm}"
node_path="$(command -v -- "$node_bin" 2>/dev/null)" \
    || die "node not found ('$node_bin'); install Node.js >= 20 (Debian: apt-get install nodejs npm) or set NODE"
case "$node_path" in /*) ;; *) die "cannot resolve node to an absolute path: $node_path" ;; esac
case "$node_path" in *[[:space:]]*) die "the node path must not contain whitespace: '$node_path'" ;; esac
# one node run: its major version and the installed versions of both packages
probe() {
    "$node_path" -e '
        const fs = require("fs");
        const v = (p) => { try { return JSON.parse(fs.readFileSync(p, "utf8")).version; } catch { return "-"; } };
        const d = process.argv[1] + "/node_modules/@huggingface/";
        console.log(process.versions.node.split(".")[0], v(d + "gguf/package.json"), v(d + "tasks/package.json"));
    ' "$dir" 2>/dev/null
}
state="$(probe)" || die "$node_path does not run"
read -r node_major have_gguf have_tasks <<<"$state"
[ "$node_major" -ge 20 ] 2>/dev/null \
    || die "$node_path is Node.js $("$node_path" --version); @huggingface/gguf $HF_GGUF_VERSION needs >= 20"

pin_id="$HF_GGUF_VERSION $HF_GGUF_INTEGRITY $HF_TASKS_VERSION $HF_TASKS_INTEGRITY"
ready() {
    [ "$(cat -- "$dir/.stamp" 2>/dev/null)" = "$pin_id" ] \
        && [ "$have_gguf" = "$HF_GGUF_VERSION" ] && [ "$have_tasks" = "$HF_TASKS_VERSION" ]
}

write_pins() {
    # package.json: exact versions (the override pins the dependency's range
    # ^0.21.33 to one version); package-lock.json: the same versions with the
    # integrity hashes npm verifies the downloaded tarballs against
    cat >"$dir/package.json" <<EOF
{
  "name": "ggufrw-peer-hf-gguf",
  "private": true,
  "description": "installed by ggufrw's scripts/peers-node.sh",
  "dependencies": { "@huggingface/gguf": "$HF_GGUF_VERSION" },
  "overrides": { "@huggingface/tasks": "$HF_TASKS_VERSION" }
}
EOF
    cat >"$dir/package-lock.json" <<EOF
{
  "name": "ggufrw-peer-hf-gguf",
  "lockfileVersion": 3,
  "requires": true,
  "packages": {
    "": {
      "name": "ggufrw-peer-hf-gguf",
      "dependencies": { "@huggingface/gguf": "$HF_GGUF_VERSION" }
    },
    "node_modules/@huggingface/gguf": {
      "version": "$HF_GGUF_VERSION",
      "integrity": "$HF_GGUF_INTEGRITY",
      "license": "MIT",
      "dependencies": { "@huggingface/tasks": "^0.21.33" },
      "bin": { "gguf-view": "dist/cli.js" },
      "engines": { "node": ">=20" }
    },
    "node_modules/@huggingface/tasks": {
      "version": "$HF_TASKS_VERSION",
      "integrity": "$HF_TASKS_INTEGRITY",
      "license": "MIT"
    }
  }
}
EOF
}

if ! ready; then
    command -v -- "$npm_bin" >/dev/null 2>&1 \
        || die "npm not found ('$npm_bin'); install it (Debian: apt-get install npm) or set NPM"
    mkdir -p -- "$dir" || die "cannot create $dir"
    take_lock "$dir" || true
    # re-check: another run may have finished the job while we waited
    read -r node_major have_gguf have_tasks <<<"$(probe)"
    if ! ready; then
        rm -f -- "$dir/.stamp"
        write_pins
        note "npm install @huggingface/gguf@$HF_GGUF_VERSION into $dir"
        (cd -- "$dir" && "$npm_bin" install --no-audit --no-fund --ignore-scripts) \
            || die "npm install in $dir failed"
        # npm must have kept the pinned lock (it refuses tarballs whose hash differs)
        for want in "$HF_GGUF_INTEGRITY" "$HF_TASKS_INTEGRITY"; do
            grep -qF -- "\"integrity\": \"$want\"" "$dir/package-lock.json" \
                || die "npm changed the pinned package-lock.json in $dir (integrity $want missing)"
        done
        read -r node_major have_gguf have_tasks <<<"$(probe)"
        [ "$have_gguf" = "$HF_GGUF_VERSION" ] \
            || die "@huggingface/gguf $HF_GGUF_VERSION not installed in $dir/node_modules after npm install (found $have_gguf)"
        [ "$have_tasks" = "$HF_TASKS_VERSION" ] \
            || die "@huggingface/tasks $HF_TASKS_VERSION not installed in $dir/node_modules after npm install (found $have_tasks)"
        echo "$pin_id" >"$dir/.stamp"
    fi
fi

echo "$node_path $dir" >&3
