"""DirectML's operators, one module each; importing this package registers them all.

Tools never import an operator module: they ask `dml_jax._src.registry`, which
imports this package once.
"""

from dml_jax._src.ops import arg_min_max as arg_min_max
from dml_jax._src.ops import cast as cast
from dml_jax._src.ops import cumulative as cumulative
from dml_jax._src.ops import depth_space as depth_space
from dml_jax._src.ops import diagonal_matrix as diagonal_matrix
from dml_jax._src.ops import element_wise_identity as element_wise_identity
from dml_jax._src.ops import element_wise_if as element_wise_if
from dml_jax._src.ops import fill_value as fill_value
from dml_jax._src.ops import gather as gather
from dml_jax._src.ops import gather_elements as gather_elements
from dml_jax._src.ops import gather_nd as gather_nd
from dml_jax._src.ops import join as join
from dml_jax._src.ops import nonzero_coordinates as nonzero_coordinates
from dml_jax._src.ops import one_hot as one_hot
from dml_jax._src.ops import padding as padding
from dml_jax._src.ops import reverse_subsequences as reverse_subsequences
from dml_jax._src.ops import scatter_elements as scatter_elements
from dml_jax._src.ops import scatter_nd as scatter_nd
from dml_jax._src.ops import slice as slice
from dml_jax._src.ops import slice_grad as slice_grad
from dml_jax._src.ops import split as split
from dml_jax._src.ops import tile as tile
from dml_jax._src.ops import top_k as top_k
