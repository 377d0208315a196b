"""`kernels.forms`, the one place that chooses: the kernel tables and the order of the gates."""

from __future__ import annotations

import importlib

import jax
import numpy as np
import pytest

from dml_jax._src import buffers, placement
from dml_jax._src.kernels import forms, native_cpu
from dml_jax._src.kernels.partitioning import Roles
from dml_jax._src.ops import (
  depth_space,
  gather_elements,
  gather_nd,
  join,
  one_hot,
  reverse_subsequences,
  scatter_elements,
  scatter_nd,
  split,
  tile,
  top_k,
)
from dml_jax._src.ops import slice as slice_op

TABLES = {
  "GATHER_ELEMENTS": gather_elements.KERNELS,
  "GATHER_ND": gather_nd.KERNELS,
  "JOIN": join.KERNELS,
  "ONE_HOT": one_hot.KERNELS,
  "REVERSE_SUBSEQUENCES": reverse_subsequences.KERNELS,
  "SCATTER_ELEMENTS": scatter_elements.KERNELS,
  "SCATTER_ND": scatter_nd.KERNELS,
  "SLICE": slice_op.KERNELS,
  "SPACE_TO_DEPTH": depth_space.KERNELS,
  "SPLIT": split.KERNELS,
  "TILE": tile.KERNELS,
  "TOP_K": top_k.KERNELS,
  "transposes": buffers.TRANSPOSE_KERNELS,
}


@pytest.mark.parametrize("operator", sorted(TABLES))
def test_each_entry_names_its_kernel_module_and_platform(operator):
  for kernel in TABLES[operator]:
    module = importlib.import_module(f"dml_jax._src.kernels.{kernel.name}")
    assert kernel.platform in ("cuda", "cpu"), kernel.name
    assert kernel.name.endswith("_cpu") == (kernel.platform == "cpu"), kernel.name
    assert hasattr(module, "applies"), kernel.name
    assert (kernel.native is not None) == (kernel.platform == "cpu"), kernel.name
    if kernel.native is not None:
      assert kernel.native in native_cpu.KERNELS, kernel.name


def _entry(name, platform, asked, *, applies=True, **gates):
  """A kernel that negates, recording in `asked` which of its checks ran."""

  def check(answer):
    def ask(*args):
      asked.append(name)
      return answer

    return ask

  return forms.Kernel(
    name,
    platform,
    applies=check(applies),
    roles=lambda fields, config, x: Roles("n -> n"),
    call=lambda fields, config, interpret, x: lambda x: -x,
    **gates,
  )


def test_the_first_entry_that_applies_on_a_platform_runs():
  asked = []
  table = (
    _entry("declines", "cpu", asked, applies=False),
    _entry("first", "cpu", asked),
    _entry("second", "cpu", asked),
    _entry("gpu", "cuda", asked),
  )
  chosen = forms.chosen(table, None, np.ones(3, np.float32))
  assert sorted(chosen) == ["cpu", "cuda"]
  assert asked == ["declines", "first", "gpu"]  # a platform chosen asks no further entry
  got = forms.lower(table, None, lambda x: x, np.ones(3, np.float32))
  platform = {"gpu": "cuda"}.get(jax.default_backend(), jax.default_backend())  # lax's names
  assert np.array_equal(got, -np.ones(3) if platform in chosen else np.ones(3))


def test_none_that_applies_is_the_fallback():
  table = (_entry("declines", "cpu", [], applies=False),)
  assert forms.chosen(table, None, np.ones(2)) == {}
  assert forms.lower(table, None, lambda x: x + 1, np.ones(2, np.float32)).tolist() == [2.0, 2.0]


def test_the_gates_are_asked_in_order_the_build_last(monkeypatch):
  """The kernel's own test, then the one-device gate, then the native build (so a kernel is
  built only for a call that will run it), then the last probe; each only if all before it
  passed."""
  asked: list[str] = []
  devices = {"answer": False}

  def one_device(platform=None):
    asked.append(f"one_device {platform}")
    return devices["answer"]

  def build(name):
    asked.append(f"build {name}")
    return True

  monkeypatch.setattr(placement, "one_device", one_device)
  monkeypatch.setattr(forms, "_native_cpu", build)
  probe = lambda: asked.append("probe") or True  # noqa: E731
  gated = _entry("gated", "cpu", asked, one_device=True, native="runs.cc", probe=probe)
  assert forms.chosen((gated,), None, np.ones(2)) == {}
  assert asked == ["gated", "one_device cpu"]  # several devices: nothing built
  asked.clear()
  devices["answer"] = True
  assert list(forms.chosen((gated,), None, np.ones(2))) == ["cpu"]
  assert asked == ["gated", "one_device cpu", "build runs.cc", "probe"]
  asked.clear()
  declines = _entry("declines", "cpu", asked, applies=False, one_device=True, native="runs.cc")
  assert forms.chosen((declines,), None, np.ones(2)) == {}
  assert asked == ["declines"]
