"""Tools that read a stack (smoke, serve-local, verify, capacity calibrate) find its project from the current
directory, then from the checkout they run from; an installed wheel has no Pulumi.yaml beside its modules
and never looks in site-packages for one."""

from __future__ import annotations

import pytest

from inference_platform.errors import CommandError
from inference_platform.settings import stack_files
from tests.runtime_imports import REPO


def test_the_nearest_project_upwards_from_the_current_directory(tmp_path, monkeypatch):
    (tmp_path / "Pulumi.yaml").write_text("name: team\nruntime: python\n")
    (tmp_path / "app" / "deep").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "app" / "deep")
    assert stack_files.project_dir() == tmp_path


def test_else_the_checkout_it_runs_from(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert stack_files.project_dir() == REPO
    assert stack_files.load("dev").serving is not None


def test_neither_is_exit_2_in_one_sentence(tmp_path, monkeypatch):
    """As from a wheel: the module's own folder (site-packages/inference_platform) holds no Pulumi.yaml."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(stack_files, "REPO_ROOT", tmp_path / "site-packages" / "inference_platform")
    with pytest.raises(CommandError) as err:
        stack_files.load("dev")
    assert err.value.exit_code == 2
    assert str(err.value).startswith(f"no Pulumi.yaml in {tmp_path} or above it: run inferctl from the project's")
