"""tools/check-layers.py, `make lint`'s import check, on a copy of the tree:
it passes on the tree as it is, and fails, naming file and line, on an
import planted against the layer order, on a circle planted between two
folders, and on a top-level module the layer order does not place."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def tree(tmp_path):
    shutil.copytree(ROOT / "src", tmp_path / "src")
    (tmp_path / "docs").mkdir()
    shutil.copy(ROOT / "docs" / "ARCHITECTURE.md", tmp_path / "docs" / "ARCHITECTURE.md")
    return tmp_path


def check(tree):
    return subprocess.run(
        [sys.executable, str(ROOT / "tools" / "check-layers.py")],
        env={**os.environ, "SSQ_CHECKOUT": str(tree)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def plant(path, line):
    """Adds `line` before the file's first `use`, returning its line number."""
    lines = path.read_text().split("\n")
    at = next(i for i, text in enumerate(lines) if text.startswith("use "))
    lines.insert(at, line)
    path.write_text("\n".join(lines))
    return at + 1


def test_the_tree_as_it_is_passes(tree):
    result = check(tree)
    assert result.returncode == 0, result.stderr
    assert "no circle" in result.stdout


def test_an_upward_import_fails_naming_file_and_line(tree):
    line = plant(tree / "src" / "queue" / "tags.rs", "use crate::node::Node;")
    result = check(tree)
    assert result.returncode == 1
    assert f"src/queue/tags.rs:{line}: queue imports src/node/mod.rs" in result.stderr


def test_an_inline_path_upward_fails_too(tree):
    path = tree / "src" / "topic" / "tags.rs"
    path.write_text(path.read_text() + "\nfn planted() -> usize { crate::http::call::is_query_get as usize }\n")
    result = check(tree)
    assert result.returncode == 1
    assert "src/topic/tags.rs:" in result.stderr and "topic imports src/http/call/mod.rs" in result.stderr


def test_a_circle_between_two_folders_fails(tree):
    plant(tree / "src" / "store" / "disk" / "lock.rs", "use crate::store::codec::DecodeError;")
    plant(tree / "src" / "store" / "codec.rs", "use crate::store::disk::lock::DirectoryLock;")
    result = check(tree)
    assert result.returncode == 1
    assert "files of different folders in a circle" in result.stderr
    assert "src/store/codec.rs -> src/store/disk/lock.rs" in result.stderr


def test_a_module_the_layers_do_not_place_fails(tree):
    (tree / "src" / "planted.rs").write_text("//! planted\n")
    result = check(tree)
    assert result.returncode == 1
    assert "src/planted is not in the ```layers block" in result.stderr
