"""Writing the cross-check pack: DxDispatch models, their inputs, dml_jax's outputs, a README.

Layout of a pack folder::

    README.md                 what to download and the PowerShell line that runs it
    manifest.json             every model: operator, kind, note, feature level, output files
    models/<case>.json        one DxDispatch model per case
    models/inputs/<case>.<input>.npy   each input tensor's buffer (exact bits: NaN payloads)
    expected/<case>.<output>.npy       what dml_jax writes for each output

A model dispatches its operator once and ends in one writeFile per output tensor,
``<case>.<output>.npy`` (relative to DxDispatch's ``--output_path``), so every file of a
returned folder is named after its model. Inputs are .npy files in DxDispatch's own
layout, so that every bit (a NaN's payload, -0.0) reaches DirectML as dml_jax saw it.

Examples:
  >>> import tempfile, pathlib
  >>> from dml_jax._src.crosscheck import pack
  >>> scratch = tempfile.TemporaryDirectory()
  >>> folder = pathlib.Path(scratch.name)
  >>> written = pack.write_pack(folder, pack.select_cases(["JOIN"]), run=False)
  >>> sorted(p.name for p in folder.iterdir())
  ['README.md', 'expected', 'manifest.json', 'models']
  >>> (folder / "models" / "join.doc-1.json").exists()
  True
  >>> scratch.cleanup()
"""

from __future__ import annotations

import json
import math
import pathlib
import re
from collections.abc import Iterable, Sequence
from typing import Any

import jax
import numpy as np

from dml_jax._src import registry
from dml_jax._src.crosscheck.cases import Case, all_cases, operator_cases
from dml_jax._src.dtypes import DataType
from dml_jax._src.errors import DmlCommandError, DmlModelError
from dml_jax._src.feature_level import NEWEST
from dml_jax._src.model import npy
from dml_jax._src.model.commands import WriteFile
from dml_jax._src.model.program import file_bytes, load_model

FORMAT = "dml_jax-crosscheck/1"
"""The manifest's format tag."""

DIRECTML_VERSION = "1.15.x"
"""The DirectML release the pack is meant for (its DxDispatch release, in the README)."""

DIRECTML_NUGET_VERSION = "1.15.1"
"""The Microsoft.AI.DirectML NuGet package the README points to: the newest 1.15 release."""

PROVENANCE_PLACEHOLDER = f"DirectML {DIRECTML_VERSION} on <GPU>, <driver>"
"""What a candidate erratum's provenance says until its sender fills it in."""

MODELS = "models"
INPUTS = "inputs"
EXPECTED = "expected"
MANIFEST = "manifest.json"
README = "README.md"


def resource_name(label: str) -> str:
  """A tensor label as a resource and file-name part: InputTensors[1] -> InputTensors1."""
  return re.sub(r"[^A-Za-z0-9_]", "", label)


def output_files(case: Case) -> list[tuple[str, str]]:
  """(output label, file name) for every output of a case: ``<case>.<output>.npy``."""
  return [
    (label, f"{case.name}.{resource_name(label)}.npy")
    for label, _, _ in case.desc.dml_outputs(inferred=True)
  ]


def _input_file(case: Case, label: str) -> str:
  return f"{INPUTS}/{case.name}.{resource_name(label)}.npy"


def _rounded(count: int) -> int:
  return (count + 3) // 4 * 4


def model_document(case: Case) -> dict[str, Any]:
  """The DxDispatch model of a case (as a dict): its inputs read from .npy files, each
  output a zero-filled buffer of its TotalTensorSizeInBytes, one dispatch, then one
  writeFile per output."""
  resources: dict[str, Any] = {}
  bindings: dict[str, Any] = {}
  for label, row, t in case.desc.dml_inputs():
    name = resource_name(label)
    resources[name] = {
      "initialValuesDataType": t.data_type.name,
      "initialValues": {"sourcePath": _input_file(case, label)},
    }
    _bind(bindings, label, row, name)
  writes = []
  for (label, row, output), (_, target) in zip(
    case.desc.dml_outputs(inferred=True), output_files(case), strict=True
  ):
    assert output is not None, f"{case.name}: {label} is not given"
    name = resource_name(label)
    element = output.data_type.size_in_bits // 8
    resources[name] = {
      "initialValuesDataType": output.data_type.name,
      "initialValues": {
        "value": 0,
        "valueCount": _rounded(output.total_tensor_size_in_bytes) // element,
      },
    }
    _bind(bindings, label, row, name)
    writes.append({"type": "writeFile", "resource": name, "targetPath": target})
  return {
    "resources": resources,
    "dispatchables": {
      "op": {"type": f"DML_OPERATOR_{case.op}", "desc": case.desc.to_dml(infer_outputs=True)}
    },
    "commands": [{"type": "dispatch", "dispatchable": "op", "bindings": bindings}, *writes],
  }


def _bind(bindings: dict[str, Any], label: str, row: str, name: str) -> None:
  if label == row:
    bindings[row] = name
  else:
    bindings.setdefault(row, []).append(name)


def model_text(case: Case) -> str:
  """The model file's text: a comment saying what the case is, then the JSON."""
  header = [
    f"// dml_jax cross-check model {case.name} ({case.kind}): DML_OPERATOR_{case.op}",
    f"// {case.note}",
    f"// from the fixture {case.source}; valid from DML_FEATURE_LEVEL_{case.feature_level}",
  ]
  return "\n".join(header) + "\n" + json.dumps(model_document(case), indent=1) + "\n"


def _npy_of(buffer: np.ndarray, data_type: DataType) -> bytes:
  if buffer.dtype != data_type.numpy_dtype:
    raise TypeError(f"a {buffer.dtype} buffer for a {data_type.name} tensor")
  data = np.ascontiguousarray(buffer).tobytes()
  return npy.npy_bytes(data, data_type, (len(buffer),))


def select_cases(operators: Iterable[str] | None = None) -> list[Case]:
  """The cases of the given operators (any registered names), or of every operator.

  Raises:
    MissingFixturesError: an operator has no doc example to build its cases from.
    UnknownOperatorError: an unknown name.
  """
  if operators is None:
    return all_cases()
  names = list(operators)
  registry.lookup_all(names)  # every unknown name at once
  found: list[Case] = []
  for name in dict.fromkeys(registry.model_file_name(n) for n in names):
    found += operator_cases(name)
  return found


def write_pack(
  folder: str | pathlib.Path,
  cases: Sequence[Case] | None = None,
  *,
  device: Any = None,
  run: bool = True,
) -> list[Case]:
  """Writes the pack of `cases` (default: every operator's, `select_cases`) into `folder`
  (made if absent): models, inputs, manifest, README,
  and dml_jax's outputs of every model, run as `python -m dml_jax run` runs it (with
  `run` False, the models only: the outputs take most of the time). Returns the cases
  written.

  Raises:
    MissingFixturesError: an operator has no doc example to build its cases from.
    DmlModelError, DmlCommandError: dml_jax cannot run a model (a bug: every case's desc
      is valid), naming the model.
  """
  root = pathlib.Path(folder)
  cases = list(select_cases() if cases is None else cases)
  models = root / MODELS
  (models / INPUTS).mkdir(parents=True, exist_ok=True)
  (root / EXPECTED).mkdir(parents=True, exist_ok=True)
  entries = []
  with jax.enable_x64(True):  # 64-bit tensors need it; the setting is restored after
    for case in cases:
      for label, buffer in case.buffers.items():
        t = _tensor_of(case, label)
        (models / _input_file(case, label)).write_bytes(_npy_of(buffer, t.data_type))
      path = models / f"{case.name}.json"
      path.write_text(model_text(case), encoding="utf-8")
      if run:
        try:
          outputs = run_model(path, device)
        except (DmlModelError, DmlCommandError) as error:
          error.add_note(f"dml_jax cannot run the cross-check model {path}")
          raise
        for name, content in outputs.items():
          (root / EXPECTED / name).write_bytes(content)
      entries.append(_entry(case))
  manifest = {
    "format": FORMAT,
    "directml": DIRECTML_VERSION,
    "feature_level": str(NEWEST),
    "models": entries,
  }
  (root / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
  (root / README).write_text(readme_text(cases), encoding="utf-8")
  return cases


def _tensor_of(case: Case, label: str) -> Any:
  for found, _, t in case.desc.dml_inputs():
    if found == label:
      return t
  raise KeyError(label)


def run_model(path: pathlib.Path, device: Any = None) -> dict[str, bytes]:
  """Runs a model file as `python -m dml_jax run` does; returns each writeFile's file
  name and bytes.

  Raises:
    DmlModelError: the model cannot run.
    DmlCommandError: a dispatch was refused.
  """
  model = load_model(path)
  result = model.execute(device)
  if result.error is not None:
    raise result.error
  files = {}
  for output in result.outputs:
    if isinstance(output.command, WriteFile):
      resource = model.resources[output.command.resource]
      files[output.command.target_path] = file_bytes(resource, output.data, output.command)
  return files


def _entry(case: Case) -> dict[str, Any]:
  return {
    "model": f"{MODELS}/{case.name}.json",
    "name": case.name,
    "op": case.op,
    "kind": case.kind,
    "note": case.note,
    "fixture": case.source,
    "feature_level": str(case.feature_level),
    "outputs": {label: name for label, name in output_files(case)},
    "elements": {
      label: math.prod(t.sizes) for label, _, t in case.desc.dml_outputs(inferred=True) if t
    },
  }


def readme_text(cases: Sequence[Case]) -> str:
  """The pack's README: what it is, what to download, the one line that runs it."""
  ops = sorted({c.op for c in cases})
  edge = sum(c.kind == "edge" for c in cases)
  return f"""# dml_jax cross-check pack

{len(cases)} DxDispatch models ({len(cases) - edge} documented examples, {edge} edge cases) of
{len(ops)} DirectML operators. Each model runs one operator once and writes each of its
outputs to a `.npy` file named after the model. Running them on a Windows machine with a
DirectX 12 GPU, and sending back the folder of outputs, tells dml_jax's developers where
DirectML's results differ from dml_jax's.

## What you need

- Windows 10 (1909 or newer) or 11, x64, with a DirectX 12 GPU and its current driver.
- DxDispatch, DirectML's command-line runner: the newest DxDispatch release on
  <https://github.com/microsoft/DirectML/releases>. Unzip it; its folder holds
  `dxdispatch.exe` and the `DirectML.dll` it runs.
- DirectML {DIRECTML_VERSION}: if the release carries another DirectML (the DLL's Properties >
  Details give its version), download the NuGet package Microsoft.AI.DirectML
  {DIRECTML_NUGET_VERSION} (<https://www.nuget.org/packages/Microsoft.AI.DirectML>),
  open it as a zip file (rename `.nupkg` to `.zip`), and copy its `bin\\x64-win\\DirectML.dll`
  over the one beside `dxdispatch.exe`.

## Run it

Open PowerShell in this folder, set `$dx` to your `dxdispatch.exe`, and run this one line:

```powershell
$dx = "C:\\path\\to\\dxdispatch.exe"; New-Item -ItemType Directory -Force results | Out-Null; Get-CimInstance Win32_VideoController | Format-List Name, DriverVersion | Out-File results\\system.txt; (Get-Item (Join-Path (Split-Path $dx) DirectML.dll)).VersionInfo | Format-List FileVersion | Out-File -Append results\\system.txt; Get-ChildItem models\\*.json | ForEach-Object {{ & $dx $_.FullName --output_path results *>> results\\log.txt }}; Compress-Archive -Force results results.zip
```

It writes every model's outputs into `results\\`, with `system.txt` (the GPU, its driver and
DirectML's version) and `log.txt` (what DxDispatch printed). A model DirectML refuses writes
nothing and the others go on. Send back `results.zip`.

## What happens next

`python -m dml_jax crosscheck-compare PACK RESULTS` compares each returned file with
`expected\\` (dml_jax's outputs, in this folder), prints equal / different / missing per model
and output and a summary per operator, and writes each model with a difference as a
candidate fixture (`candidate_errata.json`, provenance "{PROVENANCE_PLACEHOLDER}", to fill
in from `system.txt`).

`manifest.json` lists every model: its operator, whether it is a documented example or an
edge case, what it checks, and the lowest DirectML feature level that accepts it.
"""
