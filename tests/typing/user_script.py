"""A user's script: the README's typical calls, as a type checker sees them from outside.

`.ci/run` runs mypy on this script copied out of the checkout, where only the editable install
makes dml_jax visible (at zero findings), so the public signatures must accept what the README
passes (strings, lists, dtypes, NumPy arrays) and return what it reads, with the attributes'
canonical types pinned by `assert_type`; tests/typing/test_typing.py runs it.
"""

from typing import assert_type

import jax
import jax.numpy as jnp
import numpy as np

import dml_jax as dml


def functional_api() -> None:
  x = np.arange(1, 10, dtype=np.float32).reshape(3, 3)
  indices = np.array([[1, 2, 0], [2, 0, 0]], np.uint32)
  assert_type(dml.gather_elements(x, indices, axis=0), jax.Array)
  dml.gather_elements(jnp.asarray(x), indices, axis=0, feature_level="3_0")
  dml.gather_nd(x, np.array([[1], [0]], np.uint32), feature_level=dml.FeatureLevel.FL_4_1)
  dml.gather_nd(
    x.reshape(1, 3, 3),
    np.array([[[0, 1]]], np.int32),
    input_dimension_count=None,
    indices_dimension_count=None,
    batch_dimension_count=1,
    feature_level=None,
  )
  assert_type(dml.gather(x, np.array([[2, 0]], np.int32), axis=1, index_dimensions=1), jax.Array)
  dml.gather(x, np.array([[0]], np.uint32), axis=0, index_dimensions=0, feature_level="3_0")
  dml.reverse_subsequences(x, np.array([[3], [1], [2]], np.uint32), axis=1, feature_level=0x6400)
  joined = dml.join([x, x], axis=0)
  assert_type(joined, jax.Array)
  dml.join((x, jnp.ones((3, 1), jnp.float32)), axis=1)
  assert_type(dml.tile(x, repeats=[2, 1], feature_level="4_1"), jax.Array)
  image = np.arange(16, dtype=np.float32).reshape(1, 4, 2, 2)
  assert_type(dml.depth_to_space(image, block_size=2), jax.Array)
  dml.depth_to_space1(image, block_size=2, order=dml.DepthSpaceOrder.COLUMN_ROW_DEPTH)
  dml.space_to_depth(image, block_size=2, feature_level="2_1")
  dml.space_to_depth1(image, block_size=1, order="DML_DEPTH_SPACE_ORDER_DEPTH_COLUMN_ROW")
  labels = np.array([[0], [3], [-1]], np.int32)
  assert_type(dml.one_hot(labels, np.array([[0, 1]], np.float32), axis=1, depth=4), jax.Array)
  dml.one_hot(jnp.asarray(labels), jnp.ones((1, 3), jnp.int8), axis=1, depth=2, feature_level="3_0")
  rows = np.array([[1, 0, 2], [0, 2, 1]], np.uint32)
  assert_type(dml.scatter_elements(x, rows, x[:2], axis=0), jax.Array)
  dml.scatter_elements(jnp.asarray(x), rows.astype(np.int32), x[:2], axis=0, feature_level="3_0")
  assert_type(
    dml.scatter_nd(x, np.array([[2], [0]], np.int32), x[:2], feature_level=dml.FeatureLevel.FL_4_1),
    jax.Array,
  )
  dml.scatter_nd(
    x.reshape(1, 3, 3),
    np.array([[[0, 1]]], np.uint32),
    np.ones((1, 1, 1), np.float32),
    input_dimension_count=2,
    indices_dimension_count=None,
    feature_level=None,
  )


def descriptor_layer() -> None:
  data = dml.TensorDesc("FLOAT32", (3, 3))
  half = dml.TensorDesc("FLOAT16", [2, 3])
  dml.TensorDesc(np.float32, (3,))
  dml.TensorDesc(np.dtype(np.int8), np.arange(1, 3).shape, strides=[1, 1])
  dml.TensorDesc(dml.DataType.UINT32, (4,), flags=dml.TensorFlags.OWNED_BY_DML)
  assert_type(half.data_type, dml.DataType)
  assert_type(half.sizes, tuple[int, ...])
  assert_type(half.strides, tuple[int, ...] | None)
  assert_type(half.total_tensor_size_in_bytes, int)
  assert dml.calc_buffer_tensor_size("FLOAT16", [3]) == 8

  indices = dml.TensorDesc("UINT32", (2, 3))
  gather = dml.GatherElementsDesc(data, indices, axis=0)
  assert_type(gather.axis, int)
  assert_type(gather.output, dml.TensorDesc)
  assert_type(gather.validate("3_0"), dml.GatherElementsDesc)
  assert gather.is_valid() and not gather.violations(dml.FeatureLevel.from_any("4_1"))

  join = dml.JoinDesc([data, data], axis=0)
  assert_type(join.input_tensors, tuple[dml.TensorDesc, ...])
  assert_type(join.input_count, int)
  assert_type(join.outputs, tuple[dml.TensorDesc, ...])
  assert dict(join.dml_attributes()) == {"Axis": 0, "InputCount": 2}
  again = dml.GatherElementsDesc.from_dml(
    {
      "InputTensor": {"DataType": "FLOAT32", "Sizes": [3, 3]},
      "IndicesTensor": {"DataType": "UINT32", "Sizes": [2, 3]},
      "Axis": 0,
    }
  )
  assert_type(again, dml.GatherElementsDesc)
  assert again == gather
  dml.JoinDesc((data,), axis=np.int64(1), output_tensor=data, input_count=1)

  nd = dml.GatherNdDesc(
    dml.TensorDesc("FLOAT32", (3, 4, 5, 6, 7)),
    dml.TensorDesc("UINT32", (1, 1, 1, 2, 3)),
    input_dimension_count=5,
    indices_dimension_count=3,
  )
  take = dml.GatherDesc(
    dml.TensorDesc("FLOAT32", (1, 3, 2)), dml.TensorDesc("INT64", (1, 2, 2)), 1, np.int64(2)
  )
  assert_type(take.index_dimensions, int)
  assert_type(take.validate("4_1"), dml.GatherDesc)
  assert take.output.sizes == (2, 2, 2)
  dml.GatherDesc(data, indices, axis=0, index_dimensions=None, output_tensor=None)
  assert_type(nd.input_dimension_count, int)
  print(dml.explain(nd))
  tile = dml.TileDesc(data, repeats=[1, 2])
  assert_type(tile.repeats, tuple[int, ...])
  assert_type(tile.repeats_count, int)
  shuffle = dml.DepthToSpace1Desc(
    dml.TensorDesc("FLOAT32", (1, 8, 2, 3)), block_size=2, order="COLUMN_ROW_DEPTH"
  )
  assert_type(shuffle.order, dml.DepthSpaceOrder)
  assert_type(shuffle.block_size, int)
  dml.SpaceToDepthDesc(dml.TensorDesc("UINT8", (1, 1, 4, 4)), np.int64(2))
  assert "4_1" in dml.explain(nd, feature_level="4_1") and dml.explain_html(nd, "6_4").text
  assert not nd.violations("4_1") and nd.html("2_1").markup
  dml.GatherNd1Desc(
    dml.TensorDesc("FLOAT32", (2, 2, 2)),
    dml.TensorDesc("UINT32", (2, 1, 1)),
    batch_dimension_count=1,
  )
  hot = dml.OneHotDesc(
    dml.TensorDesc("UINT32", (3, 1)),
    dml.TensorDesc("FLOAT16", (1, 2)),
    dml.TensorDesc("FLOAT16", (3, 5)),
    axis=1,
  )
  assert_type(hot.output_tensor, dml.TensorDesc)
  assert_type(hot.axis, int)
  assert_type(hot.depth, int | None)
  assert hot.depth == 5 and hot.output == dml.TensorDesc("FLOAT16", (3, 5))
  reverse = dml.ReverseSubsequencesDesc(
    dml.TensorDesc("FLOAT32", (1, 1, 3, 4)), dml.TensorDesc("UINT32", (1, 1, 3, 1)), axis=3
  )
  assert str(reverse).endswith("-> FLOAT32[1,1,3,4]")
  scatter = dml.ScatterElementsDesc(data, indices, dml.TensorDesc("FLOAT32", (2, 3)), axis=0)
  assert_type(scatter.axis, int)
  assert_type(scatter.output, dml.TensorDesc)
  assert dml.ScatterDesc(data, indices, dml.TensorDesc("FLOAT32", (2, 3)), axis=0) == scatter
  scatter_nd = dml.ScatterNdDesc(
    dml.TensorDesc("FLOAT32", (1, 8)),
    dml.TensorDesc("UINT32", (4, 1)),
    dml.TensorDesc("FLOAT32", (1, 4)),
    input_dimension_count=1,
  )
  assert_type(scatter_nd.indices_dimension_count, int)
  assert_type(scatter_nd.validate("3_0"), dml.ScatterNdDesc)
  try:
    dml.GatherElementsDesc(dml.TensorDesc("FLOAT32", (3, 3, 3, 3)), indices, axis=4).validate("2_1")
  except dml.DmlValidationError as error:
    assert_type(error.violations, tuple[dml.Violation, ...])
    assert error.table().text


def device_layer() -> None:
  x = np.arange(1, 10, dtype=np.float32).reshape(3, 3)
  indices = np.array([[1, 2, 0], [2, 0, 0]], np.uint32)
  desc = dml.GatherElementsDesc(dml.TensorDesc.like(x), dml.TensorDesc.like(indices), axis=0)
  runner = dml.Runner(feature_level="4_1")
  record = runner.run(desc, x, indices, device=None)
  record = runner.run(desc, x, indices, device=dml.device.available_devices("cpu")[0])
  assert_type(record.device, jax.Device)
  assert_type(record.compiled, bool)
  assert_type(record.seconds, float)
  assert np.array_equal(record.output, [[4, 8, 3], [7, 2, 3]])
  row = dml.TensorDesc("FLOAT32", (3, 4), strides=(0, 1))
  identity = dml.ElementWiseIdentityDesc(row, dml.TensorDesc("FLOAT32", (3, 4)))
  bound = runner.execute(
    identity, [dml.Binding(x.ravel())], [dml.Binding(np.zeros(12, np.float32))], device="cpu"
  )
  assert_type(bound, dml.RunRecord)
  assert_type(bound.outputs, tuple[jax.Array, ...])
  assert np.array_equal(bound.output, np.tile(x.ravel()[:4], 3))
  print(runner.report())

  f = jax.jit(lambda x, i: dml.gather_elements(x, i, axis=0))
  dml.checked(f)(x, indices)
  scatter = jax.jit(lambda x, i, u: dml.scatter_elements(x, i, u, axis=0))
  dml.checked(scatter)(x, np.array([[1, 0, 2], [0, 2, 1]], np.uint32), x[:2])


def main() -> None:
  functional_api()
  descriptor_layer()
  device_layer()


if __name__ == "__main__":
  main()
