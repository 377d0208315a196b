"""dml_jax: DirectML's data-movement operators, bit for bit, in JAX.

Examples:
  >>> import numpy as np
  >>> import dml_jax as dml
  >>> dml.join([np.ones((1, 2), np.float16), np.zeros((1, 1), np.float16)], axis=1)
  Array([[1., 1., 0.]], dtype=float16)
"""

from dml_jax import cpu as cpu
from dml_jax import device as device
from dml_jax._src.axis_direction import AxisDirection as AxisDirection
from dml_jax._src.buffers import Binding as Binding
from dml_jax._src.buffers import read_tensor as read_tensor
from dml_jax._src.buffers import write_tensor as write_tensor
from dml_jax._src.checked import DmlIndexError as DmlIndexError
from dml_jax._src.checked import checked as checked
from dml_jax._src.descriptor import OperatorDesc as OperatorDesc
from dml_jax._src.device import Runner as Runner
from dml_jax._src.device import RunRecord as RunRecord
from dml_jax._src.dispatch import descriptors_of as descriptors_of
from dml_jax._src.dtypes import DataType as DataType
from dml_jax._src.errors import DmlBindingError as DmlBindingError
from dml_jax._src.errors import DmlCommandError as DmlCommandError
from dml_jax._src.errors import DmlError as DmlError
from dml_jax._src.errors import DmlModelError as DmlModelError
from dml_jax._src.errors import DmlValidationError as DmlValidationError
from dml_jax._src.errors import UnknownOperatorError as UnknownOperatorError
from dml_jax._src.errors import Violation as Violation
from dml_jax._src.execute import CompiledOperator as CompiledOperator
from dml_jax._src.execute import compile_operator as compile_operator
from dml_jax._src.execute import execute as execute
from dml_jax._src.explain import explain as explain
from dml_jax._src.explain import explain_html as explain_html
from dml_jax._src.feature_level import FeatureLevel as FeatureLevel
from dml_jax._src.fields import DmlField as DmlField
from dml_jax._src.fields import FieldKind as FieldKind
from dml_jax._src.model import Model as Model
from dml_jax._src.model import load_model as load_model
from dml_jax._src.ops.arg_min_max import ArgMaxDesc as ArgMaxDesc
from dml_jax._src.ops.arg_min_max import ArgMinDesc as ArgMinDesc
from dml_jax._src.ops.arg_min_max import argmax as argmax
from dml_jax._src.ops.arg_min_max import argmin as argmin
from dml_jax._src.ops.cast import CastDesc as CastDesc
from dml_jax._src.ops.cast import cast as cast
from dml_jax._src.ops.cumulative import CumulativeProductDesc as CumulativeProductDesc
from dml_jax._src.ops.cumulative import CumulativeSummationDesc as CumulativeSummationDesc
from dml_jax._src.ops.cumulative import cumulative_product as cumulative_product
from dml_jax._src.ops.cumulative import cumulative_summation as cumulative_summation
from dml_jax._src.ops.depth_space import DepthSpaceOrder as DepthSpaceOrder
from dml_jax._src.ops.depth_space import DepthToSpace1Desc as DepthToSpace1Desc
from dml_jax._src.ops.depth_space import DepthToSpaceDesc as DepthToSpaceDesc
from dml_jax._src.ops.depth_space import SpaceToDepth1Desc as SpaceToDepth1Desc
from dml_jax._src.ops.depth_space import SpaceToDepthDesc as SpaceToDepthDesc
from dml_jax._src.ops.depth_space import depth_to_space as depth_to_space
from dml_jax._src.ops.depth_space import depth_to_space1 as depth_to_space1
from dml_jax._src.ops.depth_space import space_to_depth as space_to_depth
from dml_jax._src.ops.depth_space import space_to_depth1 as space_to_depth1
from dml_jax._src.ops.diagonal_matrix import DiagonalMatrix1Desc as DiagonalMatrix1Desc
from dml_jax._src.ops.diagonal_matrix import DiagonalMatrixDesc as DiagonalMatrixDesc
from dml_jax._src.ops.diagonal_matrix import diagonal_matrix as diagonal_matrix
from dml_jax._src.ops.diagonal_matrix import diagonal_matrix1 as diagonal_matrix1
from dml_jax._src.ops.element_wise_identity import (
  ElementWiseIdentityDesc as ElementWiseIdentityDesc,
)
from dml_jax._src.ops.element_wise_identity import element_wise_identity as element_wise_identity
from dml_jax._src.ops.element_wise_if import ElementWiseIfDesc as ElementWiseIfDesc
from dml_jax._src.ops.element_wise_if import element_wise_if as element_wise_if
from dml_jax._src.ops.fill_value import FillValueConstantDesc as FillValueConstantDesc
from dml_jax._src.ops.fill_value import FillValueSequenceDesc as FillValueSequenceDesc
from dml_jax._src.ops.fill_value import fill_value_constant as fill_value_constant
from dml_jax._src.ops.fill_value import fill_value_sequence as fill_value_sequence
from dml_jax._src.ops.gather import GatherDesc as GatherDesc
from dml_jax._src.ops.gather import gather as gather
from dml_jax._src.ops.gather_elements import GatherElementsDesc as GatherElementsDesc
from dml_jax._src.ops.gather_elements import gather_elements as gather_elements
from dml_jax._src.ops.gather_nd import GatherNd1Desc as GatherNd1Desc
from dml_jax._src.ops.gather_nd import GatherNdDesc as GatherNdDesc
from dml_jax._src.ops.gather_nd import gather_nd as gather_nd
from dml_jax._src.ops.join import JoinDesc as JoinDesc
from dml_jax._src.ops.join import join as join
from dml_jax._src.ops.max_unpooling import MaxUnpoolingDesc as MaxUnpoolingDesc
from dml_jax._src.ops.max_unpooling import max_unpooling as max_unpooling
from dml_jax._src.ops.nonzero_coordinates import (
  NonzeroCoordinatesDesc as NonzeroCoordinatesDesc,
)
from dml_jax._src.ops.nonzero_coordinates import nonzero_coordinates as nonzero_coordinates
from dml_jax._src.ops.one_hot import OneHotDesc as OneHotDesc
from dml_jax._src.ops.one_hot import one_hot as one_hot
from dml_jax._src.ops.padding import Padding1Desc as Padding1Desc
from dml_jax._src.ops.padding import PaddingDesc as PaddingDesc
from dml_jax._src.ops.padding import PaddingMode as PaddingMode
from dml_jax._src.ops.padding import padding as padding
from dml_jax._src.ops.padding import padding1 as padding1
from dml_jax._src.ops.resample import InterpolationMode as InterpolationMode
from dml_jax._src.ops.resample import Resample1Desc as Resample1Desc
from dml_jax._src.ops.resample import Resample2Desc as Resample2Desc
from dml_jax._src.ops.resample import ResampleDesc as ResampleDesc
from dml_jax._src.ops.resample import resample as resample
from dml_jax._src.ops.resample import resample1 as resample1
from dml_jax._src.ops.resample import resample2 as resample2
from dml_jax._src.ops.reverse_subsequences import ReverseSubsequencesDesc as ReverseSubsequencesDesc
from dml_jax._src.ops.reverse_subsequences import reverse_subsequences as reverse_subsequences
from dml_jax._src.ops.scatter_elements import ScatterDesc as ScatterDesc
from dml_jax._src.ops.scatter_elements import ScatterElementsDesc as ScatterElementsDesc
from dml_jax._src.ops.scatter_elements import scatter_elements as scatter_elements
from dml_jax._src.ops.scatter_nd import ScatterNdDesc as ScatterNdDesc
from dml_jax._src.ops.scatter_nd import scatter_nd as scatter_nd
from dml_jax._src.ops.slice import Slice1Desc as Slice1Desc
from dml_jax._src.ops.slice import SliceDesc as SliceDesc
from dml_jax._src.ops.slice import slice as slice
from dml_jax._src.ops.slice import slice1 as slice1
from dml_jax._src.ops.slice_grad import SliceGradDesc as SliceGradDesc
from dml_jax._src.ops.slice_grad import slice_grad as slice_grad
from dml_jax._src.ops.split import SplitDesc as SplitDesc
from dml_jax._src.ops.split import split as split
from dml_jax._src.ops.tile import TileDesc as TileDesc
from dml_jax._src.ops.tile import tile as tile
from dml_jax._src.ops.top_k import TopK1Desc as TopK1Desc
from dml_jax._src.ops.top_k import TopKDesc as TopKDesc
from dml_jax._src.ops.top_k import top_k as top_k
from dml_jax._src.ops.top_k import top_k1 as top_k1
from dml_jax._src.ops.unfold import UnfoldDesc as UnfoldDesc
from dml_jax._src.ops.unfold import unfold as unfold
from dml_jax._src.ops.upsample_2d import Upsample2dDesc as Upsample2dDesc
from dml_jax._src.ops.upsample_2d import upsample_2d as upsample_2d
from dml_jax._src.scale_bias import ScaleBias as ScaleBias
from dml_jax._src.size_2d import Size2D as Size2D
from dml_jax._src.tensor_desc import TensorDesc as TensorDesc
from dml_jax._src.tensor_desc import TensorFlags as TensorFlags
from dml_jax._src.tensor_desc import calc_buffer_tensor_size as calc_buffer_tensor_size

__version__ = "0.1.0"

# Every public name above, for `from dml_jax import *`, `help(dml_jax)` and the docs' API
# reference (docs/api.md lists them in this order). An operator's author adds its function(s),
# its descriptor class(es) and any enum of its fields to the first two groups;
# tests/test_public_api.py fails until every re-exported name is listed here.
__all__ = [
  # The operators: the functional API, then the descriptors (DML_*_OPERATOR_DESC) and enums
  "cast",
  "argmax",
  "argmin",
  "cumulative_product",
  "cumulative_summation",
  "depth_to_space",
  "depth_to_space1",
  "diagonal_matrix",
  "diagonal_matrix1",
  "element_wise_identity",
  "element_wise_if",
  "fill_value_constant",
  "fill_value_sequence",
  "gather",
  "gather_elements",
  "gather_nd",
  "join",
  "max_unpooling",
  "nonzero_coordinates",
  "one_hot",
  "padding",
  "padding1",
  "resample",
  "resample1",
  "resample2",
  "reverse_subsequences",
  "scatter_elements",
  "scatter_nd",
  "slice",
  "slice1",
  "slice_grad",
  "space_to_depth",
  "space_to_depth1",
  "split",
  "tile",
  "top_k",
  "top_k1",
  "unfold",
  "upsample_2d",
  "ArgMaxDesc",
  "ArgMinDesc",
  "AxisDirection",
  "CastDesc",
  "CumulativeProductDesc",
  "CumulativeSummationDesc",
  "DepthSpaceOrder",
  "DepthToSpace1Desc",
  "DepthToSpaceDesc",
  "DiagonalMatrix1Desc",
  "DiagonalMatrixDesc",
  "ElementWiseIdentityDesc",
  "ElementWiseIfDesc",
  "FillValueConstantDesc",
  "FillValueSequenceDesc",
  "GatherDesc",
  "GatherElementsDesc",
  "GatherNd1Desc",
  "GatherNdDesc",
  "InterpolationMode",
  "JoinDesc",
  "MaxUnpoolingDesc",
  "NonzeroCoordinatesDesc",
  "OneHotDesc",
  "Padding1Desc",
  "PaddingDesc",
  "PaddingMode",
  "Resample1Desc",
  "Resample2Desc",
  "ResampleDesc",
  "ReverseSubsequencesDesc",
  "ScaleBias",
  "ScatterDesc",
  "ScatterElementsDesc",
  "ScatterNdDesc",
  "Slice1Desc",
  "SliceDesc",
  "SliceGradDesc",
  "SpaceToDepth1Desc",
  "SpaceToDepthDesc",
  "SplitDesc",
  "TileDesc",
  "TopK1Desc",
  "TopKDesc",
  "UnfoldDesc",
  "Upsample2dDesc",
  "Size2D",
  # Tensors, data types, feature levels, and what every descriptor shares
  "DataType",
  "FeatureLevel",
  "TensorDesc",
  "TensorFlags",
  "calc_buffer_tensor_size",
  "OperatorDesc",
  "DmlField",
  "FieldKind",
  # Explaining and checking
  "descriptors_of",
  "explain",
  "explain_html",
  "checked",
  # Errors
  "DmlError",
  "DmlValidationError",
  "DmlIndexError",
  "UnknownOperatorError",
  "DmlBindingError",
  "DmlModelError",
  "DmlCommandError",
  "Violation",
  # Buffers and bindings: DirectML's tensor layer executed
  "Binding",
  "read_tensor",
  "write_tensor",
  "execute",
  "compile_operator",
  "CompiledOperator",
  # DirectML's model files (DxDispatch): python -m dml_jax run MODEL.json
  "load_model",
  "Model",
  # Devices
  "Runner",
  "RunRecord",
  "device",
  # The CPU allocator: an opt-in setup step (dml_jax.cpu.configure_allocator)
  "cpu",
]
